package attach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/statelab/statelab/rescale"
)

// Snapshot is everything StateLab shows about a JobManager at one moment:
// plain data, safe to hand to a renderer or to encode as JSON.
type Snapshot struct {
	Flink string `json:"flink"` // the JobManager REST address
	Jobs  []Job  `json:"jobs"`
	// Warnings are problems that did not stop the snapshot: a job that
	// vanished, a field an older Flink does not report, a vertex whose
	// ranges could not be computed. Each names what to do.
	Warnings []Warning `json:"warnings"`
}

// Warning is one problem a snapshot worked around.
type Warning struct {
	JobID   string `json:"jobId,omitempty"`
	Message string `json:"message"`
	Err     error  `json:"-"` // wraps one of the package's sentinel errors
}

func newWarning(jobID string, err error) Warning {
	return Warning{JobID: jobID, Message: err.Error(), Err: err}
}

// Job is one Flink job: its graph, key groups and checkpoints.
type Job struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	State       string      `json:"state"`
	Vertices    []Vertex    `json:"vertices"` // in the order GET /jobs/{id} lists them (topological)
	Edges       []Edge      `json:"edges"`
	Checkpoints Checkpoints `json:"checkpoints"`
}

// Vertex returns the vertex with the given ID.
func (j Job) Vertex(id string) (Vertex, bool) {
	for _, v := range j.Vertices {
		if v.ID == id {
			return v, true
		}
	}
	return Vertex{}, false
}

// Max-parallelism sources, shown so a learner can tell a value Flink
// reported from one StateLab was told to assume.
const (
	SourceJobDetails    = "GET /jobs/{jobid}"
	SourceVertexDetails = "GET /jobs/{jobid}/vertices/{vertexid}"
	SourceFlag          = "given by the user"
	SourceFlinkDefault  = "assumed: Flink's default for the current parallelism"
)

// Vertex is one job vertex (a chain of operators) of a job.
type Vertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Parallelism int    `json:"parallelism"`
	// MaxParallelism is the vertex's number of key groups; 0 when Flink did
	// not report it and no fallback was given.
	MaxParallelism       int    `json:"maxParallelism"`
	MaxParallelismSource string `json:"maxParallelismSource,omitempty"`
	// Keyed: one of the vertex's inputs in the plan has ship strategy HASH,
	// i.e. the stream was keyBy'd into it, so its keyed state is split by
	// key group.
	Keyed bool `json:"keyed"`
	// KeyGroups holds each subtask's key-group range: set for keyed vertices
	// whose max parallelism is known and valid, nil otherwise.
	KeyGroups []SubtaskKeyGroups `json:"keyGroups,omitempty"`
}

// SubtaskKeyGroups is the key-group range one subtask owns.
type SubtaskKeyGroups struct {
	Subtask int                   `json:"subtask"`
	Range   rescale.KeyGroupRange `json:"range"`
}

// Edge is one input of a vertex in the plan.
type Edge struct {
	Source       string `json:"source"` // vertex ID
	Target       string `json:"target"` // vertex ID
	Num          int    `json:"num"`    // input number of the target
	ShipStrategy string `json:"shipStrategy"`
	Keyed        bool   `json:"keyed"` // ShipStrategy is HASH
}

// IsKeyedShipStrategy reports whether a plan input's ship strategy is the
// keyBy partitioner: Flink's KeyGroupStreamPartitioner names itself "HASH".
// A stream re-interpreted as keyed (DataStreamUtils.reinterpretAsKeyedStream)
// arrives over a FORWARD edge and is not recognised: the plan does not say.
func IsKeyedShipStrategy(s string) bool {
	return strings.EqualFold(strings.TrimSpace(s), "HASH")
}

// MaxParallelismFallback says what to use for a keyed vertex whose max
// parallelism Flink does not report (Flink before 1.13).
type MaxParallelismFallback struct {
	// Value, when positive, is used as the max parallelism.
	Value int
	// FlinkDefault uses Flink's default for the vertex's current parallelism
	// (rescale.DefaultMaxParallelism). That is only right when the job sets
	// no max parallelism and has never been rescaled: Flink fixes the default
	// from the parallelism the job first ran with and keeps it in savepoints.
	FlinkDefault bool
}

// ParseMaxParallelismFallback reads "" (none), "default", or a number.
func ParseMaxParallelismFallback(s string) (MaxParallelismFallback, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return MaxParallelismFallback{}, nil
	case "default":
		return MaxParallelismFallback{FlinkDefault: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return MaxParallelismFallback{}, fmt.Errorf("max parallelism %q is neither a number nor \"default\"", s)
	}
	if err := rescale.CheckMaxParallelism(n); err != nil {
		return MaxParallelismFallback{}, err
	}
	return MaxParallelismFallback{Value: n}, nil
}

func (f MaxParallelismFallback) resolve(parallelism int) (int, string, bool) {
	switch {
	case f.Value > 0:
		return f.Value, SourceFlag, true
	case f.FlinkDefault && parallelism > 0:
		return rescale.DefaultMaxParallelism(parallelism), SourceFlinkDefault, true
	}
	return 0, "", false
}

// Options select what a snapshot reads.
type Options struct {
	// JobID, when set, limits the snapshot to that job; it must be listed by
	// GET /jobs.
	JobID string
	// MaxParallelism is used where Flink does not report a vertex's.
	MaxParallelism MaxParallelismFallback
}

// Snapshot reads the JobManager once: GET /jobs, then for each job its
// details, plan and checkpoints. It fails only when the JobManager cannot be
// read at all (unreachable, not Flink, or opts.JobID not listed); a job that
// vanishes or answers oddly is skipped with a warning and the rest are kept.
func (c *Client) Snapshot(ctx context.Context, opts Options) (Snapshot, error) {
	listed, err := c.Jobs(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	if opts.JobID != "" {
		i := slices.IndexFunc(listed, func(j JobIDWithStatus) bool { return j.ID == opts.JobID })
		if i < 0 {
			ids := make([]string, 0, len(listed))
			for _, j := range listed {
				ids = append(ids, j.ID)
			}
			return Snapshot{}, &JobNotFoundError{JobID: opts.JobID, Endpoint: "GET /jobs", Listed: ids}
		}
		listed = listed[i : i+1]
	}
	s := Snapshot{Flink: c.BaseURL(), Jobs: []Job{}, Warnings: []Warning{}}
	for _, entry := range listed {
		job, warnings, err := c.readJob(ctx, entry, opts)
		s.Warnings = append(s.Warnings, warnings...)
		if err != nil {
			if errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
				return Snapshot{}, err
			}
			s.Warnings = append(s.Warnings, newWarning(entry.ID, fmt.Errorf("%w; this job is skipped, the others are shown", err)))
			continue
		}
		s.Jobs = append(s.Jobs, job)
	}
	return s, nil
}

// readJob reads one job's three endpoints and builds its view.
func (c *Client) readJob(ctx context.Context, entry JobIDWithStatus, opts Options) (Job, []Warning, error) {
	details, err := c.JobDetails(ctx, entry.ID)
	if err != nil {
		return Job{}, nil, err
	}
	plan, err := c.JobPlan(ctx, entry.ID)
	if err != nil {
		return Job{}, nil, err
	}
	var warnings []Warning
	cps, err := c.Checkpoints(ctx, entry.ID)
	checkpointing := true
	switch {
	case errors.Is(err, ErrCheckpointingDisabled):
		checkpointing = false
	case err != nil:
		return Job{}, nil, err
	}
	job, buildWarnings := buildJob(entry, details, plan, opts)
	warnings = append(warnings, buildWarnings...)
	job.Checkpoints = buildCheckpoints(cps, checkpointing)
	if checkpointing && cps.Counts == nil {
		warnings = append(warnings, newWarning(entry.ID, &MissingFieldError{
			Endpoints: []string{"GET /jobs/" + entry.ID + "/checkpoints"}, Object: "the answer", Field: `"counts"`,
			Hint: "checkpoint counts are shown as 0"}))
	}
	if err := c.resolveMissingMaxParallelism(ctx, &job, opts, &warnings); err != nil {
		return Job{}, nil, err
	}
	return job, warnings, nil
}

// buildJob joins GET /jobs/{id} (vertices, parallelism, max parallelism)
// with the plan (edges, ship strategies) and computes key-group ranges.
func buildJob(entry JobIDWithStatus, d JobDetails, plan Plan, opts Options) (Job, []Warning) {
	var warnings []Warning
	warn := func(err error) { warnings = append(warnings, newWarning(entry.ID, err)) }
	job := Job{ID: entry.ID, Name: d.Name, State: d.State, Vertices: []Vertex{}, Edges: []Edge{}}
	if job.Name == "" {
		job.Name = plan.Name
	}
	if job.State == "" {
		job.State = entry.Status
	}
	nodes := make(map[string]PlanNode, len(plan.Nodes))
	for _, n := range plan.Nodes {
		nodes[n.ID] = n
		for _, in := range n.Inputs {
			job.Edges = append(job.Edges, Edge{Source: in.ID, Target: n.ID, Num: in.Num,
				ShipStrategy: in.ShipStrategy, Keyed: IsKeyedShipStrategy(in.ShipStrategy)})
		}
	}
	detailsEndpoint := "GET /jobs/" + entry.ID
	for _, dv := range d.Vertices {
		v := Vertex{ID: dv.ID, Name: dv.Name, Status: dv.Status}
		node, inPlan := nodes[dv.ID]
		switch {
		case dv.Parallelism != nil:
			v.Parallelism = *dv.Parallelism
		case inPlan && node.Parallelism != nil:
			v.Parallelism = *node.Parallelism
		default:
			warn(&MissingFieldError{Endpoints: []string{detailsEndpoint, "GET /jobs/" + entry.ID + "/plan"},
				Object: vertexLabel(dv.ID, dv.Name), Field: "parallelism", Hint: "its key-group ranges cannot be computed"})
		}
		if inPlan {
			v.Keyed = slices.ContainsFunc(node.Inputs, func(in PlanInput) bool { return IsKeyedShipStrategy(in.ShipStrategy) })
		} else {
			warn(fmt.Errorf("GET /jobs/%s/plan has no node for %s, so StateLab cannot tell whether it is keyed; it is shown as not keyed", entry.ID, vertexLabel(dv.ID, dv.Name)))
		}
		if dv.MaxParallelism != nil {
			v.MaxParallelism, v.MaxParallelismSource = *dv.MaxParallelism, SourceJobDetails
		} else if !v.Keyed {
			// Not keyed: the number is informative only, so no extra request
			// and no warning; a fallback the user gave still applies.
			if mp, src, ok := opts.MaxParallelism.resolve(v.Parallelism); ok {
				v.MaxParallelism, v.MaxParallelismSource = mp, src
			}
		}
		job.Vertices = append(job.Vertices, v)
	}
	for i := range job.Vertices {
		if err := job.Vertices[i].computeKeyGroups(); err != nil {
			warn(fmt.Errorf("%s: %s: %w", detailsEndpoint, vertexLabel(job.Vertices[i].ID, job.Vertices[i].Name), err))
		}
	}
	return job, warnings
}

// resolveMissingMaxParallelism fills in the max parallelism of keyed
// vertices that GET /jobs/{id} did not report: first from
// GET /jobs/{id}/vertices/{vid}, then from the user's fallback, else it
// leaves 0 and warns, naming the field, the endpoints and what to do.
func (c *Client) resolveMissingMaxParallelism(ctx context.Context, job *Job, opts Options, warnings *[]Warning) error {
	for i := range job.Vertices {
		v := &job.Vertices[i]
		if !v.Keyed || v.MaxParallelismSource != "" {
			continue
		}
		vd, err := c.VertexDetails(ctx, job.ID, v.ID)
		switch {
		case errors.Is(err, ErrUnreachable) || ctx.Err() != nil:
			return err
		case err == nil && vd.MaxParallelism != nil:
			v.MaxParallelism, v.MaxParallelismSource = *vd.MaxParallelism, SourceVertexDetails
		default:
			if mp, src, ok := opts.MaxParallelism.resolve(v.Parallelism); ok {
				v.MaxParallelism, v.MaxParallelismSource = mp, src
			} else {
				*warnings = append(*warnings, newWarning(job.ID, &MissingFieldError{
					Endpoints: []string{"GET /jobs/" + job.ID, "GET /jobs/" + job.ID + "/vertices/" + v.ID},
					Object:    vertexLabel(v.ID, v.Name), Field: "maxParallelism",
					Hint: "Flink reports a vertex's max parallelism only since 1.13, and without it the key groups are unknown; " +
						"pass --max-parallelism N with the value the job sets (setMaxParallelism or pipeline.max-parallelism), " +
						"or --max-parallelism default to assume Flink's default for the current parallelism " +
						"(right only if the job sets none and was never rescaled)"}))
				continue
			}
		}
		if err := v.computeKeyGroups(); err != nil {
			*warnings = append(*warnings, newWarning(job.ID, fmt.Errorf("GET /jobs/%s: %s: %w", job.ID, vertexLabel(v.ID, v.Name), err)))
		}
	}
	return nil
}

// computeKeyGroups sets KeyGroups from rescale.KeyGroupRanges for a keyed
// vertex with a known max parallelism; it reports parallelism and max
// parallelism Flink itself would refuse.
func (v *Vertex) computeKeyGroups() error {
	v.KeyGroups = nil
	if !v.Keyed || v.MaxParallelism == 0 || v.Parallelism == 0 {
		return nil
	}
	if err := rescale.CheckParallelism(v.Parallelism, v.MaxParallelism); err != nil {
		return fmt.Errorf("key-group ranges not shown: %w", err)
	}
	for i, r := range rescale.KeyGroupRanges(v.MaxParallelism, v.Parallelism) {
		v.KeyGroups = append(v.KeyGroups, SubtaskKeyGroups{Subtask: i, Range: r})
	}
	return nil
}

func vertexLabel(id, name string) string {
	if name == "" {
		return "vertex " + id
	}
	return fmt.Sprintf("vertex %q (%s)", name, id)
}
