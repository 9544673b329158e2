// Package bench measures StateLab against bare baselines in one process, the
// figures behind `statelab bench` and docs/benchmarks.md.
package bench
