package attach

// Document is the JSON `statelab attach --once --json` prints: a fixed
// interface that scripts and outside checks rely on, so its fields are
// exactly these and nothing is added here (richer data is in Snapshot).
//
//	{"jobs":[{"id":…,"name":…,
//	  "vertices":[{"id":…,"name":…,"parallelism":…,"maxParallelism":…,"keyed":true|false,
//	               "keyGroups":[{"subtask":0,"start":0,"end":42},…]}],
//	  "checkpoints":{"completed":…,"failed":…,"inProgress":…,"restored":…}}]}
//
// keyGroups appears only for keyed vertices whose max parallelism is known;
// maxParallelism is 0 when Flink did not report it and no fallback was given.
type Document struct {
	Jobs []DocumentJob `json:"jobs"`
}

// DocumentJob is one job of a Document.
type DocumentJob struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Vertices    []DocumentVertex `json:"vertices"`
	Checkpoints DocumentCounts   `json:"checkpoints"`
}

// DocumentVertex is one vertex of a DocumentJob.
type DocumentVertex struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Parallelism    int             `json:"parallelism"`
	MaxParallelism int             `json:"maxParallelism"`
	Keyed          bool            `json:"keyed"`
	KeyGroups      []DocumentRange `json:"keyGroups,omitempty"`
}

// DocumentRange is one subtask's inclusive key-group range.
type DocumentRange struct {
	Subtask int `json:"subtask"`
	Start   int `json:"start"`
	End     int `json:"end"`
}

// DocumentCounts are Flink's checkpoint counts (all 0 without checkpointing).
type DocumentCounts struct {
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	InProgress int64 `json:"inProgress"`
	Restored   int64 `json:"restored"`
}

// Document converts the snapshot to the fixed JSON interface.
func (s Snapshot) Document() Document {
	d := Document{Jobs: make([]DocumentJob, 0, len(s.Jobs))}
	for _, j := range s.Jobs {
		dj := DocumentJob{ID: j.ID, Name: j.Name, Vertices: make([]DocumentVertex, 0, len(j.Vertices)),
			Checkpoints: DocumentCounts{Completed: j.Checkpoints.Counts.Completed, Failed: j.Checkpoints.Counts.Failed,
				InProgress: j.Checkpoints.Counts.InProgress, Restored: j.Checkpoints.Counts.Restored}}
		for _, v := range j.Vertices {
			dv := DocumentVertex{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism,
				MaxParallelism: v.MaxParallelism, Keyed: v.Keyed}
			if v.Keyed {
				for _, kg := range v.KeyGroups {
					dv.KeyGroups = append(dv.KeyGroups, DocumentRange{Subtask: kg.Subtask, Start: kg.Range.Start, End: kg.Range.End})
				}
			}
			dj.Vertices = append(dj.Vertices, dv)
		}
		d.Jobs = append(d.Jobs, dj)
	}
	return d
}
