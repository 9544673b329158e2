package attach

// The types in this file mirror the JSON Flink's REST API (v1) answers, as
// its specification (rest_v1_dispatcher.yml) and its message classes
// (JobIdsWithStatusOverview, JobDetailsInfo, JobVertexDetailsInfo,
// JobPlanInfo, CheckpointingStatistics) define them. Only the fields StateLab
// reads are declared: a field Flink adds, or whose type changes between
// versions (the plan's optimizer_properties went from a JSON object to a
// string), is ignored rather than breaking the decoding. A field that older
// versions lack is a pointer, so "absent" and "zero" stay distinct.

// JobIDWithStatus is one entry of GET /jobs.
type JobIDWithStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type jobsResponse struct {
	Jobs *[]JobIDWithStatus `json:"jobs"`
}

// JobDetails is GET /jobs/{jobid} (JobDetailsInfo).
type JobDetails struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
	Duration  int64  `json:"duration"`
	// MaxParallelism is the job-wide setting of the ExecutionConfig (-1 when
	// the job sets none; absent before Flink 1.13). It is not what key groups
	// are computed from: each vertex has its own, resolved, max parallelism.
	MaxParallelism *int64             `json:"maxParallelism"`
	Vertices       []JobDetailsVertex `json:"vertices"`
}

// JobDetailsVertex is one entry of JobDetails.Vertices (JobDetailsVertexInfo).
type JobDetailsVertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism *int   `json:"parallelism"`
	// MaxParallelism is the vertex's number of key groups; Flink reports it
	// here and in GET /jobs/{jobid}/vertices/{vertexid} since 1.13
	// (FLINK-12607). The plan never carries it.
	MaxParallelism *int   `json:"maxParallelism"`
	Status         string `json:"status"`
}

// VertexDetails is GET /jobs/{jobid}/vertices/{vertexid} (JobVertexDetailsInfo),
// read only when JobDetailsVertex lacks maxParallelism.
type VertexDetails struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Parallelism    *int   `json:"parallelism"`
	MaxParallelism *int   `json:"maxParallelism"`
}

type planResponse struct {
	Plan *Plan `json:"plan"`
}

// Plan is the "plan" object of GET /jobs/{jobid}/plan (JobPlanInfo): the job
// graph as JsonPlanGenerator writes it.
type Plan struct {
	JobID string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"` // STREAMING or BATCH; newer versions only
	Nodes []PlanNode `json:"nodes"`
}

// PlanNode is one job vertex of the plan. Source vertices have no "inputs"
// key in older versions and an empty list in newer ones; both decode to nil.
type PlanNode struct {
	ID          string      `json:"id"`
	Parallelism *int        `json:"parallelism"`
	Operator    string      `json:"operator"`
	Description string      `json:"description"` // HTML-escaped by Flink
	Inputs      []PlanInput `json:"inputs"`
}

// PlanInput is one input edge of a plan node. ShipStrategy is the name of the
// edge's partitioner: "HASH" for keyBy (KeyGroupStreamPartitioner), and
// "FORWARD", "REBALANCE", "RESCALE", "BROADCAST", "GLOBAL", "SHUFFLE", … for
// the others.
type PlanInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// CheckpointingStatistics is GET /jobs/{jobid}/checkpoints.
type CheckpointingStatistics struct {
	Counts  *CheckpointCounts       `json:"counts"`
	History []CheckpointStatistics  `json:"history"`
	Latest  LatestCheckpointsFields `json:"latest"`
}

// CheckpointCounts is the "counts" object.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// CheckpointStatistics is one checkpoint of the history. Flink tags each
// entry with its subtype in a property whose name changed across versions
// ("@class" in old ones, "className" in the current specification); the
// "status" field says the same and exists in every version, so StateLab
// reads that.
type CheckpointStatistics struct {
	ID                 int64  `json:"id"`
	Status             string `json:"status"`
	IsSavepoint        bool   `json:"is_savepoint"`
	CheckpointType     string `json:"checkpoint_type"`
	TriggerTimestamp   int64  `json:"trigger_timestamp"`
	LatestAckTimestamp int64  `json:"latest_ack_timestamp"`
	// StateSize is the full state size since Flink 1.15; before, when
	// checkpointed_size did not exist, it was the checkpointed data size.
	StateSize        int64  `json:"state_size"`
	CheckpointedSize *int64 `json:"checkpointed_size"`
	EndToEndDuration int64  `json:"end_to_end_duration"`
	ProcessedData    int64  `json:"processed_data"`
	PersistedData    int64  `json:"persisted_data"`
	NumSubtasks      int    `json:"num_subtasks"`
	NumAcknowledged  int    `json:"num_acknowledged_subtasks"`
	ExternalPath     string `json:"external_path"`     // completed only
	Discarded        bool   `json:"discarded"`         // completed only
	FailureTimestamp int64  `json:"failure_timestamp"` // failed only
	FailureMessage   string `json:"failure_message"`   // failed only
}

// LatestCheckpointsFields is the "latest" object.
type LatestCheckpointsFields struct {
	Completed *CheckpointStatistics         `json:"completed"`
	Savepoint *CheckpointStatistics         `json:"savepoint"`
	Failed    *CheckpointStatistics         `json:"failed"`
	Restored  *RestoredCheckpointStatistics `json:"restored"`
}

// RestoredCheckpointStatistics is the checkpoint or savepoint the job last
// restored from.
type RestoredCheckpointStatistics struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// errorResponse is Flink's ErrorResponseBody.
type errorResponse struct {
	Errors []string `json:"errors"`
}
