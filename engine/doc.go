// Package engine is StateLab's mini Apache Flink: a job graph of parallel
// operator subtasks placed in TaskManager slots, bounded FIFO channels of
// record batches between them (forward, rebalance, hash/keyBy by key group,
// broadcast), keyed and operator state in the state package's backends
// (memory, fs, pebble), a checkpoint coordinator with aligned barriers,
// failover with a restart strategy, and rescaling by key groups. Everything
// a learner sees is the engine really doing it.
//
// # Main types
//
//   - JobSpec (LoadSpec reads YAML or JSON): operators with kind,
//     parallelism, max parallelism (Flink's default when 0) and options;
//     edges with a partitioner; backend; checkpointing; cluster; restart
//     strategy; seed. Validate fills in defaults and says what is wrong;
//     Effective gives the restart strategy in force.
//   - Stepper: a deterministic driver. One event per Step (a batch, barrier
//     or watermark at the head of a channel, a source poll, a message between
//     JobManager and subtask, a due timer), chosen by a seeded RNG or oldest
//     first, on a virtual clock. Same spec + seed + command log = same run,
//     event for event (Replay). Lessons and the teaching view use it.
//   - Live: the same subtask state machines on one goroutine each, bounded
//     channels of pooled batches, a clock at a speed factor over real time.
//   - Engine: the interface both drivers offer a viewer. A running job
//     changes driver with Stepper.ToLive and Live.ToStepper (teaching view
//     <-> full speed) without losing a record or a pending checkpoint.
//   - Fork (Stepper.Fork, Live.Fork): a new, independent, paused Stepper
//     that starts as an exact copy of the running job at that instant —
//     state, records and barriers in flight, pending checkpoints, timers,
//     sources' cursors, sinks' output and transactions, retained
//     checkpoints, command log, clock — in its own directory, then goes its
//     own way. A fork of a Stepper also copies its random generator, so it
//     continues exactly as the original would (a copy kept at step N and
//     stepped to M equals a replay from step 0 to M).
//   - Command (Do): crash-subtask, crash-taskmanager, restart-taskmanager,
//     add-taskmanager (Slots optional: the cluster's slots per TaskManager
//     by default), trigger-checkpoint, trigger-savepoint, rescale, inject,
//     restore (Checkpoint: a retained checkpoint or savepoint), upgrade (a
//     changed job from one: Change add-operator, remove-operator, set-uid,
//     set-parallelism, set-max-parallelism or none; AllowNonRestoredState).
//   - Operator IDs (JobSpec.OperatorIDs, uid.go): Flink's OperatorID of each
//     operator, from its uid or generated from its place in the topology
//     (after StreamGraphHasherV2). Checkpoints file state under it and a
//     restore matches state by it; an upgrade refuses state no operator
//     takes with Flink's message unless AllowNonRestoredState.
//   - Local recovery (CheckpointingSpec.LocalRecovery, localrecovery.go):
//     task-local copies of checkpointed keyed state on each TaskManager's
//     disk, read first by a restore on the same TaskManager
//     (RestoreStats.LocalBytes / RemoteBytes).
//   - Options.FS puts the checkpoint directory and task-local state on any
//     state.FileSystem (tests inject disk faults with state.ErrorFS).
//   - Event (Subscribe): typed, plain-data events; Kind says which fields are
//     set; Message is a sentence for the event log.
//   - Snapshot: the whole picture as plain data (job graph with subtasks,
//     key-group ranges, statuses and TaskManagers; channels with queued
//     batches and barriers; checkpoints with Flink's figures; source
//     partitions and offsets; sink transactions and output against ground
//     truth). TaskStateView (TaskState) is the state inspector's view.
//   - Comparison (Compare): committed sink output against the truth computed
//     by evaluating the job once over the whole source topic.
//   - RunChaos: word count (or, with Job alerts, the timer job) with seeded
//     crashes and rescales (statelab chaos).
//
// Times in events and views are time.Duration (nanoseconds in JSON) of the
// driver's clock: virtual on the Stepper, scaled real time on Live.
//
// # Built-in operators (OperatorSpec.Kind and Options)
//
//	source           partitioned in-memory topic. partitions (default: parallelism),
//	                 generator words|clicks|none, records, keys, wordsPerLine, lines
//	                 (dealt round-robin), pages, windowSize, clicksPerWindow, rate
//	                 (records/s per subtask), offsets split|union. Its (partition,
//	                 offset) pairs live in operator ListState "offsets".
//	                 Every record has a key: a line (generated, from lines, or typed
//	                 in) is keyed by itself, as keyBy(line -> line) keys a stream of
//	                 strings in Flink, so a keyed operator right after the source
//	                 counts whole lines (words, with wordsPerLine 1); a click by its
//	                 page; a keys record by its key. Put a tokenizer first to count
//	                 the words of longer lines.
//	tokenizer        flatMap: a line's words, lower-cased, Key=word Value=1.
//	map              fn identity|upper|lower|length.   filter: exclude, minLength.
//	count, sum       keyed ValueState "count"/"sum"; emit the key's new total.
//	window-count     keyed tumbling event-time windows (size); MapState "windows";
//	                 one event-time timer per (key, window) in timer service
//	                 "window-timers": fires when the watermark passes the window end.
//	alerts           KeyedProcessFunction (timeout, event time): events wait in MapState
//	                 "pending" until the watermark passes them, then per key "count"
//	                 and "last" grow and an alert timer (service "user-timers") moves to
//	                 last+timeout; when it fires, one alert (key, count) and the key's
//	                 state is cleared. Timers are keyed state (state.TimerService).
//	keyed operators  (count, sum, window-count, alerts) also take the state TTL options
//	                 ttl, ttlUpdateType, ttlStateVisibility, ttlCleanupFullSnapshot,
//	                 ttlCleanupSize (state.TTLConfig; processing time = the subtask's
//	                 clock). Watermarks are not checkpointed: a restored subtask starts
//	                 at MinWatermark, as in Flink.
//	broadcast-filter rules ("block w"/"allow w") from its broadcast input in
//	                 BroadcastState "rules"; drops blocked keys of its other input.
//	tally            forwards records; per-subtask counts in union ListState "tallies".
//	sink             semantics exactly-once (two-phase commit, operator ListState
//	                 "pending-transactions") or at-least-once.
//
// # Contract for a caller
//
//  1. Build a JobSpec or LoadSpec it. Keyed operators need hash inputs;
//     forward edges need equal parallelism; max parallelism never changes.
//  2. Create a driver: NewStepper(spec, opts) (the job is scheduled; nothing
//     moves until Step) or NewLive(spec, opts) then Start(ctx).
//  3. Subscribe(buffer) before running if you want every event; a subscriber
//     that falls behind loses events (Dropped counts them) and should
//     resynchronise with Snapshot. The engine never waits for a subscriber.
//  4. Drive it. Stepper: Step, Steps, RunFor, RunUntil(pred, max),
//     RunUntilDrained, Play(ctx) or Resume/Pause, SetSpeed. Live: it runs;
//     Pause/Resume/SetSpeed; WaitDrained.
//  5. Apply user actions with Do(Command). Errors wrap ErrRescale,
//     ErrCheckpoint, ErrUnknown, ErrNotRunning, ErrJobTerminal,
//     ErrBadCommand (or rescale.ErrAboveMax with Flink's reason). The
//     Stepper logs every command with its step (CommandLog) for Replay.
//  6. Read Snapshot, TaskState and Compare at any time; they copy.
//  7. To change driver, call ToLive or ToStepper and use the driver it
//     returns from then on; the old one is closed for use. To copy the
//     job, call Fork (any time, from any goroutine): the original carries
//     on undisturbed (Live's subtasks pause at a quiet point while the copy
//     is made), and the fork is a Stepper to drive and Close like any.
//  8. Close releases goroutines, state backends and temporary directories.
//
// # What a subtask does (the task state machine)
//
//  1. SCHEDULED until the job has a slot for it (slot sharing: subtask i of
//     every operator shares slot i), then DEPLOYING, INITIALIZING (it
//     restores keyed state for its key-group range and its share of operator
//     state), RUNNING.
//  2. It takes one input at a time: a batch, watermark or barrier from an
//     unblocked input channel; a source poll; a message from the JobManager.
//     Its outputs (batches per channel, barriers, acknowledgements, events)
//     are left for the driver; it never blocks, sleeps or spawns.
//  3. A source, told to trigger checkpoint n, writes its offsets into its
//     ListState, emits barrier n on every output and acknowledges.
//  4. A subtask receiving barrier n on an input blocks that input
//     (exactly-once) until barrier n has arrived on all inputs; then it
//     forwards barrier n, snapshots keyed and operator state (sinks
//     pre-commit their transaction) and acknowledges. At-least-once mode
//     counts barriers without blocking. Barrier n+1 before n is aligned
//     makes it decline n.
//  5. When n completes the JobManager notifies every subtask; two-phase
//     sinks commit every pending transaction up to n. An aborted checkpoint
//     is notified too, so nobody stays blocked.
//  6. Unaligned checkpoints (checkpointing.unaligned, unaligned.go): the
//     barrier overtakes the records queued in its channel, which join the
//     checkpoint as the sender's channel state; a subtask snapshots at its
//     first barrier, blocks nothing, persists what still arrives before its
//     other inputs' barriers, and acknowledges when all arrived. With
//     alignedCheckpointTimeout a checkpoint starts aligned and switches
//     when its alignment outlasts the timeout. A restore replays the
//     channel state before new input.
//
// # Operator chaining (chain.go)
//
// Unless the spec says chaining: false (pipeline.operator-chaining, on by
// default as in Flink; the lessons' and sandbox's jobs turn it off so that
// every operator is its own task) an operator joins its upstream operator's
// chain by Flink's rules
// (single input, forward edge, equal parallelism, neither
// disableChaining nor a startNewChain downstream). A chain is one task: its
// head's subtask hands elements to the next operator by a method call (the
// chained channel never queues), a chain is one goroutine on Live and one
// schedulable unit on the Stepper, and a failure of any of its operators
// fails the whole chain's subtask. Snapshots name chains as Flink's Web UI
// does ("Source: words -> tokenizer").
//
// # What the JobManager does
//
//  1. Triggers periodic checkpoints when every subtask runs and fewer than
//     max-concurrent-checkpoints are pending; a tick while they are is
//     queued (Flink's CheckpointRequestDecider) and starts when one ends,
//     after the checkpoints asked for by hand that wait (coordinator.go);
//     completes n when every subtask acknowledged (metadata to
//     checkpoint storage, older ones subsumed beyond the retained count);
//     aborts on decline, timeout or failure.
//  2. On a failure the restart strategy decides whether and when
//     (restart.go, after Flink's RestartBackoffTimeStrategy classes; none
//     without periodic checkpointing, exponential-delay with it). A failed
//     subtask restarts with its pipelined region only (region.go,
//     RestartPipelinedRegionFailoverStrategy: forward edges join subtask i
//     with i, other edges join everything); anything else, or failover
//     full, cancels every subtask. Job status goes RUNNING -> RESTARTING ->
//     RUNNING, and FAILING -> FAILED when the strategy gives up. The restart
//     restores the newest retained checkpoint: sources seek to the
//     checkpointed offsets, two-phase sinks commit the restored pending
//     transactions and everything else of the failed attempt is aborted.
//     A broken checkpoint (missing file, CRC32C mismatch) fails the restore
//     and the strategy applies again: there is no fallback; the restore
//     command starts the job from an older one, as flink run -s would.
//     Without a checkpoint the job starts over with empty state. A lost
//     TaskManager's subtasks stop at once; the JobManager notices after the
//     heartbeat timeout. Failed or expired checkpoints count toward
//     tolerable-failed-checkpoints (cpfailure.go, CheckpointFailureManager)
//     and past it fail the job over. A job short of slots fails after the
//     slot request timeout. Every default is Flink's (defaults.go).
//  3. Rescale(op, p) = stop-with-savepoint (sources stop after its barrier;
//     sinks commit on its completion; subtasks FINISH), then a new execution
//     restores from the savepoint: keyed state by key-group range
//     intersection (rescale.NewPlan), operator state by Flink's round-robin
//     repartitioner. Above max parallelism is refused with Flink's reason.
//     Reactive mode restarts from the latest completed checkpoint with as
//     many subtasks as there are slots (the adaptive scheduler), no savepoint.
//  4. Intermediate savepoints commit nothing and are not used for failover
//     (Flink 1.15+); a savepoint the job restored from is.
package engine
