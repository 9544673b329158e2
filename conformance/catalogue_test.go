package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

func op(id, kind string, p int, opts map[string]any) map[string]any {
	o := map[string]any{"id": id, "kind": kind, "parallelism": p}
	if opts != nil {
		o["options"] = opts
	}
	return o
}

func edge(from, to, part string) map[string]any {
	return map[string]any{"from": from, "to": to, "partitioner": part}
}

// wordCount is source -> tokenizer -> count (keyBy word) -> sink, the job of
// most lessons.
func wordCount(p int, sink string, checkpointing map[string]any, restart map[string]any) map[string]any {
	s := map[string]any{
		"name": "word count",
		"operators": []any{
			op("source", "source", p, nil),
			op("tokenizer", "tokenizer", p, nil),
			map[string]any{"id": "count", "kind": "count", "parallelism": p, "maxParallelism": 128},
			op("sink", "sink", p, map[string]any{"semantics": sink}),
		},
		"edges": []any{edge("source", "tokenizer", "forward"), edge("tokenizer", "count", "hash"), edge("count", "sink", "rebalance")},
	}
	if checkpointing != nil {
		s["checkpointing"] = checkpointing
	}
	if restart != nil {
		s["restart"] = restart
	}
	return s
}

// catalogue is every scenario, in the order flinkref runs them (scenarios of
// one cluster shape next to each other share a MiniCluster).
func catalogue() []*scenario {
	return []*scenario{
		{
			name:       "rescale-2-3",
			claim:      "Rescaling keyed state 2 -> 3 gives each subtask Flink's key-group range; every key's count moves with its key group and goes on counting",
			spec:       wordCount(2, "exactly-once", map[string]any{"interval": "100ms"}, nil),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(1, 40, 3), genLines(2, 40, 3)}},
			phases:     []phase{{}, {rescale: map[string]int{"count": 3}}},
			slots:      4,
			check:      checkRescale,
		},
		{
			name:       "rescale-3-2-rocksdb",
			claim:      "Scaling keyed state in 3 -> 2 on the embedded LSM backend (StateLab's pebble, Flink's EmbeddedRocksDBStateBackend, incremental checkpoints): each new subtask merges the key groups of the old ones its range covers",
			spec:       withBackend(wordCount(3, "exactly-once", map[string]any{"interval": "100ms", "incremental": true}, nil), "pebble"),
			partitions: map[string]int{"source": 3},
			lines:      map[string][][]string{"source": {genLines(15, 45, 3), genLines(16, 30, 3)}},
			phases:     []phase{{}, {rescale: map[string]int{"count": 2}}},
			slots:      4,
			check:      checkRescaleDown,
		},
		defaultMaxParallelism(),
		{
			name:       "rescale-above-max-parallelism",
			claim:      "A rescale above max parallelism is refused: the number of key groups is fixed when a job first runs (Flink's StateAssignmentOperation refuses the restore)",
			spec:       map[string]any{"name": "four key groups", "operators": []any{op("source", "source", 2, nil), map[string]any{"id": "count", "kind": "count", "parallelism": 2, "maxParallelism": 4}, op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})}, "edges": []any{edge("source", "count", "hash"), edge("count", "sink", "rebalance")}, "checkpointing": map[string]any{"interval": "100ms"}},
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(17, 20, 1), {}}},
			phases:     []phase{{}, {rescale: map[string]int{"count": 5}, refused: true}},
			slots:      5,
			check:      checkRefusedAboveMax,
		},
		{
			name:  "operator-state-1-2",
			claim: "Split-distribute operator ListState 1 -> 2 over 5 partitions: each new source subtask gets the partitions, with their offsets, that Flink's RoundRobinOperatorStateRepartitioner gives it",
			spec: map[string]any{
				"name":          "five partitions",
				"operators":     []any{op("source", "source", 1, nil), op("sink", "sink", 1, map[string]any{"semantics": "exactly-once"})},
				"edges":         []any{edge("source", "sink", "rebalance")},
				"checkpointing": map[string]any{"interval": "100ms"},
			},
			partitions: map[string]int{"source": 5},
			lines:      map[string][][]string{"source": {genLines(3, 25, 2), genLines(4, 25, 2)}},
			phases:     []phase{{}, {rescale: map[string]int{"source": 2}}},
			slots:      4,
			check:      checkOperatorState,
		},
		{
			name:  "union-state-2-3",
			claim: "Union ListState 2 -> 3: every new subtask receives every old subtask's elements",
			spec: map[string]any{
				"name": "tallies",
				"operators": []any{op("source", "source", 2, nil),
					map[string]any{"id": "tally", "kind": "tally", "parallelism": 2, "maxParallelism": 128},
					op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
				"edges":         []any{edge("source", "tally", "hash"), edge("tally", "sink", "rebalance")},
				"checkpointing": map[string]any{"interval": "100ms"},
			},
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(5, 30, 1), genLines(6, 30, 1)}},
			phases:     []phase{{}, {rescale: map[string]int{"tally": 3}}},
			slots:      4,
			check:      checkUnion,
		},
		{
			name:  "broadcast-state-2-3",
			claim: "BroadcastState 2 -> 3: every new subtask restores the same rules",
			spec: map[string]any{
				"name": "rules",
				"operators": []any{op("words", "source", 2, nil), op("rules", "source", 1, nil),
					op("filter", "broadcast-filter", 2, nil), op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
				"edges": []any{edge("words", "filter", "hash"), edge("rules", "filter", "broadcast"),
					edge("filter", "sink", "rebalance")},
				"checkpointing": map[string]any{"interval": "100ms"},
			},
			partitions: map[string]int{"words": 2, "rules": 1},
			lines: map[string][][]string{
				"words": {genLines(7, 20, 1), genLines(8, 20, 1)},
				"rules": {{"block flink", "block state", "block sink", "allow state"}, {}},
			},
			phases: []phase{{}, {rescale: map[string]int{"filter": 3}}},
			slots:  4,
			check:  checkBroadcast,
		},
		{
			name:       "exactly-once-crash",
			claim:      "A two-phase-commit sink commits every result exactly once across a crash and restore from the latest checkpoint",
			spec:       wordCount(2, "exactly-once", map[string]any{"interval": "50ms"}, map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(9, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "count#1", AfterRecords: 40}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "count#1", afterRecords: 40}},
			}},
			slots: 4,
			check: checkExactlyOnce,
		},
		{
			name:  "at-least-once-crash",
			claim: "An at-least-once sink loses nothing across a crash, and may write some results twice (here the crash comes before the first checkpoint, 3 s after the job runs, so both restart from the beginning and must write the first results again)",
			// minPause = interval: Flink's first periodic checkpoint comes at a
			// random point between the min pause and the interval
			// (CheckpointCoordinator.getRandomInitDelay); with 2 s and no min pause
			// one came before the crash in a full run (restored ahead, 58
			// unexpected counts), so the first is pinned at 3 s
			spec:       wordCount(2, "at-least-once", map[string]any{"interval": "3s", "minPause": "3s", "mode": "at-least-once"}, map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(9, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "sink#1", AfterRecords: 40}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "sink#1", afterRecords: 40}},
			}},
			slots: 4,
			check: checkAtLeastOnce,
		},
		{
			name:       "crash-without-checkpointing",
			claim:      "Without checkpointing and without a configured restart strategy a failed task fails the job (restart strategy none)",
			spec:       wordCount(2, "at-least-once", nil, nil),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(10, 40, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "tokenizer#0", AfterRecords: 5}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "tokenizer#0", afterRecords: 5}},
			}},
			slots: 4,
			check: checkFailsWithoutRestart,
		},
		{
			name:       "crash-default-restart",
			claim:      "With checkpointing and no configured restart strategy Flink restarts with exponential-delay (1 s initial backoff): RUNNING -> RESTARTING -> RUNNING, every subtask of the region restarted, results exactly once",
			spec:       wordCount(2, "exactly-once", map[string]any{"interval": "50ms"}, nil),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(11, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "count#0", AfterRecords: 30}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "count#0", afterRecords: 30}},
			}},
			slots: 4,
			check: checkRestartsAll,
		},
		{
			name: "fixed-delay-exhausted",
			claim: "With fixed-delay, attempts 2 (FixedDelayRestartBackoffTimeStrategy), the same subtask failing three times is " +
				"restarted twice and its third failure fails the job: RUNNING -> RESTARTING -> RUNNING " +
				"-> RESTARTING -> RUNNING -> FAILING -> FAILED; with a hash edge the whole job is one region, so every subtask is " +
				"restarted exactly twice",
			spec:       wordCount(2, "at-least-once", nil, map[string]any{"strategy": "fixed-delay", "attempts": 2, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(36, 60, 3)}},
			phases: []phase{{
				flinkFaults: []flinkFault{
					{Kind: "throw", Task: "tokenizer#0", AfterRecords: 5},
					{Kind: "throw", Task: "tokenizer#0", AfterRecords: 10},
					{Kind: "throw", Task: "tokenizer#0", AfterRecords: 15},
				},
				statelabFaults: []slFault{
					{cmd: engine.CmdCrashSubtask, task: "tokenizer#0", afterRecords: 5},
					{cmd: engine.CmdCrashSubtask, task: "tokenizer#0", afterRecords: 10},
					{cmd: engine.CmdCrashSubtask, task: "tokenizer#0", afterRecords: 15},
				},
			}},
			slots: 4,
			check: checkFixedDelayExhausted,
		},
		{
			name: "failure-rate-exceeded",
			claim: "With failure-rate, at most 2 failures per 1 min (FailureRateRestartBackoffTimeStrategy: the deque of failure " +
				"times is full past 2, and the oldest is within the interval), the same subtask (tokenizer#0, no checkpointing) " +
				"failing three times in a few seconds is restarted twice and its third failure fails the job: RUNNING -> " +
				"RESTARTING -> RUNNING -> RESTARTING -> RUNNING -> FAILING -> FAILED; every subtask restarted exactly twice",
			spec:       wordCount(2, "at-least-once", nil, map[string]any{"strategy": "failure-rate", "attempts": 2, "interval": "1m", "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(38, 60, 3)}},
			phases:     []phase{threeFailures("tokenizer#0")},
			slots:      4,
			check:      checkRestarts("FAILED", "RESTARTING,RUNNING,RESTARTING,RUNNING,FAILING,FAILED", 2),
		},
		{
			name: "failure-rate-spaced",
			claim: "With failure-rate, at most 1 failure per 300 ms and a delay of 800 ms, failures are never closer than the " +
				"delay, so the rate is never exceeded: tokenizer#0 failing three times is restarted three times and the job runs " +
				"on (RESTARTING -> RUNNING three times); a count of attempts (fixed-delay, attempts 1) would have failed the job " +
				"at the second failure",
			spec:       wordCount(2, "at-least-once", nil, map[string]any{"strategy": "failure-rate", "attempts": 1, "interval": "300ms", "delay": "800ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(39, 60, 3)}},
			phases:     []phase{threeFailures("tokenizer#0")},
			slots:      4,
			check:      checkRestarts("", "RESTARTING,RUNNING,RESTARTING,RUNNING,RESTARTING,RUNNING", 3),
		},
		{
			name: "exponential-delay-exhausted",
			claim: "With exponential-delay, attempts-before-reset-backoff 2 (ExponentialDelayRestartBackoffTimeStrategy; initial " +
				"backoff 100 ms, multiplier 2, no jitter), the same subtask (tokenizer#0, no checkpointing) failing three times, " +
				"each after the pending backoff, is restarted twice and its third failure fails the job: RUNNING -> RESTARTING " +
				"-> RUNNING -> RESTARTING -> RUNNING -> FAILING -> FAILED; every subtask restarted exactly twice",
			spec: wordCount(2, "at-least-once", nil, map[string]any{"strategy": "exponential-delay", "attempts": 2, "delay": "100ms",
				"multiplier": 2, "jitter": -1, "maxBackoff": "1s"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(41, 60, 3)}},
			phases:     []phase{threeFailures("tokenizer#0")},
			slots:      4,
			check:      checkRestarts("FAILED", "RESTARTING,RUNNING,RESTARTING,RUNNING,FAILING,FAILED", 2),
		},
		{
			name:       "region-failover-forward",
			claim:      "On an all-forward job a failed subtask restarts only its pipelined region (subtask i of every operator); the job still goes RUNNING -> RESTARTING -> RUNNING while the region waits (DefaultScheduler.addVerticesToRestartPending)",
			spec:       forwardJob(),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(12, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "tokenizer#1", AfterRecords: 10}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "tokenizer#1", afterRecords: 10}},
			}},
			slots: 4,
			check: checkRegionFailover,
		},
		{
			name: "second-region-failure-while-first-waits",
			claim: "Every failure is handled on its own (DefaultScheduler.handleTaskFailure -> restartTasksWithDelay): on the etl " +
				"job (two pipelined regions) map#0 fails, and while its region waits for its 2 s fixed-delay restart, source#1 " +
				"fails too; each region restarts after its own delay, region 0 first, each subtask once; the job stays RESTARTING " +
				"until no region waits (RUNNING -> RESTARTING -> RUNNING); both failures count toward the restart strategy; " +
				"results exactly once",
			spec:       etlJobRestart(map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "2s"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(37, 60, 3), {}}},
			phases: []phase{{
				// source#1 fails 700 ms into region 0's 2 s wait: it has read its
				// input by then and waits at its end, so it fails on a poll.
				flinkFaults: []flinkFault{
					{Kind: "throw", Task: "map#0", AfterRecords: 10},
					{Kind: "throw", Task: "source#1", WhileRestartingMillis: 700},
				},
				statelabFaults: []slFault{
					{cmd: engine.CmdCrashSubtask, task: "map#0", afterRecords: 10},
					{cmd: engine.CmdCrashSubtask, task: "source#1", whileRestarting: 700 * time.Millisecond},
				},
				awaitFaults: true,
			}, {}},
			slots: 4,
			check: checkSecondRegionWhileFirstWaits,
		},
		{
			name: "second-region-failure-merges-into-backoff",
			claim: "With exponential-delay a failure within the pending backoff merges into it (ExponentialDelayRestartBackoffTimeStrategy." +
				"notifyFailure: no new attempt while now < nextRestartTimestamp, and getBackoffTime is what is left of it): on the " +
				"etl job, with attempts-before-reset-backoff 1 and a 2 s backoff without jitter, map#0 fails and source#1 fails " +
				"700 ms into region 0's wait; both failures are one attempt, so the job does not fail, and both regions restart " +
				"(each subtask once; the job RESTARTING until no region waits); results exactly once",
			spec:       etlJobRestart(map[string]any{"strategy": "exponential-delay", "attempts": 1, "delay": "2s", "jitter": -1}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(42, 60, 3), {}}},
			phases: []phase{{
				flinkFaults: []flinkFault{
					{Kind: "throw", Task: "map#0", AfterRecords: 10},
					{Kind: "throw", Task: "source#1", WhileRestartingMillis: 700},
				},
				statelabFaults: []slFault{
					{cmd: engine.CmdCrashSubtask, task: "map#0", afterRecords: 10},
					{cmd: engine.CmdCrashSubtask, task: "source#1", whileRestarting: 700 * time.Millisecond},
				},
				awaitFaults: true,
			}, {}},
			slots: 4,
			check: checkMergedIntoBackoff,
		},
		{
			name: "chain-fails-as-one-unit",
			claim: "With chaining on (Flink's default), an all-forward job source -> tokenizer -> upper -> sink with startNewChain() " +
				"on upper runs as two chains, \"Source: source -> tokenizer\" and \"upper -> sink\"; a failure of tokenizer#1 fails " +
				"its chain's subtask as one unit, and region failover restarts subtask 1 of both chains (the region), not subtask 0",
			spec:       chainedForwardJob(),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(31, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "tokenizer#1", AfterRecords: 10}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "tokenizer#1", afterRecords: 10}},
			}},
			slots: 4,
			check: checkChain,
		},
		{
			name: "forward-edge-rescale-refused",
			claim: "A forward edge needs the same parallelism on both sides: restoring the etl job (source -> map -> sink, " +
				"forward edges, parallelism 2) with map at 3 is refused before anything runs (Flink's StreamGraph: \"Forward " +
				"partitioning does not allow change of parallelism\", while the job graph is built; StateLab: its rescale " +
				"command, JobSpec.Validate's checkForward for a spec)",
			spec:       etlJob(),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(34, 30, 3), {}}},
			phases:     []phase{{}, {rescale: map[string]int{"map": 3}, refused: true}},
			slots:      4,
			check:      checkForwardRescaleRefused,
		},
		{
			name: "ttl-expiry",
			claim: "A keyed value with a state TTL (count, ttl 1s, Flink's StateTtlConfig with its defaults: OnCreateAndWrite, " +
				"NeverReturnExpired, processing time) that nothing touched for longer than the TTL is not returned: after a pause " +
				"longer than the TTL every word counts from 1 again. Processing time is wall clock on Flink and job time on StateLab, " +
				"so only what does not depend on how fast records flow is compared: each word comes once per phase, and the pause " +
				"(1.5 s) is a lower bound on both",
			spec:       ttlJob("1s"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {ttlWords, ttlWords}},
			phases:     []phase{{}, {pause: 1500 * time.Millisecond}},
			slots:      4,
			check:      checkTTL,
		},
		{
			name: "ttl-cleanup-full-snapshot",
			claim: "With cleanupFullSnapshot a full snapshot leaves out the TTL values that had expired when it was taken " +
				"(TtlStateSnapshotTransformer; count's ValueState, ttl 2s, ReturnExpiredIfNotCleanedUp, no background " +
				"cleanup): a savepoint taken after the TTL passed holds none of them, so a restore from it returns none even " +
				"though expired values may be returned when not cleaned up, and every word counts from 1 again",
			spec: ttlJobWith(map[string]any{"ttl": "2s", "ttlStateVisibility": "ReturnExpiredIfNotCleanedUp",
				"ttlCleanupFullSnapshot": true, "ttlCleanupSize": -1}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {ttlWords, {}, ttlWords}},
			phases: []phase{{},
				{pause: 3 * time.Second, rescale: map[string]int{"count": 3}},
				{rescale: map[string]int{"count": 2}}},
			slots:         4,
			flinkKeysOnly: true,
			check:         checkTTLFullSnapshot,
		},
		{
			name:       "expired-checkpoint",
			claim:      "A checkpoint that expires with tolerable-failed-checkpoints 0 fails the job over (CheckpointFailureManager): every subtask restarts from the latest completed checkpoint",
			spec:       wordCount(2, "exactly-once", map[string]any{"interval": "100ms", "timeout": "800ms", "tolerableFailed": 0}, map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(13, 40, 3), {}}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "stall-checkpoint", Task: "count#0", Checkpoint: 3, Millis: 2500}},
				statelabFaults: []slFault{{cmd: stallSnapshot, task: "count#0", checkpoint: 3, stall: 2500 * time.Millisecond}},
				awaitFaults:    true,
			}, {}},
			slots: 4,
			check: checkExpired,
		},
		checkpointsByHand("retained-checkpoints-default", nil),
		checkpointsByHand("retained-checkpoints-3", map[string]any{"retained": 3}),
		intermediateSavepoint(),
		restoreNumbering(),
		restoreOlderCheckpoint(),
		unalignedWhileRunning(),
		savepointStaysAligned(),
		checkpointAfterSavepoint(),
		incrementalUploadsNew(),
		alignedTimeoutSwitches(),
		maxConcurrentOne(),
		maxConcurrentTwo(),
		minPauseBetween(),
		minPauseAfterExpired(),
		checkpointByHandWaits(),
		checkpointSubsumed(),
		procTimersDueAfterRestore(),
		watermarksNotCheckpointed(),
		unalignedChannelStateRestore(),
		alignedBarriersHold(),
		atLeastOnceBarriersDoNotBlock(),
		noIntervalBarriersDoNotBlock(),
		unalignedNeedsExactlyOnce(),
		abortedCheckpoint(),
		{
			name: "jobmanager-storage-cap",
			claim: "State over the JobManager checkpoint storage's cap (JobManagerCheckpointStorage(maxStateSize), here 1 byte, " +
				"so every state is over it) fails the asynchronous part of each snapshot (MemCheckpointStreamFactory: \"Size of the " +
				"state is larger than the maximum permitted memory-backed state\"), CHECKPOINT_ASYNC_EXCEPTION, which counts " +
				"toward tolerable-failed-checkpoints 0: the job fails over, and keeps failing while the state stays too large, " +
				"until fixed-delay (attempts 2) gives up: RUNNING -> RESTARTING -> RUNNING -> RESTARTING -> RUNNING -> FAILING -> " +
				"FAILED, no checkpoint completed",
			spec: wordCount(2, "at-least-once", map[string]any{"interval": "100ms", "tolerableFailed": 0, "maxStateBytes": 1},
				map[string]any{"strategy": "fixed-delay", "attempts": 2, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(40, 60, 3)}},
			phases:     []phase{{statusesFromStart: true, holdInput: true}},
			slots:      4,
			check:      checkStorageCap,
		},
		{
			name: "broken-latest-checkpoint",
			claim: "A broken latest checkpoint (its state files deleted; the one before it intact and retained) fails the restore, " +
				"and Flink does not fall back to the older one (CheckpointCoordinator.restoreLatestCheckpointedStateInternal " +
				"always takes the latest): every restart tries the broken checkpoint again, each failed restore a new " +
				"exponential-delay attempt (attempts 2, no jitter), until the strategy gives up and the job FAILED",
			spec: withBackend(wordCount(2, "at-least-once", map[string]any{"interval": "100ms", "retained": 2},
				map[string]any{"strategy": "exponential-delay", "attempts": 2, "delay": "300ms", "jitter": -1}), "fs"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(43, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: breakLatest, Task: "source#0"}},
				statelabFaults: []slFault{{cmd: breakLatest, task: "source#0"}},
				holdInput:      true,
			}},
			slots: 4,
			check: checkBrokenLatest,
			differs: []difference{
				{why: "Flink deploys the restarted tasks and they fail reading the missing files, so each try also " +
					"restarts the subtasks; StateLab checks the checkpoint's files before it deploys anything, so its " +
					"subtasks are not restarted per try (restarts per subtask are not compared)", ui: "explain.simplified.restoreChecksFirst"},
			},
		},
		{
			// The sink's pending transactions in the latest checkpoint cut
			// off at their first element (Flink: its operator-state files
			// truncated there, found through Checkpoints.loadCheckpointMetadata;
			// StateLab: the element cut short in the metadata, whose CRC32C
			// is made to match), then source#0 fails: every restore fails
			// decoding that element, and fixed-delay gives up.
			name: "corrupt-pending-transactions",
			claim: "Checkpointed operator state that does not decode fails the restore, nothing is skipped: the sink's pending " +
				"transactions in the latest checkpoint cut off at their first element fail every restore (Flink: " +
				"StreamTaskStateInitializerImpl fails the task; StateLab: decodeElements, ErrCorruptCheckpoint), each a " +
				"restart attempt, until fixed-delay (attempts 2) gives up and the job FAILED",
			spec: withBackend(wordCount(2, "exactly-once", map[string]any{"interval": "100ms"},
				map[string]any{"strategy": "fixed-delay", "attempts": 2, "delay": "100ms"}), "fs"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(44, 60, 3)}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: corruptPending, Task: "source#0"}},
				statelabFaults: []slFault{{cmd: corruptPending, task: "source#0"}},
				holdInput:      true,
			}},
			slots: 4,
			check: checkCorruptPending,
			differs: []difference{
				{why: "Flink deploys the restarted tasks and the sink fails decoding its state, so each try also restarts " +
					"the subtasks; StateLab checks the checkpoint before it deploys anything, so its subtasks are not " +
					"restarted per try (restarts per subtask are not compared)", ui: "explain.simplified.restoreChecksFirst"},
			},
		},
		{
			name:       "taskmanager-lost",
			claim:      "Losing a TaskManager fails every subtask it ran; with an all-to-all (hash) edge the whole job is one region and restarts from the latest checkpoint, results exactly once",
			spec:       wordCount(2, "exactly-once", map[string]any{"interval": "50ms"}, map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"}),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(14, 60, 3), {}}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "tm-lost", Task: "count#0", AfterRecords: 20, TaskManager: 0}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashTaskManager, task: "count#0", afterRecords: 20, then: []string{engine.CmdRestartTaskManager}}},
				awaitFaults:    true,
			}, {}},
			taskManagers: 2,
			slots:        2,
			check:        checkTaskManagerLost,
			differs: []difference{
				{why: "Flink notices a killed TaskManager after heartbeat.timeout (50 s) or when its process exits " +
					"(MiniCluster's terminateTaskManager tells the JobManager at once); StateLab waits 100 ms of job time " +
					"by default, so a lesson does not stall", ui: "explain.simplified.heartbeat"},
			},
		},
		slotRequestTimeout(),
		restartKeepsPreviousSlots(),
		localRecoveryCrash(),
		localRecoveryLostTaskManager(),
		localRecoveryKeepsLatest(),
		reactiveRescale(),
		reactiveRescaleLocalState("memory"),
		reactiveRescaleLocalState("pebble"),
		{
			name: "taskmanager-lost-etl",
			claim: "Losing a TaskManager on a job of forward edges only (the sandbox's etl template: source -> map -> sink at " +
				"parallelism 2, one slot per TaskManager, so each TaskManager runs one pipeline) fails the subtasks it ran and " +
				"region failover restarts only their pipelined region (RestartPipelinedRegionFailoverStrategy); the other " +
				"pipeline keeps running; results exactly once",
			spec:       etlJob(),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(35, 60, 3), {}}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "tm-lost", Task: "map#0", AfterRecords: 20}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashTaskManager, task: "map#0", afterRecords: 20, then: []string{engine.CmdRestartTaskManager}}},
				awaitFaults:    true,
			}, {}},
			taskManagers: 2,
			slots:        1,
			check:        checkTaskManagerLostETL,
		},
		{
			name: "alerts-timers-crash-rescale-2-3",
			claim: "Event-time timers are keyed state: a KeyedProcessFunction's timers (alerts after 7 ms of silence per word) " +
				"pending at the latest checkpoint come back with it after a crash and fire once; the job then restores at parallelism 3 " +
				"from a savepoint; every alert is committed exactly once, the same alerts on both",
			spec:       alertsJob(),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(22, 160, 1), {}}},
			phases: []phase{{
				flinkFaults:    []flinkFault{{Kind: "throw", Task: "alerts#1", AfterRecords: 50}},
				statelabFaults: []slFault{{cmd: engine.CmdCrashSubtask, task: "alerts#1", afterRecords: 50}},
				awaitFaults:    true,
			}, {rescale: map[string]int{"alerts": 3}}},
			slots: 5,
			check: checkAlerts,
		},
		{
			name: "alerts-timers-pending-across-rescale",
			claim: "Event-time timers pending at a savepoint travel with their key groups: the input goes on after a stop-with-savepoint " +
				"and a restore at parallelism 3 (alerts 2 -> 3), and a timer registered before the rescale fires after it, once, on " +
				"the subtask that owns its key group at 3; both savepoints hold the same records (Flink's sources held where StateLab's " +
				"savepoint fell) and the same pending timers, one by one, the record at the cut's among them (both sources' watermark is " +
				"the highest timestamp read minus 1); every alert is committed exactly once, the same alerts on both",
			spec:          alertsJob(),
			partitions:    map[string]int{"source": 2},
			lines:         map[string][][]string{"source": {genLines(33, 120, 1), genLines(34, 120, 1)}},
			continuous:    true,
			cutAtStateLab: true,
			phases:        []phase{{}, {rescale: map[string]int{"alerts": 3}}},
			slots:         5,
			check:         checkTimersAcrossRescale,
		},
		{
			name: "upgrade-remove-stateful-operator",
			claim: "A restore into a job without a stateful operator (the tally, with union ListState) is refused with Flink's " +
				"message naming the operator ID its state is filed under and the --allowNonRestoredState advice " +
				"(Checkpoints.loadAndValidateCheckpoint); with allowNonRestoredState the job starts and the other operators' " +
				"state goes on: the same counts and every word count committed exactly once",
			spec:       upgradeJob(true, "count"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(23, 40, 3), {}, genLines(24, 40, 3)}},
			phases: []phase{{},
				{upgrade: &engine.Command{Change: engine.ChangeRemoveOperator, Operator: "tally"}, job: upgradeJob(false, "count"), refused: true},
				{upgrade: &engine.Command{Change: engine.ChangeRemoveOperator, Operator: "tally", AllowNonRestoredState: true}, job: upgradeJob(false, "count")}},
			slots: 5,
			check: checkUpgradeRemove,
		},
		{
			name: "upgrade-change-uid",
			claim: "A stateful operator whose uid changed (count: \"count\" -> \"count-v2\") no longer finds its state: the restore is " +
				"refused with Flink's message naming the old operator ID; with allowNonRestoredState count starts empty and counts " +
				"from zero again, the same keys and counts on both",
			spec:       upgradeJob(true, "count"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(25, 40, 3), {}, genLines(26, 40, 3)}},
			phases: []phase{{},
				{upgrade: &engine.Command{Change: engine.ChangeSetUID, Operator: "count", UID: "count-v2"}, job: upgradeJob(true, "count-v2"), refused: true},
				{upgrade: &engine.Command{Change: engine.ChangeSetUID, Operator: "count", UID: "count-v2", AllowNonRestoredState: true}, job: upgradeJob(true, "count-v2")}},
			slots: 5,
			check: checkUpgradeUID,
		},
		{
			name: "upgrade-add-operator",
			claim: "A restore into a job with an operator added (a tally, union ListState, uid \"tally\", after count) needs no " +
				"allowNonRestoredState: every state in the savepoint finds its operator; the new operator starts empty and " +
				"the others go on: the same keys and counts, every word count committed exactly once",
			spec:       upgradeJob(false, "count"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(27, 40, 3), genLines(28, 40, 3)}},
			phases: []phase{{},
				{upgrade: &engine.Command{Change: engine.ChangeAddOperator, Operator: "count", Kind: engine.KindTally, UID: "tally"}, job: upgradeJob(true, "count")}},
			slots: 5,
			check: checkUpgradeAdd,
		},
		{
			name: "upgrade-set-parallelism",
			claim: "A restore from a savepoint into the same job with count at parallelism 3 instead of 2 (flink run -s with " +
				"another parallelism; StateLab's upgrade set-parallelism) gives each count subtask Flink's key-group range at 3 " +
				"and the keys of its key groups with their counts, and counting goes on exactly once",
			spec:       upgradeJob(false, "count"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(29, 40, 3), genLines(30, 40, 3)}},
			phases: []phase{{},
				{upgrade: &engine.Command{Change: engine.ChangeSetParallelism, Operator: "count", Parallelism: 3}, job: withParallelism(upgradeJob(false, "count"), "count", 3)}},
			slots: 5,
			check: checkUpgradeParallelism,
		},
		{
			name: "upgrade-set-max-parallelism-refused",
			claim: "A restore into a job that configures another max parallelism for a stateful operator (count: 128 in the " +
				"savepoint, 256 set explicitly: Flink's setMaxParallelism on the restored job, StateLab's upgrade " +
				"set-max-parallelism) is refused (Checkpoints.loadAndValidateCheckpoint: \"Max parallelism mismatch between " +
				"checkpoint/savepoint state and new program\"), with allowNonRestoredState too (that option only skips state " +
				"with no operator); the same savepoint restores into the unchanged job, count keeps 128 key groups and goes on",
			spec:       upgradeJob(false, "count"),
			partitions: map[string]int{"source": 2},
			lines:      map[string][][]string{"source": {genLines(31, 40, 3), {}, {}, genLines(32, 40, 3)}},
			phases: []phase{{},
				{upgrade: &engine.Command{Change: engine.ChangeSetMaxParallelism, Operator: "count", MaxParallelism: 256}, job: withConfiguredMaxParallelism(upgradeJob(false, "count"), "count", 256), refused: true},
				{upgrade: &engine.Command{Change: engine.ChangeSetMaxParallelism, Operator: "count", MaxParallelism: 256, AllowNonRestoredState: true}, job: withConfiguredMaxParallelism(upgradeJob(false, "count"), "count", 256), refused: true},
				{upgrade: &engine.Command{Change: engine.ChangeNone}, job: upgradeJob(false, "count")}},
			slots: 5,
			check: checkMaxParallelismRefused,
		},
	}
}

// withConfiguredMaxParallelism is spec (for Flink) with operator id's max
// parallelism set to n on a restore too (flinkref's JobBuilder sets a
// spec's maxParallelism only on a job's first run, configuredMaxParallelism
// always): a changed job that configures it explicitly.
func withConfiguredMaxParallelism(spec map[string]any, id string, n int) map[string]any {
	for _, o := range spec["operators"].([]any) {
		if o.(map[string]any)["id"] == id {
			o.(map[string]any)["configuredMaxParallelism"] = n
		}
	}
	return spec
}

// maxParallelismPointer is what names the savepoint in the max parallelism
// refusal: Flink 2.3.0 formats its CheckpointMetadata there ("Checkpoint
// Metadata"), StateLab the savepoint's name.
var maxParallelismPointer = regexp.MustCompile(`checkpoint/savepoint (.+?)\. Max parallelism mismatch`)

// maxParallelismRefusal is Flink's max parallelism mismatch sentences in msg
// (Checkpoints.loadAndValidateCheckpoint), the savepoint and the operator ID
// (operatorID) as placeholders, up to its last sentence (StateLab adds one
// of its own after it).
func maxParallelismRefusal(msg, operatorID string) string {
	at := strings.Index(msg, "Failed to rollback")
	if at < 0 {
		return ""
	}
	msg = maxParallelismPointer.ReplaceAllString(msg[at:], "checkpoint/savepoint <savepoint>. Max parallelism mismatch")
	if end := strings.Index(msg, "after the checkpoint/savepoint."); end >= 0 {
		msg = msg[:end+len("after the checkpoint/savepoint.")]
	}
	return strings.ReplaceAll(msg, "operator "+operatorID+" ", "operator <ID of the operator> ")
}

// checkMaxParallelismRefused: phases 1 and 2 (the second with
// allowNonRestoredState) refused on both with the same message about
// count; phase 3 restores the same savepoint into the unchanged job.
func checkMaxParallelismRefused(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 4, "Flink ran the job, the two refused restores and the unchanged one")
	var flMsgs []string
	for _, i := range []int{1, 2} {
		p := fl.Phases[i]
		cause := ""
		if p.Failure != nil {
			cause = p.Failure.RootCause
		}
		j.t.Logf("Flink's restore %d with count's max parallelism 256: %s; %s", i, p.FinalStatus, cause)
		j.true(fmt.Sprintf("Flink refused restore %d (the job FAILED)", i), p.FinalStatus == "FAILED", p.FinalStatus)
		m := maxParallelismRefusal(cause, fl.Phases[0].OperatorIDs["count"])
		j.true(fmt.Sprintf("Flink's refusal %d names count's operator ID and both max parallelisms", i),
			strings.Contains(m, "Max parallelism mismatch") && strings.Contains(m, "<ID of the operator> with max parallelism 128 to new program with max parallelism 256."), m)
		flMsgs = append(flMsgs, m)
	}
	p := fl.Phases[3]
	j.true("Flink restored the same savepoint into the unchanged job", flinkRan(&p) && p.FinalStatus == "FINISHED", p.FinalStatus)
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("upgrade-set-max-parallelism-refused")...))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 4, "StateLab ran the job, the two refused upgrades and the unchanged one")
	var slMsgs []string
	for _, i := range []int{1, 2} {
		j.t.Logf("StateLab refused upgrade %d: %s", i, sl.phases[i].refused)
		slMsgs = append(slMsgs, maxParallelismRefusal(sl.phases[i].refused, sl.phases[0].operatorIDs["count"]))
	}
	j.equal("the refusals, without and with allowNonRestoredState (savepoint path and operator ID as placeholders)", slMsgs, flMsgs)
	j.equal("the upgrade into the unchanged job is accepted", sl.phases[3].refused == "" && sl.phases[3].finalStatus == "RUNNING", flinkRan(&p))
	j.equal("key-group ranges of count after the restore (max parallelism 128)", sl.phases[3].keyGroups["count"], flinkKeyGroups(&p, "count"))
	j.equal("keys and counts each count subtask restored", sl.phases[3].restoredKeys["count"], flinkKeys(&p, "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[3].finalKeys["count"], flinkKeys(&p, "close", "count"))
}

// withParallelism is spec with operator id at parallelism p.
func withParallelism(spec map[string]any, id string, p int) map[string]any {
	for _, o := range spec["operators"].([]any) {
		if o.(map[string]any)["id"] == id {
			o.(map[string]any)["parallelism"] = p
		}
	}
	return spec
}

// restoredElements is how many operator-state elements of name each
// subtask of op restored, on Flink.
func flinkRestoredElements(p *phaseTrace, op, name string) map[int]int {
	out := map[int]int{}
	for i, e := range p.lastEvents("open", op) {
		out[i] = len(e.OperatorState[name])
	}
	return out
}

// slRestoredElements is the same on StateLab: every subtask of op at
// parallelism par, 0 where it restored nothing.
func slRestoredElements(p *slPhase, op, name string, par int) map[int]int {
	out := map[int]int{}
	for i := 0; i < par; i++ {
		out[i] = 0
	}
	for _, e := range p.restores {
		if e.Restore == nil || !strings.HasPrefix(e.Task, op+"#") {
			continue
		}
		var i int
		fmt.Sscanf(e.Task, op+"#%d", &i)
		out[i] = len(e.Restore.OperatorState[name])
	}
	return out
}

// flinkRan reports whether a Flink phase reached RUNNING.
func flinkRan(p *phaseTrace) bool {
	for _, s := range p.StatusTransitions {
		if s.Status == "RUNNING" {
			return true
		}
	}
	return false
}

func checkUpgradeAdd(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 2, "Flink ran the job and the upgraded one")
	p := fl.Phases[1]
	j.true("Flink restored the upgraded job without allowNonRestoredState", flinkRan(&p) && p.FinalStatus == "FINISHED", p.FinalStatus)
	j.true("Flink's count restored keys", len(flinkKeys(&p, "open", "count")[0]) > 0, flinkKeys(&p, "open", "count"))
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("upgrade-add-operator")...))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 2, "StateLab ran the job and the upgraded one")
	j.t.Logf("StateLab's upgrade: refused %q", sl.phases[1].refused)
	j.equal("the upgrade is accepted without allowNonRestoredState", sl.phases[1].refused == "" && sl.phases[1].finalStatus == "RUNNING", flinkRan(&p))
	j.equal("union list elements each tally subtask restored (none: the operator is new)",
		slRestoredElements(&sl.phases[1], "tally", "tallies", 2), flinkRestoredElements(&p, "tally", "tallies"))
	j.equal("keys and counts each count subtask restored", sl.phases[1].restoredKeys["count"], flinkKeys(&p, "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[1].finalKeys["count"], flinkKeys(&p, "close", "count"))
}

func checkUpgradeParallelism(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 2, "Flink ran the job and the upgraded one")
	p := fl.Phases[1]
	j.true("Flink ran count at parallelism 3 after the restore", len(flinkKeyGroups(&p, "count")) == 3, flinkKeyGroups(&p, "count"))
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("upgrade-set-parallelism")...))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 2, "StateLab ran the job and the upgraded one")
	j.equal("key-group ranges of count at parallelism 2", sl.phases[0].keyGroups["count"], flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("key-group ranges of count after the restore at parallelism 3", sl.phases[1].keyGroups["count"], flinkKeyGroups(&p, "count"))
	j.equal("keys and counts each count subtask restored at parallelism 3", sl.phases[1].restoredKeys["count"], flinkKeys(&p, "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[1].finalKeys["count"], flinkKeys(&p, "close", "count"))
}

// upgradeJob is the word count with a uid on every operator (count's is
// countUID) and, withTally, a tally (union ListState) between count and the
// sink: the job before and after the upgrades, written out for Flink.
func upgradeJob(withTally bool, countUID string) map[string]any {
	withUID := func(o map[string]any, uid string) map[string]any {
		o["uid"] = uid
		return o
	}
	ops := []any{
		withUID(op("source", "source", 2, nil), "source"),
		withUID(op("tokenizer", "tokenizer", 2, nil), "tokenizer"),
		map[string]any{"id": "count", "kind": "count", "parallelism": 2, "maxParallelism": 128, "uid": countUID},
	}
	edges := []any{edge("source", "tokenizer", "forward"), edge("tokenizer", "count", "hash")}
	if withTally {
		ops = append(ops, withUID(op("tally", "tally", 2, nil), "tally"))
		edges = append(edges, edge("count", "tally", "forward"), edge("tally", "sink", "rebalance"))
	} else {
		edges = append(edges, edge("count", "sink", "rebalance"))
	}
	ops = append(ops, withUID(op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"}), "sink"))
	return map[string]any{"name": "word count with uids", "operators": ops, "edges": edges,
		"checkpointing": map[string]any{"interval": "100ms"}}
}

// savepointPointer and the operator ID are what differ between the two
// refusals: each system's own savepoint path and ID (Flink hashes a uid
// with murmur3, StateLab with SHA-256; docs/flink-fidelity.md).
var savepointPointer = regexp.MustCompile(`checkpoint/savepoint (.+?)\. Cannot map`)

// refusal is the sentence of Flink's Checkpoints.loadAndValidateCheckpoint in
// msg, with the savepoint's path and the operator ID (which must be
// operatorID, the removed or renamed operator's in the job that took the
// savepoint) written as placeholders.
func refusal(msg, operatorID string) string {
	at := strings.Index(msg, "Failed to rollback")
	if at < 0 {
		return ""
	}
	msg = msg[at:]
	if end := strings.Index(msg, "on the CLI."); end >= 0 {
		msg = msg[:end+len("on the CLI.")]
	}
	msg = savepointPointer.ReplaceAllString(msg, "checkpoint/savepoint <savepoint>. Cannot map")
	if operatorID != "" {
		msg = strings.ReplaceAll(msg, "operator "+operatorID+" ", "operator <ID of the operator> ")
	}
	return msg
}

// checkUpgradeRefused: the upgrade of phase 1 is refused on both, with the
// same message about the same operator (op, by its ID on each side).
func checkUpgradeRefused(j *judge, sl *slResult, fl *trace, op string) {
	require.GreaterOrEqual(j.t, len(fl.Phases), 3, "Flink ran the job, the refused restore and the one with allowNonRestoredState")
	p := fl.Phases[1]
	cause := ""
	if p.Failure != nil {
		cause = p.Failure.RootCause
	}
	j.t.Logf("Flink's restore without allowNonRestoredState: %s; %s", p.FinalStatus, cause)
	j.true("Flink refused the restore (the job FAILED)", p.FinalStatus == "FAILED", p.FinalStatus)
	want := refusal(cause, fl.Phases[0].OperatorIDs[op])
	j.true("Flink's message names "+op+"'s operator ID and advises --allowNonRestoredState",
		strings.Contains(want, "<ID of the operator>") && strings.Contains(want, "--allowNonRestoredState"), want)
	if sl == nil {
		return
	}
	require.GreaterOrEqual(j.t, len(sl.phases), 3, "StateLab ran the job, the refused upgrade and the one with allowNonRestoredState")
	j.t.Logf("StateLab refused: %s", sl.phases[1].refused)
	j.equal("the upgrade without allowNonRestoredState is refused", sl.phases[1].refused != "", p.FinalStatus == "FAILED")
	j.equal("the refusal's message (savepoint path and operator ID as placeholders)",
		refusal(sl.phases[1].refused, sl.phases[0].operatorIDs[op]), want)
	// StateLab's sources never end, so its job stays RUNNING where Flink's bounded one FINISHES.
	ran := false
	for _, s := range fl.Phases[2].StatusTransitions {
		ran = ran || s.Status == "RUNNING"
	}
	j.equal("the restore with allowNonRestoredState starts", sl.phases[2].refused == "" && sl.phases[2].finalStatus == "RUNNING", ran)
}

func checkUpgradeRemove(j *judge, sl *slResult, fl *trace) {
	checkUpgradeRefused(j, sl, fl, "tally")
	j.true("Flink's count restored keys after the upgrade", len(flinkKeys(&fl.Phases[2], "open", "count")[0]) > 0, flinkKeys(&fl.Phases[2], "open", "count"))
	if sl != nil {
		j.equal("keys and counts each count subtask restored without the tally", sl.phases[2].restoredKeys["count"], flinkKeys(&fl.Phases[2], "open", "count"))
		j.equal("keys and counts each count subtask holds at the end", sl.phases[2].finalKeys["count"], flinkKeys(&fl.Phases[2], "close", "count"))
	}
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("upgrade-remove-stateful-operator")...))
}

func checkUpgradeUID(j *judge, sl *slResult, fl *trace) {
	checkUpgradeRefused(j, sl, fl, "count")
	empty := map[int]map[string]int64{0: {}, 1: {}}
	j.true("Flink's count starts empty under its new uid", jsonOf(flinkKeys(&fl.Phases[2], "open", "count")) == jsonOf(empty), flinkKeys(&fl.Phases[2], "open", "count"))
	lines := catalogueLines("upgrade-change-uid")
	// Counted from zero again after the upgrade: phase 0's totals, then phase 2's from 1.
	want := wordCountOutput(lines[0])
	for k, v := range wordCountOutput(lines[2]) {
		want[k] += v
	}
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's committed output counts from zero after the upgrade", d == 0 && l == 0 && u == 0,
		fmt.Sprintf("%d duplicated, %d lost, %d unexpected of %d", d, l, u, total(want)))
	if sl == nil {
		return
	}
	j.equal("keys and counts each count subtask restored (none)", sl.phases[2].restoredKeys["count"], flinkKeys(&fl.Phases[2], "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[2].finalKeys["count"], flinkKeys(&fl.Phases[2], "close", "count"))
	// StateLab's ground truth counts on over the upgrade; Flink's output,
	// measured against the same truth, must differ from it the same way.
	d, l, u = multisetDiff(got, wordCountOutput(lines...))
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output against counts that go on (duplicates, losses, unexpected, committed)",
			[]int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected), c.Committed}, []int{d, l, u, total(got)})
	}
}

// alertsTimeout is the alerts scenario's event-time timeout in ms.
const alertsTimeout = 7

// alertsJob: single words keyed by themselves into the alerts operator (a
// KeyedProcessFunction with event-time timers), into an exactly-once sink.
func alertsJob() map[string]any {
	return map[string]any{
		"name": "silence alerts",
		"operators": []any{op("source", "source", 2, nil),
			map[string]any{"id": "alerts", "kind": "alerts", "parallelism": 2, "maxParallelism": 128, "options": map[string]any{"timeout": fmt.Sprintf("%dms", alertsTimeout)}},
			op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
		"edges":         []any{edge("source", "alerts", "hash"), edge("alerts", "sink", "rebalance")},
		"checkpointing": map[string]any{"interval": "50ms"},
		"restart":       map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"},
	}
}

// alertsOutput is what the alerts sink must hold exactly once, computed here
// from the lines: line i of phase 0 has timestamp i; a word's timestamps
// split into sessions where the next one comes at least the timeout later
// (the alert timer at last + timeout fires before an event at that very
// time joins); each session alerts word=count.
func alertsOutput(lines []string) map[string]int {
	byWord := map[string][]int{}
	for i, l := range lines {
		byWord[l] = append(byWord[l], i)
	}
	out := map[string]int{}
	for w, ts := range byWord {
		n := 0
		for i, x := range ts {
			n++
			if i+1 == len(ts) || ts[i+1] >= x+alertsTimeout {
				out[fmt.Sprintf("%s=%d", w, n)]++
				n = 0
			}
		}
	}
	return out
}

func checkAlerts(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink restarted after the injected failure", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	if sl != nil {
		j.true("StateLab restarted after the injected failure", len(sl.phases[0].restarted) > 0, sl.phases[0].restarted)
	}
	checkExactOutput(j, sl, fl, alertsOutput(catalogueLines("alerts-timers-crash-rescale-2-3")[0]))
}

// timerFired reads the timer's timestamp out of a StateLab timer-fired
// event's message ("alerts#1: timer 57 of flink fired at …").
var timerFired = regexp.MustCompile(`timer (-?\d+) of `)

// pendingTimer is a timer pending at the savepoint as both sides restore it
// at parallelism 3: who restored it, and whether it alerted after.
type pendingTimer struct {
	KeyGroup int `json:"keyGroup"`
	Subtask  int `json:"subtask"`
	Alerts   int `json:"alerts"` // alerts it fired in phase 1: 0 or 1
}

func checkTimersAcrossRescale(j *judge, sl *slResult, fl *trace) {
	sc := catalogueScenario("alerts-timers-pending-across-rescale")
	lines := catalogueLines(sc.name)
	var all []string
	for _, ls := range lines {
		all = append(all, ls...)
	}
	checkExactOutput(j, sl, fl, alertsOutput(all))
	require.Len(j.t, fl.Phases, 2, "Flink ran the job and the restore at 3")
	kg := func(key string) int { return rescale.KeyGroupForString(key, 128) }
	owner := func(key string) int { return rescale.OperatorIndexForKeyGroup(128, 3, kg(key)) }
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 2, "StateLab ran the job and the rescale")
	// Both savepoints hold the same records (scenario.cutAtStateLab): the
	// sources' offsets Flink was held at are the ones StateLab restored.
	cut := sc.flinkCutOf(j.t)
	parts, _ := sc.layout("source")
	// m: the lowest last timestamp over the partitions, the event time both
	// watermarks stand on at the savepoint.
	m := int64(-1)
	var mKey string
	for p, n := range cut["source"] {
		j.true(fmt.Sprintf("partition %d held at a record", p), n > 0, n)
		if n > 0 && (m < 0 || parts[p][n-1].TS < m) {
			m, mKey = parts[p][n-1].TS, parts[p][n-1].Text
		}
	}
	j.t.Logf("both savepoints hold the records before offsets %v; the lowest last timestamp is %d (%s)", cut["source"], m, mKey)
	// Flink's watermark at its savepoint is m - 1 (forMonotonousTimestamps:
	// the highest timestamp minus 1) on every alerts subtask.
	wms := fl.Phases[0].SavepointWatermarks
	j.true("Flink stopped with its savepoint once both alerts subtasks' watermark stood at the cut", len(wms) == 2, wms)
	for task, wm := range wms {
		j.true("Flink's watermark at the savepoint on "+task+" is the lowest last timestamp minus 1", wm == m-1, wm)
	}
	// The timers each side restored at 3, by "key@timestamp". Flink keeps a
	// timer its function no longer needs (flinkref's Alerts never deletes
	// one; StateLab deletes the old deadline when it moves): those are left
	// out, the rest compared.
	flAlerts, slAlerts := map[string]int{}, map[string]int{}
	for _, e := range fl.Phases[1].Events {
		if e.Event == "alert" && e.Operator == "alerts" {
			flAlerts[fmt.Sprintf("%s@%d", e.Key, e.Timer)]++
		}
	}
	for _, e := range sl.phases[1].timersFired {
		if f := timerFired.FindStringSubmatch(e.Message); f != nil {
			slAlerts[e.Key+"@"+f[1]]++
		}
	}
	flTimers, slTimers := map[string]pendingTimer{}, map[string]pendingTimer{}
	stale := 0
	timersSeen := map[int]bool{}
	for sub, e := range fl.Phases[1].lastEvents("timers", "alerts") {
		timersSeen[sub] = true
		for _, tm := range e.Timers {
			if tm.Role == "stale" {
				stale++
				continue
			}
			k := fmt.Sprintf("%s@%d", tm.Key, tm.Timestamp)
			flTimers[k] = pendingTimer{KeyGroup: kg(tm.Key), Subtask: sub, Alerts: flAlerts[k]}
		}
	}
	j.true("Flink listed the restored timers of all three alerts subtasks", len(timersSeen) == 3, timersSeen)
	j.true("StateLab's alerts subtasks had taken in no record when their restored timers were read", sl.phases[1].alertsIn == 0, sl.phases[1].alertsIn)
	for sub, ts := range sl.phases[1].pendingTimers["alerts"] {
		for _, tm := range ts {
			k := fmt.Sprintf("%s@%d", tm.Key, tm.Timestamp)
			slTimers[k] = pendingTimer{KeyGroup: tm.KeyGroup, Subtask: sub, Alerts: slAlerts[k]}
		}
	}
	j.t.Logf("timers restored at 3: Flink %d (and %d stale ones its function no longer needs), StateLab %d", len(flTimers), stale, len(slTimers))
	// Each side on its own: a timer is restored by the subtask that owns
	// its key group at 3, and alerts at most once.
	for side, ts := range map[string]map[string]pendingTimer{"Flink": flTimers, "StateLab": slTimers} {
		for k, tm := range ts {
			key := k[:strings.LastIndex(k, "@")]
			j.true(side+" restored "+k+" on the owner of its key group at 3", tm.Subtask == owner(key) && tm.KeyGroup == kg(key), tm)
			j.true(side+"'s restored timer "+k+" alerted at most once", tm.Alerts <= 1, tm.Alerts)
		}
	}
	// Both watermarks stand one below the cut (StateLab's source follows
	// forMonotonousTimestamps too), so the record at m still waits for its
	// timer on both: every timer must be the same, field by field.
	_, flHasM := flTimers[fmt.Sprintf("%s@%d", mKey, m)]
	j.true("Flink holds the timer of the record at the cut (its watermark is one below it)", flHasM, flTimers)
	_, slHasM := slTimers[fmt.Sprintf("%s@%d", mKey, m)]
	j.true("StateLab holds it too (its watermark is one below it)", slHasM, slTimers)
	j.true("timers pending at the savepoint", len(flTimers) > 0, len(flTimers))
	alerting := 0
	for _, tm := range flTimers {
		alerting += tm.Alerts
	}
	j.t.Logf("timers pending at both savepoints: %d, %d of them alerted after the rescale", len(flTimers), alerting)
	j.true("a timer pending at the savepoint alerted after the rescale", alerting > 0, alerting)
	j.equal("timers pending at the savepoint, restored at 3 (key group, subtask, alerts fired after)", slTimers, flTimers)
}

// flinkCutOf is where StateLab's savepoint fell (the scenario's
// cutAtStateLab), as flinkTrace handed it to Flink.
func (sc *scenario) flinkCutOf(t *testing.T) map[string][]int64 {
	t.Helper()
	cut, err := statelabCut(t, sc)
	require.NoError(t, err)
	return cut
}

func withBackend(spec map[string]any, backend string) map[string]any {
	spec["backend"] = backend
	return spec
}

// etlJob is the sandbox's etl template (web/failure.go): source (2
// partitions) -> map (upper) -> sink, forward edges, parallelism 2.
func etlJob() map[string]any {
	return etlJobRestart(map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"})
}

// etlJobRestart is etlJob with the given restart strategy.
func etlJobRestart(restart map[string]any) map[string]any {
	return map[string]any{
		"name": "etl",
		"operators": []any{op("source", "source", 2, nil), op("map", "map", 2, map[string]any{"fn": "upper"}),
			op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
		"edges":         []any{edge("source", "map", "forward"), edge("map", "sink", "forward")},
		"checkpointing": map[string]any{"interval": "50ms"},
		"restart":       restart,
	}
}

// forwardRefusal is the reason both give for refusing a forward edge
// between different parallelisms (Flink capitalises it).
const forwardRefusal = "forward partitioning does not allow change of parallelism"

func checkForwardRescaleRefused(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 2, "Flink ran the job and tried the rescaled one")
	p := fl.Phases[1]
	j.t.Logf("Flink: phase 0 %s with savepoint %q; the job with map at 3: %q (status %q)", fl.Phases[0].FinalStatus, fl.Phases[0].Savepoint, p.BuildFailure, p.FinalStatus)
	flRefused := p.BuildFailure != "" && p.FinalStatus == ""
	j.true("Flink refused to build the job with map at 3 (never submitted)", flRefused, p)
	checkExactOutput(j, sl, fl, etlOutput(catalogueLines("forward-edge-rescale-refused")[0]))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 2, "StateLab ran the job and tried the rescale")
	j.t.Logf("StateLab refused: %s", sl.phases[1].refused)
	j.equal("the rescale of map to 3 refused, for the forward edge ("+forwardRefusal+")",
		[]bool{sl.phases[1].refused != "", strings.Contains(strings.ToLower(sl.phases[1].refused), forwardRefusal)},
		[]bool{flRefused, strings.Contains(strings.ToLower(p.BuildFailure), forwardRefusal)})
}

// etlOutput is what the etl job commits for lines: each line upper-cased,
// value 0 (no tokenizer: a line is its own key).
func etlOutput(lines []string) map[string]int {
	want := map[string]int{}
	for _, l := range lines {
		want[strings.ToUpper(l)+"=0"]++
	}
	return want
}

// regionOrder is the order the etl job's two pipelined regions (pipeline
// i: source#i, map#i, sink#i) were redeployed in: each task's region, in
// deployment order, repeats dropped.
func regionOrder(tasks []string) []string {
	var out []string
	for _, t := range tasks {
		r := "region " + t[strings.LastIndex(t, "#")+1:]
		if len(out) == 0 || out[len(out)-1] != r {
			out = append(out, r)
		}
	}
	return out
}

// checkMergedIntoBackoff: two failures in two regions under
// exponential-delay with one attempt, the second within the first's backoff.
func checkMergedIntoBackoff(j *judge, sl *slResult, fl *trace) {
	require.NotEmpty(j.t, fl.Phases, "Flink ran the phase")
	p := fl.Phases[0]
	all := "map#0,map#1,sink#0,sink#1,source#0,source#1"
	j.true("Flink's job did not fail (it went on to its savepoint)", p.FinalStatus == "FINISHED" && len(fl.Phases) == 2, p.FinalStatus)
	j.true("Flink restarted both regions", strings.Join(sorted(p.RestartedSubtasks), ",") == all, p.RestartedSubtasks)
	for task, a := range p.Attempts {
		j.true("Flink restarted "+task+" once", a == 1, a)
	}
	j.true("Flink's job went RESTARTING and back to RUNNING once", strings.Join(flinkPath(&p), ",") == "RESTARTING,RUNNING", flinkPath(&p))
	want := etlOutput(catalogueLines("second-region-failure-merges-into-backoff")[0])
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's output is exactly once", d == 0 && l == 0 && u == 0, []int{d, l, u})
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	j.equal("the job did not fail", sp.finalStatus != "FAILED" && len(sl.phases) == 2, true)
	j.equal("subtasks restarted", sp.restarted, sorted(p.RestartedSubtasks))
	j.equal("restarts per subtask", sp.deploys, p.Attempts)
	j.equal("job statuses after the first failure", jobPath(sp.statusesAfterFault), flinkPath(&p))
	j.equal("attempts the restart strategy counted (two failures, one attempt)", sp.restartAttempt, 1)
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected)}, []int{d, l, u})
	}
}

// checkSecondRegionWhileFirstWaits: two failures in two regions, the second
// while the first region waits for its restart delay.
func checkSecondRegionWhileFirstWaits(j *judge, sl *slResult, fl *trace) {
	require.NotEmpty(j.t, fl.Phases, "Flink ran the phase")
	p := fl.Phases[0]
	all := "map#0,map#1,sink#0,sink#1,source#0,source#1"
	j.true("Flink restarted both regions", strings.Join(sorted(p.RestartedSubtasks), ",") == all, p.RestartedSubtasks)
	for task, a := range p.Attempts {
		j.true("Flink restarted "+task+" once", a == 1, a)
	}
	j.true("Flink's job went RESTARTING and back to RUNNING once", strings.Join(flinkPath(&p), ",") == "RESTARTING,RUNNING", flinkPath(&p))
	byTime := sorted(p.RestartedSubtasks)
	sort.SliceStable(byTime, func(a, b int) bool { return p.RedeployedAt[byTime[a]] < p.RedeployedAt[byTime[b]] })
	flOrder := regionOrder(byTime)
	j.true("Flink restarted region 0, then region 1", strings.Join(flOrder, ",") == "region 0,region 1", fmt.Sprint(flOrder, p.RedeployedAt))
	var taskFailures []string
	for _, e := range p.Exceptions {
		if !e.Global {
			taskFailures = append(taskFailures, e.Task)
		}
	}
	if fl.FlinkVersion >= "2" { // MiniCluster 1.20 gives no exception history
		j.true("Flink handled two task failures, each on its own", len(taskFailures) == 2, taskFailures)
	}
	want := etlOutput(catalogueLines("second-region-failure-while-first-waits")[0])
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's output is exactly once", d == 0 && l == 0 && u == 0, []int{d, l, u})
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	j.equal("subtasks restarted", sp.restarted, sorted(p.RestartedSubtasks))
	j.equal("restarts per subtask", sp.deploys, p.Attempts)
	j.equal("job statuses after the first failure", jobPath(sp.statusesAfterFault), flinkPath(&p))
	j.equal("the order the regions restarted in", regionOrder(sp.deployOrder), flOrder)
	if fl.FlinkVersion >= "2" {
		j.equal("failures counted by the restart strategy", sp.restartAttempt, len(taskFailures))
	}
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected)}, []int{d, l, u})
	}
}

func checkTaskManagerLostETL(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink lost a TaskManager", len(p.LostTaskManagers) == 1, len(p.LostTaskManagers))
	j.true("Flink restarted map#0's pipeline only", strings.Join(sorted(p.RestartedSubtasks), ",") == "map#0,sink#0,source#0", p.RestartedSubtasks)
	want := etlOutput(catalogueLines("taskmanager-lost-etl")[0])
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's output is exactly once after the loss", d == 0 && l == 0 && u == 0, []int{d, l, u})
	if sl == nil {
		return
	}
	j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
	j.equal("job statuses after the loss", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected)}, []int{d, l, u})
	}
}

// ttlWords are the TTL scenario's lines: each word once, so a value is read
// again only after the pause between the phases.
var ttlWords = strings.Fields("flink state stream key group barrier checkpoint savepoint window event time watermark task slot operator source sink record offset partition")

// ttlJob is the word count with a state TTL on count's ValueState.
func ttlJob(ttl string) map[string]any {
	j := wordCount(2, "exactly-once", map[string]any{"interval": "100ms"}, nil)
	j["name"] = "word count with a TTL"
	for _, o := range j["operators"].([]any) {
		if o.(map[string]any)["id"] == "count" {
			o.(map[string]any)["options"] = map[string]any{"ttl": ttl}
		}
	}
	return j
}

// ttlJobWith is the word count with count's options (a state TTL) set.
func ttlJobWith(opts map[string]any) map[string]any {
	j := ttlJob("1s")
	for _, o := range j["operators"].([]any) {
		if o.(map[string]any)["id"] == "count" {
			o.(map[string]any)["options"] = opts
		}
	}
	return j
}

// heldAt is the keys each count subtask held at an open (event "open") or
// close ("close") in Flink's phase p, expired TTL values too.
func heldAt(p *phaseTrace, event string) map[int][]string {
	out := map[int][]string{}
	for sub, e := range p.lastEvents(event, "count") {
		names := e.RestoredKeyNames
		if event == "close" {
			names = e.KeyNames
		}
		out[sub] = append([]string{}, names...)
	}
	return out
}

func allKeys(by map[int][]string) []string {
	var out []string
	for _, ks := range by {
		out = append(out, ks...)
	}
	sort.Strings(out)
	return out
}

// checkTTLFullSnapshot: phase 0 counts every word once and stops with a
// savepoint before the TTL (2 s) passes; phase 1 restores it at count
// parallelism 3 after a 3 s pause, reads nothing and stops with a savepoint
// (after the TTL: cleanup leaves the expired counts out); phase 2 restores
// that at 2 and reads every word again. StateLab takes its savepoint for the
// rescale after the pause (its rescale is savepoint and restore in one), so
// what its phase 1 restored is not compared, only logged: the savepoint that
// phase 2 restores was taken after the TTL on both. flinkref's count names
// the keys it holds without reading them (flinkKeysOnly): a read of an
// expired value clears it, so the values Flink restored in phase 1 would
// be gone before its savepoint whatever the cleanup. With
// ttlCleanupFullSnapshot false both sides hold all 20 words after phase 2's
// restore and count each to 2 (checked: the expired values are returned).
func checkTTLFullSnapshot(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 3, "Flink ran the three phases")
	flMid, flLast := heldAt(&fl.Phases[1], "open"), heldAt(&fl.Phases[2], "open")
	j.t.Logf("Flink: keys held after restoring (past the TTL) the savepoint taken before it: %d (by subtask %v); after restoring the savepoint taken past it: %d",
		len(allKeys(flMid)), flMid, len(allKeys(flLast)))
	// The values were still in the state Flink restored after the pause
	// (expired, not read): the next savepoint is what dropped them.
	j.true("Flink's count held every word (expired, unread) after the restore past the TTL", len(allKeys(flMid)) == len(ttlWords), flMid)
	want := map[string]int{}
	for _, w := range ttlWords {
		want[w+"=1"] = 2
	}
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink counts every word from 1 again (every word=1 twice)", d == 0 && l == 0 && u == 0,
		fmt.Sprintf("%d duplicated, %d lost, %d unexpected of %d: %v", d, l, u, total(want), got))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 3, "StateLab ran the three phases")
	j.t.Logf("StateLab: keys held after restoring its rescale savepoints, both taken past the TTL: %d in phase 1, %d in phase 2",
		len(allKeys(sl.phases[1].restoredHeld["count"])), len(allKeys(sl.phases[2].restoredHeld["count"])))
	j.equal("keys each count subtask held after restoring the savepoint taken past the TTL, expired values too",
		sl.phases[2].restoredHeld["count"], flLast)
	if c := sinkOf(sl, "sink"); c != nil {
		j.t.Logf("StateLab's sink: %d committed, %d duplicated, %d lost, %d unexpected", c.Committed, c.DuplicateRecords, c.LostRecords, len(c.Unexpected))
	}
	held := map[string]int64{}
	for _, keys := range sl.phases[2].finalKeys["count"] {
		for k, v := range keys {
			held[k] = v
		}
	}
	j.equal("each word's count at the end (StateLab: its state; Flink: its last committed result)", held, lastValues(fl.Committed["sink"]))
}

// lastValues is each key's last committed value.
func lastValues(recs []committedRecord) map[string]int64 {
	out := map[string]int64{}
	for _, r := range recs {
		out[r.Key] = r.Value
	}
	return out
}

func checkTTL(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 2, "Flink ran both phases")
	// Every word once per phase, each count expired in between: every
	// result is word=1, twice.
	want := map[string]int{}
	for _, w := range ttlWords {
		want[w+"=1"] = 2
	}
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's counts start from 1 again after the pause (every word=1 twice)", d == 0 && l == 0 && u == 0,
		fmt.Sprintf("%d duplicated, %d lost, %d unexpected of %d", d, l, u, total(want)))
	empty := map[int]map[string]int64{0: {}, 1: {}}
	j.true("Flink's count returns no value after the pause", jsonOf(flinkKeys(&fl.Phases[1], "open", "count")) == jsonOf(empty), flinkKeys(&fl.Phases[1], "open", "count"))
	if sl == nil {
		return
	}
	require.Len(j.t, sl.phases, 2, "StateLab ran both phases")
	j.equal("keys and counts each count subtask returns after the pause (none: expired)", sl.phases[1].restoredKeys["count"], flinkKeys(&fl.Phases[1], "open", "count"))
	held := map[string]int64{}
	for _, keys := range sl.phases[1].finalKeys["count"] {
		for k, v := range keys {
			held[k] = v
		}
	}
	j.equal("each word's count after the second phase (StateLab: its state; Flink: its last committed result)", held, lastValues(fl.Committed["sink"]))
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("results committed", c.Committed, total(got))
	}
}

// chainedForwardJob is forwardJob with chaining on and upper starting a
// new chain (Flink's startNewChain()).
func chainedForwardJob() map[string]any {
	j := forwardJob()
	j["name"] = "all forward, chained"
	j["chaining"] = true
	for _, o := range j["operators"].([]any) {
		if o.(map[string]any)["id"] == "upper" {
			o.(map[string]any)["chain"] = engine.ChainStartNew
		}
	}
	return j
}

// chainTask is a chain's task name in flinkref's terms: Flink's chained
// name without the "Source: " prefix, then "#" and the subtask index.
func chainTask(name string, subtask int) string {
	return fmt.Sprintf("%s#%d", strings.TrimPrefix(name, "Source: "), subtask)
}

// chainName is a chained name without "Sink: ": StateLab names its sink as
// Flink names one added with sinkTo ("upper -> Sink: sink"), flinkref's
// two-phase sink is a transform() operator, which Flink names by its name
// alone ("upper -> sink").
func chainName(name string) string { return strings.ReplaceAll(name, "Sink: ", "") }

func checkChain(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	var flChains []string
	for _, v := range p.Vertices {
		flChains = append(flChains, v.Name)
	}
	sort.Strings(flChains)
	j.true("Flink ran two chains", len(flChains) == 2, flChains)
	j.true("Flink restarted subtask 1 of both chains only", strings.Join(sorted(p.RestartedSubtasks), ",") == "source -> tokenizer#1,upper -> sink#1", p.RestartedSubtasks)
	j.true("Flink's job went RESTARTING and back to RUNNING", strings.Join(flinkPath(&p), ",") == "RESTARTING,RUNNING", flinkPath(&p))
	checkExactOutput(j, sl, fl, func() map[string]int {
		// upper upper-cases each word; every word once per occurrence, value 1
		out := map[string]int{}
		for _, l := range catalogueLines("chain-fails-as-one-unit")[0] {
			for _, w := range strings.Fields(l) {
				out[strings.ToUpper(strings.ToLower(w))+"=1"]++
			}
		}
		return out
	}())
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	var slChains []string
	chainOf := map[string]string{} // operator id -> its chain's name
	for _, c := range sp.chains {
		slChains = append(slChains, chainName(c.Name))
		for _, op := range c.Operators {
			chainOf[op] = chainName(c.Name)
		}
	}
	sort.Strings(slChains)
	j.equal("the chains (Flink's chained names)", slChains, flChains)
	// StateLab reports each chained operator's subtask; a chain's subtask
	// restarted when all its operators' subtasks did.
	restarted := map[string]int{}
	for _, task := range sp.restarted {
		var op string
		var i int
		if k := strings.LastIndex(task, "#"); k > 0 {
			op = task[:k]
			fmt.Sscanf(task[k+1:], "%d", &i)
		}
		restarted[chainTask(chainOf[op], i)]++
	}
	var slRestarted []string
	for task, n := range restarted {
		var ops int
		for _, c := range sp.chains {
			if strings.HasPrefix(task, strings.TrimPrefix(chainName(c.Name), "Source: ")+"#") {
				ops = len(c.Operators)
			}
		}
		j.true("StateLab restarted every operator of chain subtask "+task, n == ops, fmt.Sprintf("%d of %d", n, ops))
		slRestarted = append(slRestarted, task)
	}
	sort.Strings(slRestarted)
	j.equal("chain subtasks restarted", slRestarted, sorted(p.RestartedSubtasks))
	j.equal("job statuses after the failure", jobPath(sp.statusesAfterFault), flinkPath(&p))
}

func forwardJob() map[string]any {
	return map[string]any{
		"name": "all forward",
		"operators": []any{op("source", "source", 2, nil), op("tokenizer", "tokenizer", 2, nil),
			op("upper", "map", 2, map[string]any{"fn": "upper"}), op("sink", "sink", 2, map[string]any{"semantics": "exactly-once"})},
		"edges":         []any{edge("source", "tokenizer", "forward"), edge("tokenizer", "upper", "forward"), edge("upper", "sink", "forward")},
		"checkpointing": map[string]any{"interval": "50ms"},
		"restart":       map[string]any{"strategy": "fixed-delay", "attempts": 3, "delay": "100ms"},
	}
}

// TestConformance runs every scenario of the catalogue on Flink (one JVM for
// all) and on StateLab and compares them.
func TestConformance(t *testing.T) {
	requireTools(t)
	for _, sc := range catalogue() {
		t.Run(sc.name, func(t *testing.T) {
			fl := flinkTrace(t, sc.name)
			j := &judge{t: t, pending: sc.pending}
			t.Logf("claim: %s", sc.claim)
			for _, d := range sc.differs {
				t.Logf("StateLab differs on purpose: %s (the live view says so: %s)", d.why, d.ui)
			}
			logFlink(t, fl)
			var sl *slResult
			if sc.flinkOnly == "" {
				var err error
				sl, err = runStateLabOnce(t, sc)
				if err != nil {
					if sc.pending == "" {
						t.Fatalf("StateLab: %v", err)
					}
					t.Logf("StateLab cannot run this scenario yet: %v (pending: %s)", err, sc.pending)
					sl = nil
				}
			} else {
				t.Logf("StateLab side not run: %s (pending: %s)", sc.flinkOnly, sc.pending)
			}
			sc.check(j, sl, fl)
			if sc.pending != "" && sl != nil && j.diffs == 0 {
				t.Logf("NOW AGREES WITH FLINK: %s no longer differs; drop its pending marker in catalogue_test.go and docs/conformance.md", sc.name)
			}
		})
	}
}

func logFlink(t *testing.T, fl *trace) {
	t.Helper()
	for _, p := range fl.Phases {
		var st []string
		for _, s := range p.StatusTransitions {
			st = append(st, fmt.Sprintf("%s@%dms", s.Status, s.AtMillis))
		}
		t.Logf("Flink %s phase %d: %s; restarted %v; checkpoints completed %d failed %d; exceptions %d; %d ms",
			fl.FlinkVersion, p.Phase, strings.Join(st, " -> "), p.RestartedSubtasks, p.Checkpoints.Completed,
			p.Checkpoints.Failed, len(p.Exceptions), p.Millis)
		for _, e := range p.Exceptions {
			t.Logf("  Flink exception (global=%v, task %q): %s", e.Global, e.Task, e.RootCause)
		}
	}
}

// --- what is compared -----------------------------------------------------------

// wordCountOutput is what a word count's sink must hold exactly once: for
// every word seen n times, the totals 1..n. Computed here from the lines,
// independently of both systems.
func wordCountOutput(lines ...[]string) map[string]int {
	n := map[string]int64{}
	out := map[string]int{}
	for _, ls := range lines {
		for _, l := range ls {
			for _, w := range strings.Fields(l) {
				w = strings.ToLower(w)
				n[w]++
				out[fmt.Sprintf("%s=%d", w, n[w])]++
			}
		}
	}
	return out
}

func committedMultiset(fl *trace, sink string) map[string]int {
	out := map[string]int{}
	for _, r := range fl.Committed[sink] {
		out[fmt.Sprintf("%s=%d", r.Key, r.Value)]++
	}
	return out
}

func multisetDiff(got, want map[string]int) (dups, losses, unexpected int) {
	for k, w := range want {
		g := got[k]
		if g > w {
			dups += g - w
		} else if g < w {
			losses += w - g
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			unexpected += g
		}
	}
	return
}

func flinkKeyGroups(p *phaseTrace, op string) map[int]kgRange {
	out := map[int]kgRange{}
	for i, e := range p.lastEvents("open", op) {
		if e.KeyGroups != nil {
			out[i] = kgRange{e.KeyGroups.Start, e.KeyGroups.End}
		}
	}
	return out
}

func flinkKeys(p *phaseTrace, kind, op string) map[int]map[string]int64 {
	out := map[int]map[string]int64{}
	for i, e := range p.lastEvents(kind, op) {
		m := e.RestoredKeys
		if kind == "close" {
			m = e.Keys
		}
		if m == nil {
			m = map[string]int64{}
		}
		out[i] = m
	}
	return out
}

func sinkOf(sl *slResult, sink string) *engine.Comparison {
	if sl == nil {
		return nil
	}
	for i := range sl.compare {
		if sl.compare[i].Sink == sink {
			return &sl.compare[i]
		}
	}
	return nil
}

func checkRescale(j *judge, sl *slResult, fl *trace) {
	want := wordCountOutput(catalogueLines("rescale-2-3")...)
	j.equal("key-group ranges of count at parallelism 2", sl.phases[0].keyGroups["count"], flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("key-group ranges of count after rescale to 3", sl.phases[1].keyGroups["count"], flinkKeyGroups(&fl.Phases[1], "count"))
	j.equal("keys and counts each count subtask restored after rescale to 3", sl.phases[1].restoredKeys["count"], flinkKeys(&fl.Phases[1], "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[1].finalKeys["count"], flinkKeys(&fl.Phases[1], "close", "count"))
	checkExactOutput(j, sl, fl, want)
}

func checkRescaleDown(j *judge, sl *slResult, fl *trace) {
	want := wordCountOutput(catalogueLines("rescale-3-2-rocksdb")...)
	for _, e := range fl.Phases[1].lastEvents("open", "count") {
		j.true("Flink's count keeps its state in RocksDB", strings.Contains(e.StateBackend, "RocksDB"), e.StateBackend)
	}
	j.equal("key-group ranges of count at parallelism 3", sl.phases[0].keyGroups["count"], flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("key-group ranges of count after rescale to 2", sl.phases[1].keyGroups["count"], flinkKeyGroups(&fl.Phases[1], "count"))
	j.equal("keys and counts each count subtask restored after rescale to 2", sl.phases[1].restoredKeys["count"], flinkKeys(&fl.Phases[1], "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[1].finalKeys["count"], flinkKeys(&fl.Phases[1], "close", "count"))
	checkExactOutput(j, sl, fl, want)
}

func checkRefusedAboveMax(j *judge, sl *slResult, fl *trace) {
	require.Len(j.t, fl.Phases, 2, "Flink ran the job and then the restore at parallelism 5")
	p := fl.Phases[1]
	cause := ""
	if p.Failure != nil {
		cause = p.Failure.RootCause
	}
	j.t.Logf("Flink's restore at parallelism 5: %s; %s", p.FinalStatus, cause)
	j.true("Flink refused the restore (the job FAILED)", p.FinalStatus == "FAILED", p.FinalStatus)
	j.true("Flink said why: the max parallelism of the restored state is lower than the parallelism", strings.Contains(cause, "maximum parallelism"), cause)
	j.true("the key-group ranges before were Flink's for max parallelism 4", jsonOf(flinkKeyGroups(&fl.Phases[0], "count")) == `{"0":{"start":0,"end":1},"1":{"start":2,"end":3}}`, flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("key-group ranges of count at parallelism 2 (max 4)", sl.phases[0].keyGroups["count"], flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("the rescale to 5 is refused", len(sl.phases) == 2 && sl.phases[1].refused != "", p.FinalStatus == "FAILED")
	if len(sl.phases) == 2 {
		j.t.Logf("StateLab refused: %s", sl.phases[1].refused)
		j.true("StateLab says why (max parallelism)", strings.Contains(sl.phases[1].refused, "max parallelism") || strings.Contains(sl.phases[1].refused, "maximum parallelism"), sl.phases[1].refused)
	}
}

// checkExactOutput: Flink's committed output is exactly want; StateLab's
// sink, compared with its ground truth, is exactly once and as large.
func checkExactOutput(j *judge, sl *slResult, fl *trace, want map[string]int) {
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's committed output is every word count exactly once", d == 0 && l == 0 && u == 0,
		fmt.Sprintf("%d duplicated, %d lost, %d unexpected of %d", d, l, u, total(want)))
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected, committed)",
			[]int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected), c.Committed}, []int{d, l, u, total(got)})
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func catalogueScenario(name string) *scenario {
	for _, sc := range catalogue() {
		if sc.name == name {
			return sc
		}
	}
	panic("no scenario " + name)
}

func catalogueLines(name string) [][]string {
	for _, sc := range catalogue() {
		if sc.name == name {
			var all [][]string
			for _, src := range sc.sources() {
				all = append(all, sc.lines[src]...)
			}
			return all
		}
	}
	return nil
}

type offset struct {
	Partition int   `json:"partition"`
	Offset    int64 `json:"offset"`
}

func checkOperatorState(j *judge, sl *slResult, fl *trace) {
	flk := map[int][]offset{}
	for i, e := range fl.Phases[1].lastEvents("open", "source") {
		for _, s := range e.RestoredSplits {
			flk[i] = append(flk[i], offset{s.Partition, s.Offset})
		}
	}
	slk := map[int][]offset{}
	for _, e := range sl.phases[1].restores {
		if e.Restore == nil || !strings.HasPrefix(e.Task, "source#") {
			continue
		}
		var i int
		fmt.Sscanf(e.Task, "source#%d", &i)
		slk[i] = nil
		for _, o := range e.Restore.Offsets {
			slk[i] = append(slk[i], offset{o.Partition, o.Offset})
		}
	}
	j.equal("partitions and offsets each source subtask restored (1 -> 2 over 5 partitions)", slk, flk)
	want := map[string]int{}
	for _, ls := range catalogueLines("operator-state-1-2") {
		for _, l := range ls {
			want[l+"=0"]++
		}
	}
	checkExactOutput(j, sl, fl, want)
}

type tallyEntry struct {
	Subtask int   `json:"subtask"`
	Count   int64 `json:"count"`
}

func parseTallies(els []string) []tallyEntry {
	var out []tallyEntry
	for _, s := range els {
		var e tallyEntry
		if err := json.Unmarshal([]byte(s), &e); err == nil {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Subtask < out[b].Subtask })
	return out
}

func checkUnion(j *judge, sl *slResult, fl *trace) {
	flk := map[int][]tallyEntry{}
	for i, e := range fl.Phases[1].lastEvents("open", "tally") {
		flk[i] = parseTallies(e.OperatorState["tallies"])
	}
	slk := map[int][]tallyEntry{}
	for _, e := range sl.phases[1].restores {
		if e.Restore == nil || !strings.HasPrefix(e.Task, "tally#") {
			continue
		}
		var i int
		fmt.Sscanf(e.Task, "tally#%d", &i)
		slk[i] = parseTallies(e.Restore.OperatorState["tallies"])
	}
	j.equal("union list elements each tally subtask restored (2 -> 3)", slk, flk)
	j.true("Flink gave every new tally subtask both old elements", len(flk) == 3 && len(flk[0]) == 2 && len(flk[2]) == 2, flk)
}

// ruleWords reads the blocked words out of broadcast-state elements, in
// whatever form each system prints an entry ("flink=block", "flink: block").
func ruleWords(els []string) []string {
	var out []string
	for _, s := range els {
		k := strings.FieldsFunc(s, func(r rune) bool { return r == '=' || r == ':' || r == ' ' || r == '"' || r == '{' || r == '}' })
		if len(k) > 0 {
			out = append(out, k[0])
		}
	}
	sort.Strings(out)
	return out
}

func checkBroadcast(j *judge, sl *slResult, fl *trace) {
	flk := map[int][]string{}
	for i, e := range fl.Phases[1].lastEvents("open", "filter") {
		flk[i] = ruleWords(e.OperatorState["rules"])
	}
	slk := map[int][]string{}
	for _, e := range sl.phases[1].restores {
		if e.Restore == nil || !strings.HasPrefix(e.Task, "filter#") {
			continue
		}
		var i int
		fmt.Sscanf(e.Task, "filter#%d", &i)
		slk[i] = ruleWords(e.Restore.OperatorState["rules"])
		j.t.Logf("StateLab restored rules on %s: %q", e.Task, e.Restore.OperatorState["rules"])
	}
	j.equal("blocked words each filter subtask restored (2 -> 3)", slk, flk)
}

func checkExactlyOnce(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink restarted after the injected failure", len(p.RestartedSubtasks) > 0, p.RestartedSubtasks)
	if sl != nil {
		j.true("StateLab restarted after the injected failure", len(sl.phases[0].restarted) > 0, sl.phases[0].restarted)
	}
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("exactly-once-crash")...))
}

func checkAtLeastOnce(j *judge, sl *slResult, fl *trace) {
	want := wordCountOutput(catalogueLines("at-least-once-crash")...)
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.t.Logf("Flink at-least-once: %d duplicated, %d lost, %d unexpected of %d", d, l, u, total(want))
	j.true("Flink's at-least-once output loses nothing", l == 0 && u == 0, fmt.Sprintf("%d lost, %d unexpected", l, u))
	j.true("Flink's at-least-once output after a crash holds duplicates", d > 0, d)
	if c := sinkOf(sl, "sink"); c != nil {
		j.t.Logf("StateLab at-least-once: %d duplicated, %d lost, %d unexpected", c.DuplicateRecords, c.LostRecords, len(c.Unexpected))
		j.equal("at-least-once sink loses nothing (lost, unexpected)", []int{c.LostRecords, len(c.Unexpected)}, []int{l, u})
		j.equal("at-least-once sink after a crash holds duplicates", c.DuplicateRecords > 0, d > 0)
	}
}

// jobPath is the job statuses a system went through after the fault, with
// repeats and the statuses only one system has (Flink's INITIALIZING and
// CREATED; FINISHED, which a StateLab streaming job never reaches) dropped.
func jobPath(statuses []string) []string {
	var out []string
	for _, s := range statuses {
		switch s {
		case "INITIALIZING", "CREATED", "FINISHED", "CANCELLING", "CANCELED":
			continue
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

func flinkPath(p *phaseTrace) []string {
	var st []string
	for _, s := range p.StatusTransitions {
		st = append(st, s.Status)
	}
	// The fault comes after the first RUNNING; StateLab's path starts after it.
	path := jobPath(st)
	if len(path) > 0 && path[0] == "RUNNING" {
		path = path[1:]
	}
	return path
}

func checkFailsWithoutRestart(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink's job FAILED", p.FinalStatus == "FAILED", p.FinalStatus)
	if sl == nil {
		return
	}
	j.equal("final job status", sl.phases[0].finalStatus, p.FinalStatus)
	j.equal("job statuses after the failure", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
}

func checkRestartsAll(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink's job went RESTARTING and back to RUNNING", strings.Contains(strings.Join(flinkPath(&p), ","), "RESTARTING,RUNNING"), flinkPath(&p))
	if sl != nil {
		j.equal("job statuses after the failure", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
		j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
	}
	checkExactOutput(j, sl, fl, wordCountOutput(catalogueLines("crash-default-restart")...))
}

// checkFixedDelayExhausted: three failures of one subtask under fixed-delay
// with 2 attempts. Flink's execution attempt number of every subtask is its
// restarts (0 for the first deployment); StateLab's deploys after the first
// fault count the same.
func checkFixedDelayExhausted(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink's job FAILED", p.FinalStatus == "FAILED", p.FinalStatus)
	j.true("Flink went RESTARTING -> RUNNING twice, then FAILING -> FAILED",
		strings.Join(flinkPath(&p), ",") == "RESTARTING,RUNNING,RESTARTING,RUNNING,FAILING,FAILED", flinkPath(&p))
	for task, a := range p.Attempts {
		j.true("Flink restarted "+task+" twice", a == 2, a)
	}
	if sl == nil {
		return
	}
	j.equal("final job status", sl.phases[0].finalStatus, p.FinalStatus)
	j.equal("job statuses after the first failure", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
	j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
	j.equal("restarts per subtask", sl.phases[0].deploys, p.Attempts)
}

// threeFailures is a phase in which task fails three times, after its 5th,
// 10th and 15th record (each once it runs again).
func threeFailures(task string) phase {
	var ph phase
	for _, n := range []int64{5, 10, 15} {
		ph.flinkFaults = append(ph.flinkFaults, flinkFault{Kind: "throw", Task: task, AfterRecords: n})
		ph.statelabFaults = append(ph.statelabFaults, slFault{cmd: engine.CmdCrashSubtask, task: task, afterRecords: n})
	}
	return ph
}

// checkRestarts: a job of one region (a hash edge) whose failures the
// restart strategy answers; path is the job statuses from the first failure
// on, every subtask restarted restarts times; final ("" for a job that runs
// on) is the final status.
func checkRestarts(final, path string, restarts int) func(j *judge, sl *slResult, fl *trace) {
	return func(j *judge, sl *slResult, fl *trace) {
		require.NotEmpty(j.t, fl.Phases, "Flink ran the phase")
		p := fl.Phases[0]
		if final != "" {
			j.true("Flink's job "+final, p.FinalStatus == final, p.FinalStatus)
		}
		j.true("Flink's job statuses after the first failure are "+path, strings.Join(flinkPath(&p), ",") == path, flinkPath(&p))
		j.true("Flink restarted all 8 subtasks", len(p.Attempts) == 8, p.Attempts)
		for task, a := range p.Attempts {
			j.true(fmt.Sprintf("Flink restarted %s %d times", task, restarts), a == restarts, a)
		}
		if sl == nil {
			return
		}
		if final != "" {
			j.equal("final job status", sl.phases[0].finalStatus, p.FinalStatus)
		}
		j.equal("job statuses after the first failure", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
		j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
		j.equal("restarts per subtask", sl.phases[0].deploys, p.Attempts)
	}
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func checkRegionFailover(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink restarted only region 1 (subtask 1 of every operator)", strings.Join(sorted(p.RestartedSubtasks), ",") == "sink#1,source#1,tokenizer#1,upper#1", p.RestartedSubtasks)
	// Flink's DefaultScheduler moves the job to RESTARTING whenever vertices
	// wait for a restart, a region's too, and back to RUNNING after.
	j.true("Flink's job went RESTARTING and back to RUNNING", strings.Join(flinkPath(&p), ",") == "RESTARTING,RUNNING", flinkPath(&p))
	if sl != nil {
		j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
		j.equal("job statuses after the failure", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
	}
}

// checkBrokenLatest: after the latest checkpoint is broken, every restore
// tries it again, none falls back, and the restart strategy gives up.
func checkBrokenLatest(j *judge, sl *slResult, fl *trace) {
	require.NotEmpty(j.t, fl.Phases, "Flink ran the phase")
	p := fl.Phases[0]
	j.true("Flink broke a checkpoint", p.BrokenCheckpoint > 0, p.BrokenCheckpoint)
	j.true("Flink's job FAILED", p.FinalStatus == "FAILED", p.FinalStatus)
	restoredBroken := p.Checkpoints.LatestRestored != nil && p.Checkpoints.LatestRestored.ID == p.BrokenCheckpoint
	j.true("Flink's last restore was of the broken checkpoint, not the one before", restoredBroken, p.Checkpoints.LatestRestored)
	j.t.Logf("Flink: checkpoint %d broken, %d restore(s), job statuses %v", p.BrokenCheckpoint, p.Checkpoints.Restored, flinkPath(&p))
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	j.equal("final job status", sp.finalStatus, p.FinalStatus)
	j.equal("job statuses after the checkpoint broke", jobPath(sp.statusesAfterFault), flinkPath(&p))
	tried := 0
	for _, id := range sp.restoreFailed {
		if id == sp.brokenCheckpoint {
			tried++
		}
	}
	j.equal("restores of the broken latest checkpoint (StateLab: failed restores naming it; Flink: restores, the last of it)",
		[]any{tried, len(sp.restoreFailed)}, []any{p.Checkpoints.Restored, p.Checkpoints.Restored})
	// Not compared: Flink deploys the tasks, which then fail to read the
	// missing files (each subtask's attempt number counts those deployments);
	// StateLab checks the checkpoint's files (state.Storage.Verify) before it
	// deploys, so a restore that fails deploys nothing.
	j.t.Logf("restarts per subtask (not compared): StateLab %v, Flink %v", sp.deploys, p.Attempts)
}

// checkCorruptPending: as checkBrokenLatest (the job FAILED, statuses,
// every restore of the damaged latest checkpoint), and why the restores
// failed: on StateLab the element that does not decode; Flink's root causes
// are logged (they name no file).
func checkCorruptPending(j *judge, sl *slResult, fl *trace) {
	checkBrokenLatest(j, sl, fl)
	p := fl.Phases[0]
	causes := map[string]int{}
	for _, e := range p.Exceptions {
		causes[e.RootCause]++
	}
	j.t.Logf("Flink's root causes: %v", causes)
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	decode := 0
	for _, e := range sp.restoreFailedMessages {
		if strings.Contains(e, "\"pending-transactions\", element 0 does not decode") {
			decode++
		}
	}
	j.t.Logf("StateLab's failed restores: %q", sp.restoreFailedMessages)
	j.true("StateLab's failed restores name the pending transaction that does not decode", decode > 0 && decode == len(sp.restoreFailedMessages), sp.restoreFailedMessages)
}

// flinkAsync is Flink's CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION message.
const flinkAsync = "Asynchronous task checkpoint failed."

// checkStorageCap: every checkpoint fails in its asynchronous part, each
// failure fails the job over, until the restart strategy gives up.
func checkStorageCap(j *judge, sl *slResult, fl *trace) {
	require.NotEmpty(j.t, fl.Phases, "Flink ran the phase")
	p := fl.Phases[0]
	path := "RESTARTING,RUNNING,RESTARTING,RUNNING,FAILING,FAILED"
	j.true("Flink's job FAILED", p.FinalStatus == "FAILED", p.FinalStatus)
	j.true("Flink's job statuses are "+path, strings.Join(flinkPath(&p), ",") == path, flinkPath(&p))
	j.true("Flink completed no checkpoint", p.Checkpoints.Completed == 0, p.Checkpoints.Completed)
	var first *failedCheckpoint
	var failures []string
	for _, h := range p.Checkpoints.History {
		if h.Status != "FAILED" {
			continue
		}
		failures = append(failures, fmt.Sprintf("%d: %s", h.ID, h.Failure))
		if first == nil && strings.HasPrefix(h.Failure, flinkAsync) {
			first = &failedCheckpoint{ID: h.ID, Reason: string(engine.CheckpointAsyncException)}
		}
	}
	j.t.Logf("Flink failed checkpoints: %q", failures)
	j.true("Flink's checkpoints failed in their asynchronous part", first != nil, failures)
	failovers := 0
	for _, e := range p.Exceptions {
		if e.Global && strings.Contains(e.RootCause, engine.ExceededTolerableFailuresMessage) {
			failovers++
		}
	}
	if fl.FlinkVersion >= "2" { // MiniCluster 1.20 gives no exception history
		j.true("Flink failed over three times past the threshold", failovers == 3, p.Exceptions)
	}
	for task, a := range p.Attempts {
		j.true("Flink restarted "+task+" twice", a == 2, a)
	}
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	slPath := jobPath(sp.statusesAfterFault)
	if len(slPath) > 0 && slPath[0] == "RUNNING" {
		slPath = slPath[1:] // from the phase's start: the first RUNNING, as flinkPath drops it
	}
	j.equal("final job status", sp.finalStatus, p.FinalStatus)
	j.equal("job statuses", slPath, flinkPath(&p))
	j.equal("checkpoints completed", sp.checkpoints.Completed, p.Checkpoints.Completed)
	reasons := map[string]bool{}
	for _, f := range sp.failedCheckpoints {
		reasons[f.Reason] = true
	}
	j.equal("why StateLab's checkpoints failed", reasons, map[string]bool{string(engine.CheckpointAsyncException): true})
	if fl.FlinkVersion >= "2" {
		slFailovers := 0
		for k, m := range sp.statusMessages {
			// the failure handled: RESTARTING, or FAILING once the strategy gives up (FAILED repeats it)
			st := sp.statusesAfterFault[k]
			if (st == "RESTARTING" || st == "FAILING") && strings.Contains(m, engine.ExceededTolerableFailuresMessage) {
				slFailovers++
			}
		}
		j.equal("failovers past the tolerable-failed-checkpoints threshold", slFailovers, failovers)
	}
	// The first deployment comes before the phase's first step (engine.NewStepper deploys): every
	// deployment seen is a restart.
	j.equal("restarts per subtask", sp.deploys, p.Attempts)
}

// flinkExpired is Flink's CheckpointFailureReason.CHECKPOINT_EXPIRED message.
const flinkExpired = "Checkpoint expired before completing."

func checkExpired(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	var failures []string
	var first *failedCheckpoint
	for _, h := range p.Checkpoints.History {
		if h.Status != "FAILED" {
			continue
		}
		failures = append(failures, fmt.Sprintf("%d: %s", h.ID, h.Failure))
		if first == nil {
			reason := h.Failure
			if strings.HasPrefix(h.Failure, flinkExpired) {
				reason = string(engine.CheckpointExpired)
			}
			first = &failedCheckpoint{ID: h.ID, Reason: reason}
		}
	}
	j.t.Logf("Flink failed checkpoints: %q", failures)
	j.true("Flink's first failed checkpoint is 3, expired", first != nil && first.ID == 3 && first.Reason == string(engine.CheckpointExpired), first)
	j.true("Flink failed the job over (RESTARTING)", strings.Contains(strings.Join(flinkPath(&p), ","), "RESTARTING"), flinkPath(&p))
	j.true("Flink restarted every subtask", len(p.RestartedSubtasks) == 8, p.RestartedSubtasks)
	want := wordCountOutput(catalogueLines("expired-checkpoint")...)
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's output is exactly once after the failover", d == 0 && l == 0 && u == 0, []int{d, l, u})
	if sl == nil {
		return
	}
	sp := sl.phases[0]
	var slFirst *failedCheckpoint
	if len(sp.failedCheckpoints) > 0 {
		slFirst = &sp.failedCheckpoints[0]
		j.t.Logf("StateLab failed checkpoints: %+v", sp.failedCheckpoints)
	}
	j.equal("the first failed checkpoint (id, reason)", slFirst, first)
	flinkWhy, slWhy := false, false
	for _, e := range p.Exceptions {
		flinkWhy = flinkWhy || (e.Global && strings.Contains(e.RootCause, engine.ExceededTolerableFailuresMessage))
	}
	for _, m := range sp.statusMessages {
		slWhy = slWhy || strings.Contains(m, engine.ExceededTolerableFailuresMessage)
	}
	if fl.FlinkVersion >= "2" { // MiniCluster 1.20 gives no exception history
		j.equal("the failover says: "+engine.ExceededTolerableFailuresMessage, slWhy, flinkWhy)
	}
	j.equal("job statuses after the stalled snapshot", jobPath(sp.statusesAfterFault), flinkPath(&p))
	j.equal("subtasks restarted", sp.restarted, sorted(p.RestartedSubtasks))
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected)}, []int{d, l, u})
	}
}

func checkTaskManagerLost(j *judge, sl *slResult, fl *trace) {
	p := fl.Phases[0]
	j.true("Flink lost a TaskManager", len(p.LostTaskManagers) == 1, len(p.LostTaskManagers))
	j.true("Flink restarted every subtask (one region: hash edge)", len(p.RestartedSubtasks) == 8, p.RestartedSubtasks)
	if sl != nil {
		j.equal("subtasks restarted", sl.phases[0].restarted, sorted(p.RestartedSubtasks))
		j.equal("job statuses after the loss", jobPath(sl.phases[0].statusesAfterFault), flinkPath(&p))
	}
	want := wordCountOutput(catalogueLines("taskmanager-lost")...)
	got := committedMultiset(fl, "sink")
	d, l, u := multisetDiff(got, want)
	j.true("Flink's output is exactly once after the loss", d == 0 && l == 0 && u == 0, []int{d, l, u})
	if c := sinkOf(sl, "sink"); c != nil {
		j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{c.DuplicateRecords, c.LostRecords, len(c.Unexpected)}, []int{d, l, u})
	}
}

// TestCatalogueDifferencesInTheUI: where a scenario says StateLab differs
// from Flink on purpose, the live view's story says the same: its sentence
// is in the English and the Chinese catalogue, and the story's code uses it
// (static/js/views/explain.js). Runs without Flink.
func TestCatalogueDifferencesInTheUI(t *testing.T) {
	cats := map[string]map[string]string{}
	for _, lang := range []string{"en", "zh"} {
		b, err := os.ReadFile(filepath.Join("..", "static", "i18n", lang+".json"))
		require.NoError(t, err)
		m := map[string]string{}
		require.NoError(t, json.Unmarshal(b, &m), lang)
		cats[lang] = m
	}
	story, err := os.ReadFile(filepath.Join("..", "static", "js", "views", "explain.js"))
	require.NoError(t, err)
	n := 0
	for _, sc := range catalogue() {
		for _, d := range sc.differs {
			n++
			require.NotEmpty(t, d.why, "%s: a difference without its reason", sc.name)
			for lang, m := range cats {
				require.NotEmpty(t, m[d.ui], "%s: %s.json has no %q", sc.name, lang, d.ui)
			}
			require.Contains(t, string(story), "'"+d.ui+"'", "%s: the story never shows %q", sc.name, d.ui)
		}
	}
	require.Positive(t, n, "no scenario names a difference")
}
