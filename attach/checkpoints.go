package attach

import (
	"cmp"
	"slices"
)

// Labels Flink's web UI uses on its Checkpoints tab. StateLab shows the same
// words so a learner recognises them on a real cluster.
const (
	LabelTriggered              = "Triggered"
	LabelInProgress             = "In Progress"
	LabelCompleted              = "Completed"
	LabelFailed                 = "Failed"
	LabelRestored               = "Restored"
	LabelLatestRestore          = "Latest Restore"
	LabelTriggerTime            = "Trigger Time"
	LabelLatestAcknowledgement  = "Latest Acknowledgement"
	LabelEndToEndDuration       = "End to End Duration"
	LabelCheckpointedDataSize   = "Checkpointed Data Size"
	LabelFullCheckpointDataSize = "Full Checkpoint Data Size"
	LabelAcknowledged           = "Acknowledged"
	LabelProcessedPersisted     = "Processed (persisted) in-flight data"
)

// Checkpoint statuses as Flink spells them (CheckpointStatsStatus).
const (
	StatusInProgress = "IN_PROGRESS"
	StatusCompleted  = "COMPLETED"
	StatusFailed     = "FAILED"
)

// Checkpoints is a job's checkpoint statistics.
type Checkpoints struct {
	// Enabled is false when the job runs without checkpointing (Flink
	// answers 404 "Checkpointing has not been enabled."); the rest is empty.
	Enabled bool             `json:"enabled"`
	Counts  CheckpointCounts `json:"counts"`
	// History is what Flink keeps (web.checkpoints.history, 10 by default),
	// newest first as Flink lists it; Timeline gives it oldest first.
	History         []Checkpoint        `json:"history"`
	LatestCompleted *Checkpoint         `json:"latestCompleted,omitempty"`
	LatestSavepoint *Checkpoint         `json:"latestSavepoint,omitempty"`
	LatestFailed    *Checkpoint         `json:"latestFailed,omitempty"`
	LatestRestored  *RestoredCheckpoint `json:"latestRestored,omitempty"`
}

// Checkpoint is one checkpoint or savepoint. Times are Unix milliseconds,
// durations milliseconds and sizes bytes, as Flink reports them.
type Checkpoint struct {
	ID                 int64  `json:"id"`
	Status             string `json:"status"`
	Savepoint          bool   `json:"savepoint"`
	Type               string `json:"type"` // CHECKPOINT, UNALIGNED_CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT
	TriggerTimestamp   int64  `json:"triggerTimestamp"`
	LatestAckTimestamp int64  `json:"latestAckTimestamp"`
	EndToEndDuration   int64  `json:"endToEndDuration"`
	// CheckpointedSize is what this checkpoint wrote ("Checkpointed Data
	// Size"); for an incremental checkpoint it is less than the full state.
	CheckpointedSize int64 `json:"checkpointedSize"`
	// FullSize is the whole state it covers ("Full Checkpoint Data Size"),
	// -1 when Flink does not report it (before 1.15 it reported one size).
	FullSize        int64  `json:"fullSize"`
	ProcessedData   int64  `json:"processedData"`
	PersistedData   int64  `json:"persistedData"`
	NumSubtasks     int    `json:"numSubtasks"`
	NumAcknowledged int    `json:"numAcknowledged"`
	ExternalPath    string `json:"externalPath,omitempty"`
	Discarded       bool   `json:"discarded,omitempty"`
	FailureMessage  string `json:"failureMessage,omitempty"`
}

// RestoredCheckpoint is the checkpoint or savepoint the job last restored from.
type RestoredCheckpoint struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restoreTimestamp"`
	Savepoint        bool   `json:"savepoint"`
	ExternalPath     string `json:"externalPath,omitempty"`
}

// Timeline is the history oldest first (by checkpoint ID, which Flink
// assigns in trigger order).
func (c Checkpoints) Timeline() []Checkpoint {
	t := slices.Clone(c.History)
	slices.SortStableFunc(t, func(a, b Checkpoint) int { return cmp.Compare(a.ID, b.ID) })
	return t
}

func buildCheckpoints(s CheckpointingStatistics, enabled bool) Checkpoints {
	c := Checkpoints{Enabled: enabled, History: []Checkpoint{}}
	if !enabled {
		return c
	}
	if s.Counts != nil {
		c.Counts = *s.Counts
	}
	for _, h := range s.History {
		c.History = append(c.History, toCheckpoint(h))
	}
	c.LatestCompleted = toCheckpointPtr(s.Latest.Completed)
	c.LatestSavepoint = toCheckpointPtr(s.Latest.Savepoint)
	c.LatestFailed = toCheckpointPtr(s.Latest.Failed)
	if r := s.Latest.Restored; r != nil {
		c.LatestRestored = &RestoredCheckpoint{ID: r.ID, RestoreTimestamp: r.RestoreTimestamp,
			Savepoint: r.IsSavepoint, ExternalPath: r.ExternalPath}
	}
	return c
}

// toCheckpoint maps Flink's two size fields onto what they mean: since 1.15
// checkpointed_size is the data written and state_size the full state;
// before, state_size alone was the data written.
func toCheckpoint(h CheckpointStatistics) Checkpoint {
	c := Checkpoint{ID: h.ID, Status: h.Status, Savepoint: h.IsSavepoint, Type: h.CheckpointType,
		TriggerTimestamp: h.TriggerTimestamp, LatestAckTimestamp: h.LatestAckTimestamp,
		EndToEndDuration: h.EndToEndDuration, CheckpointedSize: h.StateSize, FullSize: -1,
		ProcessedData: h.ProcessedData, PersistedData: h.PersistedData,
		NumSubtasks: h.NumSubtasks, NumAcknowledged: h.NumAcknowledged,
		ExternalPath: h.ExternalPath, Discarded: h.Discarded, FailureMessage: firstLine(h.FailureMessage)}
	if h.CheckpointedSize != nil {
		c.CheckpointedSize, c.FullSize = *h.CheckpointedSize, h.StateSize
	}
	return c
}

func toCheckpointPtr(h *CheckpointStatistics) *Checkpoint {
	if h == nil {
		return nil
	}
	c := toCheckpoint(*h)
	return &c
}
