package web

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// JobTemplate is a job a sandbox can start. Build turns the sandbox settings
// into an engine job spec; the spec is validated by the engine.
type JobTemplate struct {
	ID string
	// TitleKey and DescKey are message-catalogue keys.
	TitleKey string
	DescKey  string
	// Operators whose parallelism the sandbox form offers to set.
	Tunable []string
	// Defaults are the form's starting values.
	Defaults SandboxSettings
	build    func(s SandboxSettings) *engine.JobSpec
}

// SandboxSettings are what the sandbox form chooses.
type SandboxSettings struct {
	Backend        string
	Parallelism    map[string]int
	MaxParallelism int // of keyed operators; 0 = Flink's default
	Interval       time.Duration
	TaskManagers   int
	Slots          int
	Seed           int64
	Keys           int
	Driver         string
	Sink           string // exactly-once or at-least-once
	// Failure is how the job handles failures (failure.go).
	Failure FailureSettings
	// TTL is the keyed operators' state time-to-live (ttl.go).
	TTL TTLSettings
	// TimeDomain is the alerts operator's timeDomain, "" for its default
	// (timedomain.go).
	TimeDomain string
}

// Build returns the job spec of t with s applied, validated by the engine.
func (t *JobTemplate) Build(s SandboxSettings) (*engine.JobSpec, error) {
	spec := t.build(s)
	spec.Seed = s.Seed
	spec.Backend = engine.Backend(s.Backend)
	spec.Checkpointing.Interval = engine.Duration(s.Interval)
	spec.Cluster.TaskManagers = s.TaskManagers
	spec.Cluster.SlotsPerTaskManager = s.Slots
	s.Failure.apply(spec)
	s.TTL.apply(spec)
	applyTimeDomain(spec, s.TimeDomain)
	for i := range spec.Operators {
		o := &spec.Operators[i]
		if p, ok := s.Parallelism[o.ID]; ok {
			o.Parallelism = p
		}
		if s.MaxParallelism > 0 && (o.Kind == engine.KindCount || o.Kind == engine.KindWindowCount || o.Kind == engine.KindSum || o.Kind == engine.KindAlerts) {
			o.MaxParallelism = s.MaxParallelism
		}
		if o.Kind == engine.KindSink && s.Sink != "" {
			if o.Options == nil {
				o.Options = map[string]any{}
			}
			o.Options["semantics"] = s.Sink
		}
	}
	// Forward edges need equal parallelism; when the learner chose
	// different ones, rebalance instead (Flink's default).
	for i := range spec.Edges {
		e := &spec.Edges[i]
		if e.Partitioner == engine.Forward {
			f, _ := spec.Operator(e.From)
			to, _ := spec.Operator(e.To)
			if f.Parallelism != to.Parallelism {
				e.Partitioner = engine.Rebalance
			}
		}
	}
	// Too few slots is allowed: the job waits for resources, as Flink's
	// does, until the learner adds a TaskManager.
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadArgs, strings.TrimPrefix(err.Error(), "engine: invalid job spec: "))
	}
	return spec, nil
}

// sandboxRecords is how many records a sandbox source holds: minutes of
// watching at the teaching pace. The engine compares the sink with the
// ground truth of the whole topic at every snapshot, so the topic stays
// small; a learner can always type more records in.
const sandboxRecords = 20_000

// The sandbox's jobs turn operator chaining off (chaining: false, Flink's
// env.disableOperatorChaining()): the graph shows every operator as its own
// task, and crashing one crashes it alone. Flink's default is on; the form's
// chaining setting turns it on (PipelineSettings).

// Templates are the sandbox's jobs, in the order the chooser lists them.
var Templates = []*JobTemplate{
	{
		ID: "wordcount", TitleKey: "template.wordcount.title", DescKey: "template.wordcount.desc",
		Tunable:  []string{"source", "tokenizer", "count"},
		Defaults: SandboxSettings{Backend: "memory", Parallelism: map[string]int{"source": 2, "tokenizer": 2, "count": 2}, Interval: 200 * time.Millisecond, TaskManagers: 2, Slots: 1, Seed: 1, Keys: 50, Driver: DriverStepper, Sink: engine.SinkExactlyOnce},
		build: func(s SandboxSettings) *engine.JobSpec {
			return &engine.JobSpec{
				Name:     "word-count",
				Chaining: new(false), // every operator its own box (see Templates)
				Operators: []engine.OperatorSpec{
					{ID: "source", Kind: engine.KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "generator": engine.GeneratorWords, "records": sandboxRecords, "keys": s.Keys}},
					{ID: "tokenizer", Kind: engine.KindTokenizer, Parallelism: 2},
					{ID: "count", Kind: engine.KindCount, Parallelism: 2},
					{ID: "sink", Kind: engine.KindSink, Parallelism: 1},
				},
				Edges: []engine.EdgeSpec{
					{From: "source", To: "tokenizer", Partitioner: engine.Forward},
					{From: "tokenizer", To: "count", Partitioner: engine.Hash},
					{From: "count", To: "sink", Partitioner: engine.Rebalance},
				},
			}
		},
	},
	{
		ID: "clicks", TitleKey: "template.clicks.title", DescKey: "template.clicks.desc",
		Tunable:  []string{"source", "window"},
		Defaults: SandboxSettings{Backend: "memory", Parallelism: map[string]int{"source": 2, "window": 2}, Interval: 200 * time.Millisecond, TaskManagers: 2, Slots: 1, Seed: 1, Keys: 6, Driver: DriverStepper, Sink: engine.SinkExactlyOnce},
		build: func(s SandboxSettings) *engine.JobSpec {
			return &engine.JobSpec{
				Name:     "click-event-count",
				Chaining: new(false), // every operator its own box (see Templates)
				Operators: []engine.OperatorSpec{
					{ID: "source", Kind: engine.KindSource, Parallelism: 2, Options: map[string]any{"partitions": 2, "generator": engine.GeneratorClicks, "records": sandboxRecords, "pages": s.Keys}},
					{ID: "window", Kind: engine.KindWindowCount, Parallelism: 2},
					{ID: "sink", Kind: engine.KindSink, Parallelism: 1},
				},
				Edges: []engine.EdgeSpec{
					{From: "source", To: "window", Partitioner: engine.Hash},
					{From: "window", To: "sink", Partitioner: engine.Rebalance},
				},
			}
		},
	},
	{
		ID: "article", TitleKey: "template.article.title", DescKey: "template.article.desc",
		Tunable:  []string{"source", "tokenizer", "count"},
		Defaults: SandboxSettings{Backend: "memory", Parallelism: map[string]int{"source": 1, "tokenizer": 2, "count": 2}, MaxParallelism: 10, Interval: 200 * time.Millisecond, TaskManagers: 2, Slots: 1, Seed: 1, Keys: 20, Driver: DriverStepper, Sink: engine.SinkExactlyOnce},
		build: func(s SandboxSettings) *engine.JobSpec {
			return &engine.JobSpec{
				Name:     "five-partitions",
				Chaining: new(false), // every operator its own box (see Templates)
				Operators: []engine.OperatorSpec{
					{ID: "source", Kind: engine.KindSource, Parallelism: 1, Options: map[string]any{"partitions": 5, "generator": engine.GeneratorWords, "records": sandboxRecords, "keys": s.Keys}},
					{ID: "tokenizer", Kind: engine.KindTokenizer, Parallelism: 2},
					{ID: "count", Kind: engine.KindCount, Parallelism: 2},
					{ID: "sink", Kind: engine.KindSink, Parallelism: 1},
				},
				Edges: []engine.EdgeSpec{
					// rebalance, so the source can go 1 -> 2 on its own.
					{From: "source", To: "tokenizer", Partitioner: engine.Rebalance},
					{From: "tokenizer", To: "count", Partitioner: engine.Hash},
					{From: "count", To: "sink", Partitioner: engine.Rebalance},
				},
			}
		},
	},
	{
		// A KeyedProcessFunction with event-time timers kept in keyed
		// state: crash a subtask or rescale "alerts" and the timers come
		// back with their key groups (engine/keyedprocess.go).
		ID: "alerts", TitleKey: "template.alerts.title", DescKey: "template.alerts.desc",
		Tunable:  []string{"source", "alerts"},
		Defaults: SandboxSettings{Backend: "memory", Parallelism: map[string]int{"source": 2, "alerts": 2}, Interval: 200 * time.Millisecond, TaskManagers: 2, Slots: 1, Seed: 1, Keys: 50, Driver: DriverStepper, Sink: engine.SinkExactlyOnce},
		build: func(s SandboxSettings) *engine.JobSpec {
			return &engine.JobSpec{
				Name:     "silence-alerts",
				Chaining: new(false), // every operator its own box (see Templates)
				Operators: []engine.OperatorSpec{
					{ID: "source", Kind: engine.KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "generator": engine.GeneratorWords, "records": sandboxRecords, "keys": s.Keys, "wordsPerLine": 1}},
					{ID: "alerts", Kind: engine.KindAlerts, Parallelism: 2, Options: map[string]any{"timeout": "200ms"}},
					{ID: "sink", Kind: engine.KindSink, Parallelism: 1},
				},
				Edges: []engine.EdgeSpec{
					{From: "source", To: "alerts", Partitioner: engine.Hash},
					{From: "alerts", To: "sink", Partitioner: engine.Rebalance},
				},
			}
		},
	},
}

// Template returns the template with the given id.
func Template(id string) (*JobTemplate, bool) {
	for _, t := range Templates {
		if t.ID == id {
			return t, true
		}
	}
	return nil, false
}

func templateIDs() string {
	ids := make([]string, len(Templates))
	for i, t := range Templates {
		ids[i] = t.ID
	}
	return strings.Join(ids, ", ")
}

// Bounds of the sandbox form.
const (
	maxSandboxParallelism  = 8
	maxSandboxTaskManagers = 8
	maxSandboxSlots        = 8
	// minCheckpointInterval is Flink's least checkpoint interval,
	// CheckpointCoordinatorConfiguration.MINIMAL_CHECKPOINT_TIME (10 ms).
	minCheckpointInterval = 10 * time.Millisecond
)

// ParseSettings reads sandbox settings from a query string (the sandbox
// form's fields; see docs/protocol.md), starting from t's defaults, within
// DefaultLimits (a Server applies its own Config.Limits).
func ParseSettings(t *JobTemplate, q url.Values) (SandboxSettings, error) {
	return parseSettings(t, q, DefaultLimits)
}

func parseSettings(t *JobTemplate, q url.Values, lim Limits) (SandboxSettings, error) {
	s := t.Defaults
	s.Parallelism = map[string]int{}
	for k, v := range t.Defaults.Parallelism {
		s.Parallelism[k] = v
	}
	bad := func(field, format string, a ...any) (SandboxSettings, error) {
		return s, fmt.Errorf("%w: %s: %s", ErrBadArgs, field, fmt.Sprintf(format, a...))
	}
	// intParam reads a whole number from lo to hi; flag names the statelab
	// serve flag that raises hi (a server bound), "" for a fixed one.
	intParam := func(name string, lo, hi int, flag string, dst *int) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err == nil && n > hi && flag != "" {
			return fmt.Errorf("%w: %s=%d is above this server's bound of %d; choose %d to %d, or whoever runs the server can raise it with statelab serve --%s", ErrBadArgs, name, n, hi, lo, hi, flag)
		}
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%w: %s=%q: want a whole number from %d to %d", ErrBadArgs, name, v, lo, hi)
		}
		*dst = n
		return nil
	}
	if v := q.Get("backend"); v != "" {
		if !slices.Contains([]string{"memory", "fs", "pebble"}, v) {
			return bad("backend", "%q is unknown; choose memory, fs or pebble", v)
		}
		s.Backend = v
	}
	for _, op := range t.Tunable {
		if err := intParam("p."+op, 1, lim.Parallelism, "max-parallelism", new(int)); err != nil {
			return s, err
		}
		if v := q.Get("p." + op); v != "" {
			n, _ := strconv.Atoi(v)
			s.Parallelism[op] = n
		}
	}
	if v := q.Get("maxParallelism"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n != 0 && (n < 1 || n > rescale.UpperBoundMaxParallelism)) {
			return bad("maxParallelism", "%q: want 0 (Flink's default) or a whole number from 1 to %d", v, rescale.UpperBoundMaxParallelism)
		}
		s.MaxParallelism = n
	}
	if v := q.Get("interval"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			if n, err2 := strconv.Atoi(v); err2 == nil {
				d, err = time.Duration(n)*time.Millisecond, nil
			}
		}
		if err != nil || d < 0 || d > time.Hour {
			return bad("interval", "%q: want a duration such as 2s or 500ms (0 turns periodic checkpoints off)", v)
		}
		if d > 0 && d < minCheckpointInterval {
			// Flink refuses it too: CheckpointCoordinatorConfiguration.MINIMAL_CHECKPOINT_TIME.
			return bad("interval", "%q is below Flink's minimum checkpoint interval of %s; choose %s or more (0 turns periodic checkpoints off)", v, minCheckpointInterval, minCheckpointInterval)
		}
		s.Interval = d
	}
	if err := intParam("taskManagers", 1, lim.TaskManagers, "max-taskmanagers", &s.TaskManagers); err != nil {
		return s, err
	}
	if err := intParam("slots", 1, maxSandboxSlots, "", &s.Slots); err != nil {
		return s, err
	}
	if err := intParam("keys", 1, lim.Keys, "max-keys", &s.Keys); err != nil {
		return s, err
	}
	if v := q.Get("seed"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return bad("seed", "%q: want a whole number", v)
		}
		s.Seed = n
	}
	if v := q.Get("driver"); v != "" {
		if v != DriverStepper && v != DriverLive {
			return bad("driver", "%q is unknown; choose step (teaching mode) or live (full speed)", v)
		}
		s.Driver = v
	}
	if v := q.Get("sink"); v != "" {
		if v != engine.SinkExactlyOnce && v != engine.SinkAtLeastOnce {
			return bad("sink", "%q is unknown; choose exactly-once or at-least-once", v)
		}
		s.Sink = v
	}
	if err := parseFailureSettings(q, &s.Failure); err != nil {
		return s, err
	}
	if err := parseTTLSettings(q, &s.TTL); err != nil {
		return s, err
	}
	if err := parseTimeDomain(t, q, &s); err != nil {
		return s, err
	}
	return s, nil
}
