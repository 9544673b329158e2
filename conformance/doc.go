// Package conformance runs the same jobs with the same faults on StateLab's
// engine and on a real Apache Flink MiniCluster (flinkref/, a Maven module)
// and compares what both did, field by field, where StateLab claims to do
// what Flink does.
//
// The package has only tests. `go test ./conformance/...` skips them with a
// message when java or mvn is missing; with FLINK=1 (as CI runs them) a
// missing tool fails instead. The tests build flinkref with Maven (Flink's
// jars come from Maven Central once and stay in ~/.m2), write every
// scenario's job spec and input records to a batch file, run the whole batch
// in one JVM (one MiniCluster per cluster shape, not per scenario), and read
// one JSON trace per scenario: job and task status transitions, restarts and
// the subtasks restarted, checkpoints completed and failed, each keyed
// subtask's key-group range and the keys it restored, the operator-state
// elements each subtask restored, and the sink's committed output.
//
// # The catalogue
//
// catalogue_test.go lists the scenarios (docs/conformance.md is the same
// table for readers). Each says what StateLab claims and how it
// is decided. A scenario marked Pending is one StateLab does not yet follow
// (the reason, and the issue that will make it follow, are in the marker):
// its test still runs Flink and records what Flink did in the test log, and
// compares StateLab's side where the engine can already run it, reporting
// differences without failing. When a pending scenario starts to agree, the
// test says so, and the marker should go.
//
// Both sides read the same records: the test generates lines from a fixed
// seed, gives them to StateLab's source (options.lines, dealt round-robin
// over the partitions; later phases append them with the inject command) and
// writes the same records per partition, in offset order, to the input file
// flinkref's source reads.
//
// Environment:
//
//	FLINK=1               the tests are required: a missing java or mvn fails them
//	FLINKREF_PROFILE=...  a Maven profile for flinkref (flink-1.20 runs Flink 1.20.5 LTS)
//	FLINKREF_KEEP=DIR     keep the batch, input files and traces in DIR
package conformance
