// Package attach is StateLab's attach mode: a read-only client of a real
// Flink JobManager's REST API (v1) that shows a real job with the same views
// and the same Flink-exact math as the mini engine: the job graph, each keyed
// vertex's key-group ranges, what a rescale to N would move, which subtask
// holds a key, and the checkpoint history.
//
// # Where it sits
//
// attach imports only rescale and the standard library, and sits beside
// rescale at the bottom of the package order (rescale <- attach, used by web
// and cmd). With a real cluster, Flink itself is the engine: attach needs
// none of state, engine or lessons, only the key-group arithmetic. Keeping it
// there lets both `statelab attach` (cmd) and the attach page (web) use it
// without either pulling the other in, and keeps HTTP out of the engine.
// It only ever sends GET requests.
//
// # What it reads
//
//   - GET /jobs: the job IDs and states.
//   - GET /jobs/{jobid}: name, state and vertices with parallelism and
//     maxParallelism. Flink reports a vertex's maxParallelism (here and in
//     GET /jobs/{jobid}/vertices/{vertexid}) only since 1.13; the plan never
//     carries it.
//   - GET /jobs/{jobid}/plan: nodes with their inputs; an input whose
//     ship_strategy is HASH (keyBy) makes its vertex keyed.
//   - GET /jobs/{jobid}/checkpoints: counts, history with sizes and
//     durations, latest completed / savepoint / failed / restored. A 404
//     "Checkpointing has not been enabled." means just that.
//   - GET /jobs/{jobid}/vertices/{vertexid}: only for a keyed vertex whose
//     maxParallelism GET /jobs/{jobid} lacks.
//
// # Main types
//
//   - Client: base URL, an http.Client with timeouts, context-aware calls,
//     one method per endpoint and Snapshot to read everything.
//   - Snapshot, Job, Vertex, Edge, Checkpoints: the view model. Vertex has
//     KeyGroups from rescale.KeyGroupRanges, RescalePlan (rescale.NewPlan)
//     and LocateKey (string / int / long keys).
//   - Document: the fixed JSON of `statelab attach --once --json`.
//   - Poller: snapshots at an interval, keeps the last good one and the last
//     error.
//   - Errors: ErrUnreachable, ErrNotFlink, ErrJobNotFound, ErrMissingField,
//     ErrFlink, ErrCheckpointingDisabled; all but the last have a concrete type whose
//     message says what was wrong and what to do.
//
// # Contract
//
//  1. Create a Client with NewClient(address); an address without a scheme
//     gets http://.
//  2. Call Snapshot(ctx, Options) for one reading, or start a Poller and
//     read Last and Err whenever a view is drawn; Stop it when done.
//  3. A Snapshot error (ErrUnreachable, ErrNotFlink, ErrJobNotFound for
//     Options.JobID) means nothing could be read: show it, keep the page up,
//     try again on the next poll. Everything else (a job that vanished
//     between GET /jobs and its details, a field an older Flink lacks, a
//     vertex not in the plan) is a Warning on the snapshot; the other jobs
//     are still there.
//  4. Where Flink does not report a keyed vertex's max parallelism, its
//     MaxParallelism is 0 and it has no KeyGroups unless
//     Options.MaxParallelism supplies a value (a number, or Flink's default
//     for the current parallelism, marked as an assumption in
//     MaxParallelismSource). StateLab never guesses silently: a wrong max
//     parallelism would draw wrong ranges.
package attach
