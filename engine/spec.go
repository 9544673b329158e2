package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/statelab/statelab/rescale"
)

// Duration is a time.Duration that reads and writes as text ("500ms", "2s")
// in JSON and YAML, so a job spec stays readable. A bare number is read as
// milliseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes d as Go duration text.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads Go duration text, or a bare number of milliseconds.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*d = Duration(time.Duration(n) * time.Millisecond)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("read duration %q: want text like 500ms or 2s", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON accepts a string ("2s") or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return d.UnmarshalText([]byte(s))
	}
	return d.UnmarshalText(b)
}

// Partitioner names how records travel along an edge, as Flink names its
// StreamPartitioners.
type Partitioner string

// The partitioners.
const (
	// Forward sends subtask i's records to subtask i; both sides need the same parallelism.
	Forward Partitioner = "forward"
	// Rebalance deals records round-robin over all downstream subtasks.
	Rebalance Partitioner = "rebalance"
	// Hash is keyBy: a record goes to the subtask owning its key's key group.
	Hash Partitioner = "hash"
	// Broadcast sends every record to every downstream subtask.
	Broadcast Partitioner = "broadcast"
)

// Backend names the state backend of a job (see DESIGN.md's backend table).
type Backend string

// The backends.
const (
	BackendMemory Backend = "memory"
	BackendFS     Backend = "fs"
	BackendPebble Backend = "pebble"
)

// CheckpointMode is Flink's CheckpointingMode.
type CheckpointMode string

// The checkpointing modes.
const (
	// ExactlyOnce aligns barriers: a task with several inputs holds back each
	// input that delivered barrier n until all have.
	ExactlyOnce CheckpointMode = "exactly-once"
	// AtLeastOnce counts barriers without blocking: records after the barrier
	// on a fast input enter the snapshot and are replayed after a restore.
	AtLeastOnce CheckpointMode = "at-least-once"
)

// Operator kinds built into the engine.
const (
	KindSource          = "source"           // partitioned log source
	KindTokenizer       = "tokenizer"        // flatMap: line -> words
	KindMap             = "map"              // map
	KindFilter          = "filter"           // filter
	KindCount           = "count"            // keyed count (ValueState)
	KindSum             = "sum"              // keyed sum (ValueState)
	KindWindowCount     = "window-count"     // keyed tumbling event-time window count
	KindBroadcastFilter = "broadcast-filter" // rules in BroadcastState
	KindTally           = "tally"            // per-subtask tallies in union ListState
	KindAlerts          = "alerts"           // KeyedProcessFunction: alert when a key is silent for a timeout (event-time timers, or processing-time ones with timeDomain: processing)
	KindSink            = "sink"             // at-least-once or two-phase-commit sink
)

var operatorKinds = []string{KindSource, KindTokenizer, KindMap, KindFilter, KindCount, KindSum,
	KindWindowCount, KindBroadcastFilter, KindTally, KindSink, KindAlerts}

// keyedKinds are the operators that keep keyed state and so need hash inputs.
func isKeyedKind(kind string) bool {
	return kind == KindCount || kind == KindSum || kind == KindWindowCount || kind == KindAlerts
}

// JobSpec is a whole StateLab job: the logical graph (Flink's JobGraph), the
// state backend, checkpointing, the cluster and the restart strategy. It
// loads from YAML or JSON (LoadSpec) and is checked by Validate, which also
// fills in defaults.
type JobSpec struct {
	Name          string            `json:"name" yaml:"name"`
	Seed          int64             `json:"seed" yaml:"seed"`
	Operators     []OperatorSpec    `json:"operators" yaml:"operators"`
	Edges         []EdgeSpec        `json:"edges" yaml:"edges"`
	Backend       Backend           `json:"backend" yaml:"backend"`
	Checkpointing CheckpointingSpec `json:"checkpointing" yaml:"checkpointing"`
	Cluster       ClusterSpec       `json:"cluster" yaml:"cluster"`
	Restart       RestartSpec       `json:"restart" yaml:"restart"`
	Runtime       RuntimeSpec       `json:"runtime" yaml:"runtime"`
	// Chaining is pipeline.operator-chaining (chain.go): unset or true
	// chains operators as Flink does by default (DefaultChaining); false
	// keeps every operator its own task (env.disableOperatorChaining()).
	Chaining *bool `json:"chaining,omitempty" yaml:"chaining,omitempty"`
}

// OperatorSpec is one logical operator (a JobVertex).
type OperatorSpec struct {
	ID          string `json:"id" yaml:"id"`
	Kind        string `json:"kind" yaml:"kind"`
	Parallelism int    `json:"parallelism" yaml:"parallelism"`
	// MaxParallelism is the number of key groups; 0 picks Flink's default
	// for the initial parallelism (rescale.DefaultMaxParallelism). It never
	// changes after the job starts.
	MaxParallelism int `json:"maxParallelism,omitempty" yaml:"maxParallelism,omitempty"`
	// Options are the operator kind's settings (see OperatorOptions in doc.go).
	Options map[string]any `json:"options,omitempty" yaml:"options,omitempty"`
	// UID is Flink's uid(String): the stable name its state is filed under
	// in checkpoints and savepoints. Without one the operator ID is
	// generated from the operator's place in the topology (uid.go), and a
	// changed job may no longer find its state.
	UID string `json:"uid,omitempty" yaml:"uid,omitempty"`
	// UIDHash is Flink's setUidHash(String): an alternative operator ID (32
	// hex digits) the operator also answers to when a restore matches
	// state — the way to give state filed under an old generated ID to an
	// operator that now has a uid.
	UIDHash string `json:"uidHash,omitempty" yaml:"uidHash,omitempty"`
	// Chain is start-new (Flink's startNewChain()) or disable
	// (disableChaining()); empty chains where the rules allow (chain.go).
	Chain string `json:"chain,omitempty" yaml:"chain,omitempty"`
}

// EdgeSpec connects two operators.
type EdgeSpec struct {
	From        string      `json:"from" yaml:"from"`
	To          string      `json:"to" yaml:"to"`
	Partitioner Partitioner `json:"partitioner" yaml:"partitioner"`
}

// CheckpointingSpec configures the checkpoint coordinator.
type CheckpointingSpec struct {
	// Interval between periodic checkpoints; 0 disables them (checkpoints and
	// savepoints can still be triggered by hand).
	Interval Duration       `json:"interval" yaml:"interval"`
	Mode     CheckpointMode `json:"mode" yaml:"mode"`
	// Retained is how many completed checkpoints are kept (Flink's
	// state.checkpoints.num-retained); older ones are subsumed and deleted.
	Retained    int  `json:"retained" yaml:"retained"`
	Incremental bool `json:"incremental" yaml:"incremental"`
	// LocalRecovery is state.backend.local-recovery (default false): each
	// subtask also keeps a copy of its checkpointed keyed state on its
	// TaskManager's local disk, and a restore on the same TaskManager reads
	// it instead of checkpoint storage (localrecovery.go).
	LocalRecovery bool `json:"localRecovery,omitempty" yaml:"localRecovery,omitempty"`
	// Timeout aborts a checkpoint that has not completed in time.
	Timeout Duration `json:"timeout" yaml:"timeout"`
	// MinPause is the least time from the last completed checkpoint (or
	// savepoint) to the trigger of the next periodic one; an aborted
	// checkpoint does not count, as in Flink.
	MinPause Duration `json:"minPause" yaml:"minPause"`
	// TolerableFailed is execution.checkpointing.tolerable-failed-checkpoints
	// (default 0): how many checkpoint failures in a row that count
	// (expired, declined, an asynchronous or I/O error) the job tolerates
	// before it fails over (CheckpointFailureManager).
	TolerableFailed int `json:"tolerableFailed,omitempty" yaml:"tolerableFailed,omitempty"`
	// MaxConcurrent is execution.checkpointing.max-concurrent-checkpoints
	// (0: DefaultMaxConcurrentCheckpoints, 1): how many checkpoints may be
	// pending when the periodic trigger starts another (Flink's
	// CheckpointRequestDecider; the min pause still applies). With 2 a
	// subtask can see barrier n+1 while it aligns n, and gives n up
	// (CHECKPOINT_DECLINED_SUBSUMED, not counted as a failure).
	MaxConcurrent int `json:"maxConcurrent,omitempty" yaml:"maxConcurrent,omitempty"`
	// MaxStateBytes caps one subtask's snapshot in jobmanager storage (memory
	// backend); 0 keeps the state package's default (5 MiB).
	MaxStateBytes int `json:"maxStateBytes,omitempty" yaml:"maxStateBytes,omitempty"`
	// Unaligned is execution.checkpointing.unaligned (unaligned.go):
	// barriers overtake in-flight records, which become channel state.
	Unaligned bool `json:"unaligned,omitempty" yaml:"unaligned,omitempty"`
	// AlignedCheckpointTimeout is
	// execution.checkpointing.aligned-checkpoint-timeout: with unaligned
	// on, a checkpoint starts aligned and switches to unaligned when its
	// alignment is still going on this long after the trigger (0: start
	// unaligned).
	AlignedCheckpointTimeout Duration `json:"alignedCheckpointTimeout,omitempty" yaml:"alignedCheckpointTimeout,omitempty"`
}

// maxConcurrent is the effective max-concurrent-checkpoints: the spec's,
// or Flink's default 1 when it is not set. The default is not written back
// into the spec, so a spec that never set it reads back as before.
func (c *CheckpointingSpec) maxConcurrent() int {
	if c.MaxConcurrent <= 0 {
		return DefaultMaxConcurrentCheckpoints
	}
	return c.MaxConcurrent
}

// ClusterSpec is the TaskManagers the job runs on.
type ClusterSpec struct {
	TaskManagers        int `json:"taskManagers" yaml:"taskManagers"`
	SlotsPerTaskManager int `json:"slotsPerTaskManager" yaml:"slotsPerTaskManager"`
	// Reactive is Flink's reactive mode: every operator runs with as many
	// subtasks as there are slots (capped by its max parallelism), and adding
	// or losing a TaskManager rescales the job.
	Reactive bool `json:"reactive,omitempty" yaml:"reactive,omitempty"`
	// Failover is jobmanager.execution.failover-strategy: region (default)
	// or full.
	Failover string `json:"failover,omitempty" yaml:"failover,omitempty"`
	// SlotRequestTimeout is slot.request.timeout (default 5 min of job
	// time): a job that waits longer for slots fails, and its restart
	// strategy decides what follows.
	SlotRequestTimeout Duration `json:"slotRequestTimeout,omitempty" yaml:"slotRequestTimeout,omitempty"`
	// HeartbeatTimeout is how long the JobManager takes to notice a lost
	// TaskManager (job time; DefaultHeartbeatTimeout unless set, Flink's
	// FlinkHeartbeatTimeout when HeartbeatInterval is set).
	HeartbeatTimeout Duration `json:"heartbeatTimeout,omitempty" yaml:"heartbeatTimeout,omitempty"`
	// HeartbeatInterval is heartbeat.interval (job time; Flink's is 10 s).
	// Unset, StateLab simplifies: a lost TaskManager is noticed
	// HeartbeatTimeout after its crash. Set, Flink's rule (heartbeat.go):
	// a request every interval, the timeout counted from the last one
	// answered, or HeartbeatRPCFailureThreshold failed requests in a row.
	HeartbeatInterval Duration `json:"heartbeatInterval,omitempty" yaml:"heartbeatInterval,omitempty"`
	// HeartbeatRPCFailureThreshold is heartbeat.rpc-failure-threshold: 0
	// means Flink's default (2), -1 turns it off. Used with
	// HeartbeatInterval only.
	HeartbeatRPCFailureThreshold int `json:"heartbeatRpcFailureThreshold,omitempty" yaml:"heartbeatRpcFailureThreshold,omitempty"`
}

// Restart strategies, as Flink's restart-strategy.type names them.
const (
	// RestartDefault (empty) applies Flink's rule
	// (RestartBackoffTimeStrategyFactoryLoader): none without periodic
	// checkpointing, exponential-delay with it.
	RestartDefault          = ""
	RestartNone             = "none"
	RestartFixedDelay       = "fixed-delay"
	RestartFailureRate      = "failure-rate"
	RestartExponentialDelay = "exponential-delay"
)

// RestartStrategies lists the strategy names a spec may use.
var RestartStrategies = []string{RestartNone, RestartFixedDelay, RestartFailureRate, RestartExponentialDelay}

// RestartSpec is Flink's restart strategy (restart-strategy.*). Zero fields
// take Flink's defaults (defaults.go); Validate leaves them zero, and
// Effective returns the strategy the job really uses.
type RestartSpec struct {
	// Strategy is none, fixed-delay, failure-rate or exponential-delay;
	// empty applies Flink's default rule.
	Strategy string `json:"strategy" yaml:"strategy"`
	// Attempts is fixed-delay.attempts (default 1),
	// failure-rate.max-failures-per-interval (default 1) or
	// exponential-delay.attempts-before-reset-backoff (default unlimited).
	Attempts int `json:"attempts" yaml:"attempts"`
	// Delay is fixed-delay.delay and failure-rate.delay (default 1 s), or
	// exponential-delay.initial-backoff (default 1 s).
	Delay Duration `json:"delay" yaml:"delay"`
	// MaxBackoff is exponential-delay.max-backoff (default 1 min).
	MaxBackoff Duration `json:"maxBackoff,omitempty" yaml:"maxBackoff,omitempty"`
	// Multiplier is exponential-delay.backoff-multiplier (default 1.5).
	Multiplier float64 `json:"multiplier,omitempty" yaml:"multiplier,omitempty"`
	// Jitter is exponential-delay.jitter-factor (default 0.1); a negative
	// value means 0 (no jitter), since 0 picks the default.
	Jitter float64 `json:"jitter,omitempty" yaml:"jitter,omitempty"`
	// ResetThreshold is exponential-delay.reset-backoff-threshold (default 1 h).
	ResetThreshold Duration `json:"resetThreshold,omitempty" yaml:"resetThreshold,omitempty"`
	// Interval is failure-rate.failure-rate-interval (default 1 min).
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// Failover strategies (jobmanager.execution.failover-strategy).
const (
	// FailoverRegion restarts the failed subtask's pipelined region
	// (RestartPipelinedRegionFailoverStrategy), Flink's default.
	FailoverRegion = "region"
	// FailoverFull restarts every subtask (RestartAllFailoverStrategy).
	FailoverFull = "full"
)

// RuntimeSpec tunes the data plane.
type RuntimeSpec struct {
	// BatchSize is how many records a source reads per poll (Flink's network
	// buffers carry many records). 0 picks the driver's default: 16 on the
	// Stepper, so a learner sees records move, 64 on the Live driver.
	BatchSize int `json:"batchSize,omitempty" yaml:"batchSize,omitempty"`
	// ChannelCapacity is how many batches a channel holds before its sender
	// is backpressured. 0 picks the driver's default: 4 (Stepper), 16 (Live).
	ChannelCapacity int `json:"channelCapacity,omitempty" yaml:"channelCapacity,omitempty"`
	// FIFO makes the Stepper deliver events oldest first instead of in a
	// seeded random order.
	FIFO bool `json:"fifo,omitempty" yaml:"fifo,omitempty"`
}

// Errors returned by spec loading and validation. The wrapped message says
// which field was wrong and what would be accepted.
var (
	ErrInvalidSpec = errors.New("engine: invalid job spec")
)

// LoadSpec reads a job spec from YAML or JSON (JSON is YAML) and validates it.
func LoadSpec(data []byte) (*JobSpec, error) {
	var s JobSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: read spec: %v", ErrInvalidSpec, err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Clone returns a deep copy of s (options maps included), so a driver can
// change parallelism without touching the caller's spec.
func (s *JobSpec) Clone() *JobSpec {
	c := *s
	c.Operators = make([]OperatorSpec, len(s.Operators))
	for i, o := range s.Operators {
		o.Options = cloneOptions(o.Options)
		c.Operators[i] = o
	}
	c.Edges = slices.Clone(s.Edges)
	return &c
}

func cloneOptions(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case []any:
			out[k] = slices.Clone(t)
		case []string:
			out[k] = slices.Clone(t)
		default:
			out[k] = v
		}
	}
	return out
}

// Operator returns the operator spec with the given id.
func (s *JobSpec) Operator(id string) (*OperatorSpec, bool) {
	for i := range s.Operators {
		if s.Operators[i].ID == id {
			return &s.Operators[i], true
		}
	}
	return nil, false
}

func specErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
}

// Validate checks s and fills in defaults: max parallelism (Flink's rule),
// backend memory, checkpoint mode exactly-once, Flink's retained count and
// checkpoint timeout (defaults.go), a cluster of one TaskManager with enough
// slots, region failover, Flink's slot request timeout and StateLab's
// heartbeat timeout. The restart strategy is checked but left as written:
// Effective applies Flink's defaults to it.
func (s *JobSpec) Validate() error {
	if s.Name == "" {
		s.Name = "job"
	}
	if len(s.Operators) == 0 {
		return specErr("the job has no operators; add at least a source and a sink")
	}
	ids := map[string]int{}
	for i := range s.Operators {
		o := &s.Operators[i]
		if o.ID == "" {
			return specErr("operator %d has no id", i)
		}
		if strings.ContainsAny(o.ID, "#> \t") {
			return specErr("operator id %q may not contain '#', '>' or spaces", o.ID)
		}
		if _, dup := ids[o.ID]; dup {
			return specErr("operator id %q is used twice", o.ID)
		}
		ids[o.ID] = i
		if !slices.Contains(operatorKinds, o.Kind) {
			return specErr("operator %q has unknown kind %q (want one of %s)", o.ID, o.Kind, strings.Join(operatorKinds, ", "))
		}
		if o.Parallelism == 0 {
			o.Parallelism = 1
		}
		if o.MaxParallelism == 0 {
			o.MaxParallelism = rescale.DefaultMaxParallelism(o.Parallelism)
		}
		if err := rescale.CheckParallelism(o.Parallelism, o.MaxParallelism); err != nil {
			return specErr("operator %q: %v", o.ID, err)
		}
		if _, err := parseOptions(o); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidSpec, err)
		}
	}
	if err := s.checkUIDs(); err != nil {
		return err
	}
	inputs := map[string][]EdgeSpec{}
	outputs := map[string][]EdgeSpec{}
	for i := range s.Edges {
		e := &s.Edges[i]
		fi, ok := ids[e.From]
		if !ok {
			return specErr("edge %d comes from unknown operator %q", i, e.From)
		}
		ti, ok := ids[e.To]
		if !ok {
			return specErr("edge %d goes to unknown operator %q", i, e.To)
		}
		if e.From == e.To {
			return specErr("edge %d connects %q to itself", i, e.From)
		}
		if e.Partitioner == "" {
			if s.Operators[fi].Parallelism == s.Operators[ti].Parallelism {
				e.Partitioner = Forward
			} else {
				e.Partitioner = Rebalance
			}
		}
		switch e.Partitioner {
		case Forward, Rebalance, Hash, Broadcast:
		default:
			return specErr("edge %s -> %s has unknown partitioner %q (want forward, rebalance, hash or broadcast)", e.From, e.To, e.Partitioner)
		}
		for _, o := range outputs[e.From] {
			if o.To == e.To {
				return specErr("edge %s -> %s is listed twice", e.From, e.To)
			}
		}
		inputs[e.To] = append(inputs[e.To], *e)
		outputs[e.From] = append(outputs[e.From], *e)
	}
	for _, o := range s.Operators {
		in, out := inputs[o.ID], outputs[o.ID]
		switch {
		case o.Kind == KindSource && len(in) > 0:
			return specErr("source %q cannot have inputs", o.ID)
		case o.Kind != KindSource && len(in) == 0:
			return specErr("operator %q has no input; connect it to a source", o.ID)
		case o.Kind == KindSink && len(out) > 0:
			return specErr("sink %q cannot have outputs", o.ID)
		}
		if isKeyedKind(o.Kind) {
			for _, e := range in {
				if e.Partitioner != Hash {
					return specErr("keyed operator %q needs hash (keyBy) inputs, but %s -> %s is %s", o.ID, e.From, e.To, e.Partitioner)
				}
			}
		}
		if o.Kind == KindBroadcastFilter {
			b := 0
			for _, e := range in {
				if e.Partitioner == Broadcast {
					b++
				}
			}
			if b != 1 || len(in) < 2 {
				return specErr("broadcast-filter %q needs exactly one broadcast input (the rules) and at least one other input", o.ID)
			}
		}
	}
	if err := s.checkForward(); err != nil {
		return err
	}
	if err := s.checkAcyclic(); err != nil {
		return err
	}
	if err := s.validateChaining(); err != nil {
		return err
	}

	switch s.Backend {
	case "":
		s.Backend = BackendMemory
	case BackendMemory, BackendFS, BackendPebble:
	default:
		return specErr("unknown backend %q (want memory, fs or pebble)", s.Backend)
	}
	c := &s.Checkpointing
	switch c.Mode {
	case "":
		c.Mode = ExactlyOnce
	case ExactlyOnce, AtLeastOnce:
	default:
		return specErr("unknown checkpointing mode %q (want exactly-once or at-least-once)", c.Mode)
	}
	if c.Interval < 0 || c.Timeout < 0 || c.MinPause < 0 {
		return specErr("checkpoint interval, timeout and min pause cannot be negative")
	}
	if err := s.validateUnaligned(); err != nil {
		return err
	}
	if c.Retained == 0 {
		c.Retained = DefaultRetainedCheckpoints
	}
	if c.Retained < 1 {
		return specErr("checkpointing.retained must be at least 1")
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(DefaultCheckpointTimeout)
	}
	if c.TolerableFailed < 0 {
		return specErr("checkpointing.tolerableFailed must be 0 or more (Flink's execution.checkpointing.tolerable-failed-checkpoints; 0 fails the job over on the first failed checkpoint)")
	}
	if c.MaxStateBytes < 0 {
		return specErr("checkpointing.maxStateBytes cannot be negative")
	}
	if c.MaxConcurrent < 0 {
		return specErr("checkpointing.maxConcurrent must be 1 or more (Flink's execution.checkpointing.max-concurrent-checkpoints, default 1: no checkpoint starts while one is pending; 0 takes the default)")
	}

	need := 0
	for _, o := range s.Operators {
		need = max(need, o.Parallelism)
	}
	if s.Cluster.TaskManagers < 0 || s.Cluster.SlotsPerTaskManager < 0 {
		return specErr("cluster sizes cannot be negative")
	}
	if s.Cluster.TaskManagers == 0 && s.Cluster.SlotsPerTaskManager == 0 {
		s.Cluster.TaskManagers = 1
		s.Cluster.SlotsPerTaskManager = need
	}
	if s.Cluster.SlotsPerTaskManager == 0 {
		s.Cluster.SlotsPerTaskManager = 1
	}

	if err := s.Restart.validate(); err != nil {
		return err
	}
	switch s.Cluster.Failover {
	case "":
		s.Cluster.Failover = FailoverRegion
	case FailoverRegion, FailoverFull:
	default:
		return specErr("cluster.failover %q is unknown (want region, Flink's default, or full)", s.Cluster.Failover)
	}
	if s.Cluster.SlotRequestTimeout < 0 || s.Cluster.HeartbeatTimeout < 0 {
		return specErr("cluster.slotRequestTimeout and cluster.heartbeatTimeout cannot be negative")
	}
	if s.Cluster.SlotRequestTimeout == 0 {
		s.Cluster.SlotRequestTimeout = Duration(DefaultSlotRequestTimeout)
	}
	if s.Cluster.HeartbeatTimeout == 0 {
		s.Cluster.HeartbeatTimeout = Duration(DefaultHeartbeatTimeout)
		if s.Cluster.HeartbeatInterval > 0 {
			// Flink's rule with Flink's heartbeat.timeout: the simplified
			// 100 ms would refuse any interval above it.
			s.Cluster.HeartbeatTimeout = Duration(FlinkHeartbeatTimeout)
		}
	}
	if s.Cluster.HeartbeatInterval < 0 || s.Cluster.HeartbeatRPCFailureThreshold < -1 {
		return specErr("cluster.heartbeatInterval cannot be negative and cluster.heartbeatRpcFailureThreshold is at least 1, or -1 (off), or 0 (Flink's default, 2)")
	}
	if s.Cluster.HeartbeatInterval > s.Cluster.HeartbeatTimeout {
		// HeartbeatServicesImpl refuses it too.
		return specErr("cluster.heartbeatInterval (%v) cannot be longer than cluster.heartbeatTimeout (%v): Flink's heartbeat timeout should be larger or equal than the heartbeat interval",
			s.Cluster.HeartbeatInterval.D(), s.Cluster.HeartbeatTimeout.D())
	}
	if s.Runtime.BatchSize < 0 || s.Runtime.ChannelCapacity < 0 {
		return specErr("runtime.batchSize and runtime.channelCapacity cannot be negative (0 picks the driver's default)")
	}
	return nil
}

// checkForward refuses a forward edge between operators of different
// parallelism, as Flink's StreamGraph does.
func (s *JobSpec) checkForward() error {
	for _, e := range s.Edges {
		if e.Partitioner != Forward {
			continue
		}
		f, _ := s.Operator(e.From)
		t, _ := s.Operator(e.To)
		if f.Parallelism != t.Parallelism {
			return specErr("forward partitioning does not allow change of parallelism: %s has %d subtasks and %s has %d; use rebalance or hash for %s -> %s",
				f.ID, f.Parallelism, t.ID, t.Parallelism, e.From, e.To)
		}
	}
	return nil
}

func (s *JobSpec) checkAcyclic() error {
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string) error
	visit = func(id string) error {
		switch state[id] {
		case 1:
			return specErr("the job graph has a cycle through %q; StateLab runs acyclic graphs", id)
		case 2:
			return nil
		}
		state[id] = 1
		for _, e := range s.Edges {
			if e.From == id {
				if err := visit(e.To); err != nil {
					return err
				}
			}
		}
		state[id] = 2
		return nil
	}
	for _, o := range s.Operators {
		if err := visit(o.ID); err != nil {
			return err
		}
	}
	return nil
}

// topoOrder lists operator indices so that every edge goes forward.
func (s *JobSpec) topoOrder() []int {
	indeg := make([]int, len(s.Operators))
	idx := map[string]int{}
	for i, o := range s.Operators {
		idx[o.ID] = i
	}
	for _, e := range s.Edges {
		indeg[idx[e.To]]++
	}
	var order []int
	done := make([]bool, len(s.Operators))
	for len(order) < len(s.Operators) {
		for i := range s.Operators {
			if !done[i] && indeg[i] == 0 {
				done[i] = true
				order = append(order, i)
				for _, e := range s.Edges {
					if e.From == s.Operators[i].ID {
						indeg[idx[e.To]]--
					}
				}
			}
		}
	}
	return order
}
