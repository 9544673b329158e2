// Package bench measures StateLab against bare baselines in one process: the
// figures behind `statelab bench` and the "statelab bench" section of
// docs/benchmarks.md. Every figure is a ratio to a baseline measured in the
// same run, because absolute rates on a shared machine do not travel.
//
// Main types and functions:
//
//   - Workload: the seeded keyed-count input (words from a skewed
//     vocabulary) every case and every peer counts; Count is its ground
//     truth and DiffCounts compares a result with it.
//   - The systems timed: RunEngineWordCount (the engine's word count on the
//     Live driver), CountWithValueState (one keyed backend), CheckpointBench
//     (full against incremental Pebble checkpoints), RescaleBench (key
//     groups against hash % parallelism on the same Pebble data, both
//     writing each new subtask's keys in key order into one SST file that
//     is ingested), and the
//     WebSocket fan-out (FanOutFunc; web.MeasureFanOut times StateLab's
//     own web server).
//   - Their baselines: RunBarePipeline, RunBareWordCount, CountWithBareMap,
//     CountWithBarePebble, CountWithBarePebbleParallel, BareHubFanOut.
//   - The growth group (GroupGrowth): the engine's word count at each
//     parallelism against p = 1, its time against the number of records
//     (log-log slopes as scaling cases) and heap-backend bytes per key
//     against a bare map[string]int64.
//   - Run: every case of a Config, interleaved rounds, a Report of Cases
//     (value, baseline, ratio, target, samples); WriteTable, WriteJSON and
//     WriteOutputs (bench.json plus hand-written SVG charts; the ratio
//     chart draws each ratio beside the previous run's, Report.Previous)
//     render it;
//     MergePeers adds the peers module's figures (bench/peers, its own
//     go.mod, so go-streams and goka never enter StateLab's dependencies).
//
// Contract of a case (Run follows it; a new case should too):
//
//  1. Build the input from the seed; compute the expected result without
//     the code under test.
//  2. Run the system once and check its output against the expectation; a
//     wrong output is an error, never a figure.
//  3. Time the system and its baseline alternately for Rounds rounds
//     (Interleave), so load from other processes falls on both alike, and
//     report medians and their ratio. A timed window starts on a settled
//     heap (settle: runtime.GC), so no trial pays for garbage another left.
//  4. Remove every file and stop every goroutine the case started.
package bench
