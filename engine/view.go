package engine

import (
	"time"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// Snapshot is the whole picture of a running job as plain data, for a new
// viewer (the web sends it first) and for lesson checks. It is built outside
// the engine's hot paths and shares no memory with the engine.
type Snapshot struct {
	Driver   string        `json:"driver"` // "step" or "live"
	Seed     int64         `json:"seed"`
	Step     int64         `json:"step"`
	At       time.Duration `json:"at"`
	Paused   bool          `json:"paused"`
	Speed    float64       `json:"speed"`
	Backend  Backend       `json:"backend"`
	Job      JobView       `json:"job"`
	Channels []ChannelView `json:"channels"`
	// TaskManagers in id order, with the slots each offers.
	TaskManagers []TaskManagerView `json:"taskManagers"`
	Checkpoints  CheckpointsView   `json:"checkpoints"`
	Sources      []SourceView      `json:"sources"`
	Sinks        []SinkView        `json:"sinks"`
	Commands     []LoggedCommand   `json:"commands"`
	Counters     Counters          `json:"counters"`
}

// JobView is the job graph with its subtasks, the shape of the web protocol's
// "job" object.
type JobView struct {
	// Name is the job's name as the spec gives it (any text).
	Name string `json:"name"`
	// CheckpointDir is the job's directory name in checkpoint storage: the
	// name itself when it is a safe directory name, otherwise a safe name
	// derived from it (state.SafeDirName).
	CheckpointDir string         `json:"checkpointDir"`
	Status        JobStatus      `json:"status"`
	Attempt       int            `json:"attempt"`
	Operators     []OperatorView `json:"operators"`
	Edges         []EdgeView     `json:"edges"`
	// Chains are the tasks operator chaining makes, named as Flink's Web
	// UI names them (chain.go); every operator is in exactly one.
	Chains []ChainView `json:"chains,omitempty"`
	// Rescale is the rescale in progress, if any.
	Rescale *RescaleView `json:"rescale,omitempty"`
	// WaitingForResources is set while the job needs more slots than the
	// alive TaskManagers offer.
	WaitingForResources bool `json:"waitingForResources"`
	SlotsNeeded         int  `json:"slotsNeeded"`
	SlotsAvailable      int  `json:"slotsAvailable"`
	RestartsLeft        int  `json:"restartsLeft"`
	// Restart is the restart strategy and where it stands.
	Restart RestartView `json:"restart"`
	// Failover is jobmanager.execution.failover-strategy: region or full.
	Failover string `json:"failover"`
	// Scheduler is default (DefaultScheduler: Failover applies) or reactive
	// (the AdaptiveScheduler's reactive mode, which restarts the whole job
	// on any failure whatever Failover says).
	Scheduler string `json:"scheduler"`
	// Heartbeat is how the JobManager notices a crashed TaskManager.
	Heartbeat HeartbeatView `json:"heartbeat"`
	// TolerableFailedCheckpoints and FailedCheckpointsInARow are the
	// CheckpointFailureManager's threshold and count.
	TolerableFailedCheckpoints int `json:"tolerableFailedCheckpoints"`
	FailedCheckpointsInARow    int `json:"failedCheckpointsInARow"`
	// SlotRequestDeadline is when a job waiting for slots fails
	// (slot.request.timeout), while it waits.
	SlotRequestDeadline time.Duration `json:"slotRequestDeadline,omitempty"`
}

// HeartbeatView is the cluster's heartbeat settings (heartbeat.go).
type HeartbeatView struct {
	// Timeout is heartbeat.timeout in job time (StateLab's simplified
	// 100 ms unless set).
	Timeout time.Duration `json:"timeout"`
	// Interval is heartbeat.interval; 0 when unset, and then a crashed
	// TaskManager is noticed Timeout after its crash (simplified).
	Interval time.Duration `json:"interval,omitempty"`
	// RPCFailureThreshold is heartbeat.rpc-failure-threshold when Interval
	// is set (0: off).
	RPCFailureThreshold int `json:"rpcFailureThreshold,omitempty"`
}

// RestartView is the job's restart strategy as the UI shows it.
type RestartView struct {
	// Strategy is none, fixed-delay, failure-rate or exponential-delay.
	Strategy string `json:"strategy"`
	// Default is set when nothing was configured and Flink's default rule
	// chose Strategy (none without checkpointing, exponential-delay with).
	Default bool `json:"default"`
	// Class is the Flink class that implements Strategy.
	Class string `json:"class"`
	// Description gives the parameters in words.
	Description string `json:"description"`
	// Attempt is the restarts so far as the strategy counts them.
	Attempt int `json:"attempt"`
	// MaxAttempts is the limit (0: unlimited, or a failure rate).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// NextDelay is the backoff of the pending restart, or of the last one.
	NextDelay time.Duration `json:"nextDelay"`
	// RestartAt is when the pending restart happens (while RESTARTING).
	RestartAt time.Duration `json:"restartAt,omitempty"`
}

// OperatorView is one operator (a JobVertex) and its subtasks.
type OperatorView struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	Keyed          bool   `json:"keyed"`
	// UID is the operator's uid (empty: none); OperatorID is Flink's
	// OperatorID, the key its state is filed under (uid.go).
	UID        string        `json:"uid,omitempty"`
	OperatorID string        `json:"operatorId"`
	Subtasks   []SubtaskView `json:"subtasks"`
	// Chain is the name of the chain (task) the operator runs in.
	Chain string `json:"chain,omitempty"`
}

// SubtaskView is one subtask (an ExecutionVertex's current attempt).
type SubtaskView struct {
	Index       int        `json:"index"`
	Name        string     `json:"name"`
	Status      TaskStatus `json:"status"`
	TaskManager string     `json:"taskManager"`
	Slot        int        `json:"slot"`
	// KeyGroups is the key-group range of a keyed operator's subtask.
	KeyGroups  *rescale.KeyGroupRange `json:"keyGroups,omitempty"`
	RecordsIn  int64                  `json:"recordsIn"`
	RecordsOut int64                  `json:"recordsOut"`
	Watermark  int64                  `json:"watermark"`
	// Aligning is the checkpoint whose barriers the subtask is aligning (0 = none).
	Aligning int64 `json:"aligning,omitempty"`
	// Backpressured is set when an output channel is full.
	Backpressured bool `json:"backpressured"`
	// RestoredFrom is the checkpoint the subtask restored from (0 = fresh).
	RestoredFrom int64 `json:"restoredFrom"`
	// Offsets are a source subtask's partitions and next offsets.
	Offsets []PartitionOffset `json:"offsets,omitempty"`
	// OperatorState is operator state by name, rendered (a Live subtask's
	// as it last published it, about four times a second).
	OperatorState map[string][]string `json:"operatorState,omitempty"`
	// State is the keyed backend's figures (a Live subtask's measured at most
	// every second).
	State   *state.BackendMetrics `json:"state,omitempty"`
	Failure string                `json:"failure,omitempty"`
}

// EdgeView is one edge of the job graph.
type EdgeView struct {
	From        string      `json:"from"`
	To          string      `json:"to"`
	Partitioner Partitioner `json:"partitioner"`
}

// ChannelView is one channel between two subtasks.
type ChannelView struct {
	Name      string          `json:"name"`
	From      string          `json:"from"`
	To        string          `json:"to"`
	Edge      int             `json:"edge"` // index into Job.Edges
	Capacity  int             `json:"capacity"`
	Queued    []QueuedElement `json:"queued"`
	Blocked   bool            `json:"blocked"`
	BlockedBy int64           `json:"blockedBy,omitempty"`
	Full      bool            `json:"full"`
	Sent      int64           `json:"sent"`
	Delivered int64           `json:"delivered"`
	// Chained is set for a channel inside an operator chain: records pass
	// by a method call and never queue in it.
	Chained bool `json:"chained,omitempty"`
}

// QueuedElement is one element waiting in a channel, head first.
type QueuedElement struct {
	Kind       string `json:"kind"` // records, barrier, watermark
	Records    int    `json:"records,omitempty"`
	Checkpoint int64  `json:"checkpoint,omitempty"`
	Watermark  int64  `json:"watermark,omitempty"`
	// Unaligned marks a barrier of an unaligned checkpoint, which went
	// ahead of the records queued before it.
	Unaligned bool `json:"unaligned,omitempty"`
}

// TaskManagerView is one TaskManager.
type TaskManagerView struct {
	ID     string   `json:"id"`
	Status string   `json:"status"` // ALIVE or LOST
	Slots  int      `json:"slots"`
	Tasks  []string `json:"tasks"` // subtasks placed on it
	// LocalDir is the node's local disk (pebble working directories).
	LocalDir string `json:"localDir,omitempty"`
}

// RescaleView is a rescale in progress.
type RescaleView struct {
	Operator  string `json:"operator"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	Phase     string `json:"phase"` // savepoint, stopping, restoring
	Savepoint int64  `json:"savepoint"`
}

// CheckpointsView is what Flink's checkpoint tab shows.
type CheckpointsView struct {
	// Mode is the mode the job's barriers are handled with: the spec's, or
	// at-least-once when it sets no checkpoint interval
	// (CheckpointingSpec.BarrierMode).
	Mode CheckpointMode `json:"mode"`
	// ModeNoInterval says the spec asks for exactly-once but sets no
	// checkpoint interval: as in Flink (StreamGraph.getCheckpointingMode)
	// its barriers, by hand too, are counted, not aligned, and Mode is
	// at-least-once.
	ModeNoInterval bool          `json:"modeNoInterval,omitempty"`
	Interval       time.Duration `json:"interval"`
	// Unaligned is execution.checkpointing.unaligned (unaligned.go).
	Unaligned bool `json:"unaligned,omitempty"`
	// UnalignedIgnored says the spec asks for unaligned checkpoints with
	// mode at-least-once (or no interval): as Flink does (StreamingJobGraphGenerator, a
	// warning in its log), the setting is turned off and Unaligned is false.
	UnalignedIgnored bool `json:"unalignedIgnored,omitempty"`
	// AlignedCheckpointTimeout is
	// execution.checkpointing.aligned-checkpoint-timeout when unaligned
	// checkpoints are on: each checkpoint starts aligned and a subtask
	// switches it to unaligned once it has taken this long since the
	// trigger. Absent (0) when every checkpoint starts unaligned or none is.
	AlignedCheckpointTimeout time.Duration    `json:"alignedCheckpointTimeout,omitempty"`
	Counts                   CheckpointCounts `json:"counts"`
	// MaxConcurrent is the job's max-concurrent-checkpoints (Flink's
	// execution.checkpointing.max-concurrent-checkpoints, default 1): while
	// that many are in progress a checkpoint asked for by hand waits.
	MaxConcurrent int `json:"maxConcurrent"`
	// Queued counts the checkpoints asked for by hand that wait for one in
	// progress to end (CheckpointRequestDecider's queue; coordinator.go).
	Queued int `json:"queued,omitempty"`
	// QueuedPeriodic counts the periodic checkpoint requests that wait in
	// the same queue, behind those asked for by hand: one for each tick of
	// the checkpoint interval while max-concurrent-checkpoints were
	// pending. Each starts when a pending checkpoint ends.
	QueuedPeriodic int `json:"queuedPeriodic,omitempty"`
	// History lists recent checkpoints and savepoints, newest last.
	History []CheckpointStats `json:"history"`
	// Retained lists the checkpoints and savepoints in storage.
	Retained []state.CheckpointInfo `json:"retained"`
	Storage  state.StorageMetrics   `json:"storage"`
	// LatestRestore is the last restore (nil before any).
	LatestRestore *RestoreStats `json:"latestRestore,omitempty"`
}

// CheckpointCounts are Flink's checkpoint counts.
type CheckpointCounts struct {
	Triggered  int `json:"triggered"`
	InProgress int `json:"inProgress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Restored   int `json:"restored"`
}

// Checkpoint statuses, as Flink names them.
const (
	CheckpointInProgress = "IN_PROGRESS"
	CheckpointCompleted  = "COMPLETED"
	CheckpointFailed     = "FAILED"
)

// CheckpointStats is one checkpoint or savepoint with the figures Flink's UI
// shows. Durations are virtual on the Stepper.
type CheckpointStats struct {
	ID               int64         `json:"id"`
	Savepoint        bool          `json:"savepoint"`
	Stop             bool          `json:"stop,omitempty"` // stop-with-savepoint
	Status           string        `json:"status"`
	TriggerTime      time.Duration `json:"triggerTime"`
	LatestAck        time.Duration `json:"latestAck"`
	EndToEndDuration time.Duration `json:"endToEndDuration"`
	Acknowledged     int           `json:"acknowledged"`
	Total            int           `json:"total"`
	// StateSize is the full state ("Full Checkpoint Data Size"),
	// CheckpointedSize what this checkpoint wrote ("Checkpointed Data Size").
	StateSize        int64  `json:"stateSize"`
	CheckpointedSize int64  `json:"checkpointedSize"`
	FailureMessage   string `json:"failureMessage,omitempty"`
	// FailureReason is Flink's CheckpointFailureReason of a failed checkpoint.
	FailureReason CheckpointFailureReason `json:"failureReason,omitempty"`
	Subtasks      []AckStats              `json:"subtasks"`
	Discarded     bool                    `json:"discarded,omitempty"`
	// Unaligned is set when any subtask took the checkpoint unaligned;
	// ChannelStateSize is the channel state (in-flight records) it holds.
	Unaligned        bool  `json:"unaligned,omitempty"`
	ChannelStateSize int64 `json:"channelStateSize,omitempty"`
}

// AckStats is one subtask's acknowledgement of a checkpoint.
type AckStats struct {
	Task     string `json:"task"`
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	// AckTime is when the acknowledgement reached the coordinator;
	// EndToEnd = AckTime - trigger time.
	AckTime           time.Duration `json:"ackTime"`
	EndToEnd          time.Duration `json:"endToEnd"`
	SyncDuration      time.Duration `json:"syncDuration"`
	AsyncDuration     time.Duration `json:"asyncDuration"`
	AlignmentDuration time.Duration `json:"alignmentDuration"`
	StartDelay        time.Duration `json:"startDelay"`
	StateSize         int64         `json:"stateSize"`
	CheckpointedSize  int64         `json:"checkpointedSize"`
	// Unaligned is set when the subtask took the checkpoint unaligned;
	// ChannelStateSize is the in-flight data it persisted (Flink's
	// "Persisted in-flight data"), part of StateSize.
	Unaligned        bool  `json:"unaligned,omitempty"`
	ChannelStateSize int64 `json:"channelStateSize,omitempty"`
}

// RestoreStats is Flink's "latest restore".
type RestoreStats struct {
	Checkpoint  int64         `json:"checkpoint"`
	Savepoint   bool          `json:"savepoint"`
	RestoreTime time.Duration `json:"restoreTime"`
	// LocalBytes and RemoteBytes are the keyed state bytes the restore read
	// from task-local copies on the TaskManagers' disks and from checkpoint
	// storage (state.backend.local-recovery; localrecovery.go).
	LocalBytes  int64 `json:"localBytes"`
	RemoteBytes int64 `json:"remoteBytes"`
	// Skipped lists checkpoints that could not be read (corrupt or missing files).
	Skipped []string `json:"skipped,omitempty"`
}

// SourceView is one source operator's topic: its partitions, their length,
// and the subtask reading each.
type SourceView struct {
	Operator   string          `json:"operator"`
	Partitions []PartitionView `json:"partitions"`
	Records    int64           `json:"records"` // all records in the topic
	// CheckpointError says why the newest checkpoint's offsets could not
	// be read (a corrupt checkpoint); Checkpointed is then -1.
	CheckpointError string `json:"checkpointError,omitempty"`
}

// PartitionView is one partition of a source topic.
type PartitionView struct {
	Partition int   `json:"partition"`
	End       int64 `json:"end"` // offset after the last record
	// Owner is the subtask reading it (-1 when none runs).
	Owner  int   `json:"owner"`
	Offset int64 `json:"offset"` // next offset the owner reads
	// Checkpointed is the offset in the latest completed checkpoint (-1: none).
	Checkpointed int64 `json:"checkpointed"`
}

// SinkView is one sink: its committed output against the ground truth.
type SinkView struct {
	Operator     string            `json:"operator"`
	Semantics    string            `json:"semantics"`
	Committed    int               `json:"committed"`
	Transactions []TransactionView `json:"transactions"`
	Comparison   *Comparison       `json:"comparison,omitempty"`
}

// TransactionView is a sink transaction not yet committed.
type TransactionView struct {
	ID         string `json:"id"`
	Task       string `json:"task"`
	Checkpoint int64  `json:"checkpoint,omitempty"`
	Status     string `json:"status"`
	Records    int    `json:"records"`
}

// Counters are running totals of the engine. Restores counts executions
// that restored a checkpoint or savepoint, once every subtask has restored
// its share (a job waiting for slots has restored nothing yet).
type Counters struct {
	Crashes   int `json:"crashes"`
	Restarts  int `json:"restarts"`
	Restores  int `json:"restores"`
	Rescales  int `json:"rescales"`
	Failovers int `json:"failovers"`
	// ManualRestores counts restore commands.
	ManualRestores int `json:"manualRestores"`
}

// TaskStateView is the state inspector's view of one subtask.
type TaskStateView struct {
	Task      string                  `json:"task"`
	KeyGroups *rescale.KeyGroupRange  `json:"keyGroups,omitempty"`
	Keyed     []state.Entry           `json:"keyed"`
	Operator  []state.OperatorEntry   `json:"operator"`
	Metrics   *state.BackendMetrics   `json:"metrics,omitempty"`
	PerGroup  []state.KeyGroupMetrics `json:"perKeyGroup,omitempty"`
	// Timers are the subtask's pending timers in firing order (an operator
	// with a timer service), and Watermark its current event time.
	Timers    []state.Timer `json:"timers,omitempty"`
	Watermark int64         `json:"watermark,omitempty"`
	Error     string        `json:"error,omitempty"`
}
