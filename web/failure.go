package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statelab/statelab/engine"
)

// Failure handling in the protocol: the sandbox settings that configure it
// (restart strategy, checkpoint timeout and tolerance, retained
// checkpoints, failover strategy, scheduler, slot request and heartbeat
// timeouts), the restore command and the etl template. The names are
// exact: outside clients depend on them (docs/protocol.md).

// FailureSettings are the sandbox settings of failure handling. Zero
// values take Flink's defaults (engine/defaults.go).
type FailureSettings struct {
	Restart           string // default, none, fixed-delay, failure-rate, exponential-delay
	RestartAttempts   int
	RestartDelay      time.Duration
	CheckpointTimeout time.Duration
	Tolerable         int
	Retained          int
	// MaxConcurrent and MinPause are execution.checkpointing's
	// max-concurrent-checkpoints and min-pause (0: Flink's 1 and 0).
	MaxConcurrent int
	MinPause      time.Duration
	Failover      string // region or full
	Scheduler     string // default or reactive
	SlotRequest   time.Duration
	Heartbeat     time.Duration
	// HeartbeatInterval and HeartbeatRPCFailureThreshold turn on Flink's
	// heartbeat rule (heartbeat.interval, heartbeat.rpc-failure-threshold;
	// engine/heartbeat.go); the threshold is -1 (off) or 0 (Flink's 2).
	HeartbeatInterval            time.Duration
	HeartbeatRPCFailureThreshold int
	// Pipeline is chaining and unaligned checkpoints (pipeline.go).
	Pipeline PipelineSettings
	// LocalRecovery is state.backend.local-recovery (localRecovery=true).
	LocalRecovery bool
}

// Scheduler names (scheduler setting).
const (
	SchedulerDefault  = "default"
	SchedulerReactive = "reactive"
)

// Bounds of the failure settings.
const (
	maxRestartAttempts   = 1_000_000
	maxTolerableFailures = 1_000_000
	maxRetained          = 100
	// maxConcurrentCheckpoints bounds max-concurrent-checkpoints (Flink
	// sets none; more than a few in flight teaches nothing more).
	maxConcurrentCheckpoints = 10
	// maxRPCFailureThreshold bounds heartbeat.rpc-failure-threshold.
	maxRPCFailureThreshold = 100
	maxFailureDuration     = 24 * time.Hour
	// minCheckpointTimeout is Flink's least checkpoint timeout
	// (CheckpointCoordinatorConfiguration.MINIMAL_CHECKPOINT_TIME).
	minCheckpointTimeout = 10 * time.Millisecond
)

// restartSettingNames are the restart setting's values.
var restartSettingNames = append([]string{"default"}, engine.RestartStrategies...)

// parseDurationSetting reads a Go duration ("2s") or a whole number of
// milliseconds.
func parseDurationSetting(v string) (time.Duration, bool) {
	if d, err := time.ParseDuration(v); err == nil {
		return d, true
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Millisecond, true
	}
	return 0, false
}

// parseFailureSettings reads the failure settings from q into f.
func parseFailureSettings(q url.Values, f *FailureSettings) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadArgs, field, fmt.Sprintf(format, a...))
	}
	dur := func(name string, lo time.Duration, zeroOK bool, dst *time.Duration, what string) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		d, ok := parseDurationSetting(v)
		if !ok || d < 0 || d > maxFailureDuration || (d < lo && !(zeroOK && d == 0)) {
			return bad(name, "%q: want a duration such as 2s or 500ms, from %v to %v (%s)", v, lo, maxFailureDuration, what)
		}
		*dst = d
		return nil
	}
	num := func(name string, lo, hi int, dst *int, what string) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return bad(name, "%q: want a whole number from %d to %d (%s)", v, lo, hi, what)
		}
		*dst = n
		return nil
	}
	if v := q.Get("restart"); v != "" {
		if !slices.Contains(restartSettingNames, v) {
			return bad("restart", "%q is unknown; choose %s (default is Flink's rule: none without checkpointing, exponential-delay with it)", v, strings.Join(restartSettingNames, ", "))
		}
		f.Restart = v
	}
	if err := num("restartAttempts", 0, maxRestartAttempts, &f.RestartAttempts, "0 takes Flink's default: fixed-delay 1, failure-rate 1 per interval, exponential-delay unlimited"); err != nil {
		return err
	}
	if err := dur("restartDelay", 0, true, &f.RestartDelay, "fixed-delay and failure-rate delay, or exponential-delay's initial backoff; 0 takes Flink's 1 s"); err != nil {
		return err
	}
	if err := dur("checkpointTimeout", minCheckpointTimeout, false, &f.CheckpointTimeout, "execution.checkpointing.timeout; Flink's default is 10m"); err != nil {
		return err
	}
	if err := num("tolerableFailedCheckpoints", 0, maxTolerableFailures, &f.Tolerable, "execution.checkpointing.tolerable-failed-checkpoints; Flink's default 0 fails the job over on the first failed checkpoint"); err != nil {
		return err
	}
	if err := num("retainedCheckpoints", 1, maxRetained, &f.Retained, "state.checkpoints.num-retained; Flink's default is 1"); err != nil {
		return err
	}
	if err := num("maxConcurrentCheckpoints", 1, maxConcurrentCheckpoints, &f.MaxConcurrent, "execution.checkpointing.max-concurrent-checkpoints; Flink's default 1 starts no checkpoint while one is in progress, and one asked for by hand waits"); err != nil {
		return err
	}
	if err := dur("minPauseBetweenCheckpoints", 0, true, &f.MinPause, "execution.checkpointing.min-pause: the least time from the last completed checkpoint (an expired or declined one does not count) to the start of the next periodic one; Flink's default is 0"); err != nil {
		return err
	}
	if v := q.Get("failover"); v != "" {
		if v != engine.FailoverRegion && v != engine.FailoverFull {
			return bad("failover", "%q is unknown; choose region (Flink's default: restart the failed task's pipelined region) or full (restart every task)", v)
		}
		f.Failover = v
	}
	if v := q.Get("scheduler"); v != "" {
		if v != SchedulerDefault && v != SchedulerReactive {
			return bad("scheduler", "%q is unknown; choose default or reactive (the adaptive scheduler's reactive mode)", v)
		}
		f.Scheduler = v
	}
	if err := dur("slotRequestTimeout", time.Millisecond, false, &f.SlotRequest, "slot.request.timeout; Flink's default is 5m"); err != nil {
		return err
	}
	if err := parsePipelineSettings(q, &f.Pipeline); err != nil {
		return err
	}
	if v := q.Get("localRecovery"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return bad("localRecovery", "%q: want true or false (state.backend.local-recovery: keep a copy of checkpointed state on each TaskManager's disk and restore from it; Flink's default is false)", v)
		}
		f.LocalRecovery = on
	}
	if err := dur("heartbeatTimeout", time.Millisecond, false, &f.Heartbeat, "heartbeat.timeout: how long a TaskManager whose heartbeat requests go unanswered goes unnoticed; Flink's is 50s, StateLab's simplified default 100ms"); err != nil {
		return err
	}
	if err := dur("heartbeatInterval", time.Millisecond, false, &f.HeartbeatInterval, "heartbeat.interval: one heartbeat request every interval turns on Flink's rule, with Flink's heartbeat.timeout 50s unless heartbeatTimeout is set; Flink's interval is 10s, unset keeps StateLab's simplified rule"); err != nil {
		return err
	}
	if v := q.Get("heartbeatRpcFailureThreshold"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 || n == 0 || n > maxRPCFailureThreshold {
			return bad("heartbeatRpcFailureThreshold", "%q: want -1 (off) or a whole number from 1 to %d (heartbeat.rpc-failure-threshold: failed heartbeat requests in a row that tell a TaskManager is gone; Flink's default is 2)", v, maxRPCFailureThreshold)
		}
		f.HeartbeatRPCFailureThreshold = n
	}
	if f.HeartbeatRPCFailureThreshold != 0 && f.HeartbeatInterval == 0 {
		return bad("heartbeatRpcFailureThreshold", "needs heartbeatInterval: the threshold counts heartbeat requests, which go out once per heartbeat.interval (e.g. heartbeatInterval=200ms)")
	}
	timeout := f.Heartbeat
	if timeout == 0 {
		timeout = engine.FlinkHeartbeatTimeout // with an interval (engine's spec)
	}
	if f.HeartbeatInterval > timeout {
		return bad("heartbeatInterval", "%v is longer than heartbeatTimeout %v; Flink refuses a heartbeat.interval above heartbeat.timeout: raise heartbeatTimeout or shorten the interval", f.HeartbeatInterval, timeout)
	}
	return nil
}

// apply writes f into spec.
func (f FailureSettings) apply(spec *engine.JobSpec) {
	if f.Restart != "" && f.Restart != "default" {
		spec.Restart.Strategy = f.Restart
	}
	if f.RestartAttempts != 0 {
		spec.Restart.Attempts = f.RestartAttempts
	}
	if f.RestartDelay != 0 {
		spec.Restart.Delay = engine.Duration(f.RestartDelay)
	}
	if f.CheckpointTimeout != 0 {
		spec.Checkpointing.Timeout = engine.Duration(f.CheckpointTimeout)
	}
	spec.Checkpointing.TolerableFailed = f.Tolerable
	if f.Retained != 0 {
		spec.Checkpointing.Retained = f.Retained
	}
	if f.MaxConcurrent != 0 {
		spec.Checkpointing.MaxConcurrent = f.MaxConcurrent
	}
	if f.MinPause != 0 {
		spec.Checkpointing.MinPause = engine.Duration(f.MinPause)
	}
	if f.Failover != "" {
		spec.Cluster.Failover = f.Failover
	}
	if f.Scheduler == SchedulerReactive {
		spec.Cluster.Reactive = true
	}
	if f.SlotRequest != 0 {
		spec.Cluster.SlotRequestTimeout = engine.Duration(f.SlotRequest)
	}
	if f.Heartbeat != 0 {
		spec.Cluster.HeartbeatTimeout = engine.Duration(f.Heartbeat)
	}
	if f.HeartbeatInterval != 0 {
		spec.Cluster.HeartbeatInterval = engine.Duration(f.HeartbeatInterval)
	}
	if f.HeartbeatRPCFailureThreshold != 0 {
		spec.Cluster.HeartbeatRPCFailureThreshold = f.HeartbeatRPCFailureThreshold
	}
	f.Pipeline.apply(spec)
	spec.Checkpointing.LocalRecovery = f.LocalRecovery
}

// failureSettingsFromSpec writes the failure settings that rebuild spec's
// failure handling into q (settingsFromSpec checks the rebuild).
func failureSettingsFromSpec(q url.Values, spec *engine.JobSpec) {
	r := spec.Restart
	if r.Strategy == engine.RestartDefault {
		q.Set("restart", "default")
	} else {
		q.Set("restart", r.Strategy)
	}
	if r.Attempts != 0 {
		q.Set("restartAttempts", strconv.Itoa(r.Attempts))
	}
	if r.Delay != 0 {
		q.Set("restartDelay", r.Delay.D().String())
	}
	c := spec.Checkpointing
	q.Set("checkpointTimeout", c.Timeout.D().String())
	q.Set("tolerableFailedCheckpoints", strconv.Itoa(c.TolerableFailed))
	q.Set("retainedCheckpoints", strconv.Itoa(c.Retained))
	if c.MaxConcurrent > 1 {
		q.Set("maxConcurrentCheckpoints", strconv.Itoa(c.MaxConcurrent))
	}
	if c.MinPause != 0 {
		q.Set("minPauseBetweenCheckpoints", c.MinPause.D().String())
	}
	if c.LocalRecovery {
		q.Set("localRecovery", "true")
	}
	q.Set("failover", spec.Cluster.Failover)
	if spec.Cluster.Reactive {
		q.Set("scheduler", SchedulerReactive)
	} else {
		q.Set("scheduler", SchedulerDefault)
	}
	q.Set("slotRequestTimeout", spec.Cluster.SlotRequestTimeout.D().String())
	q.Set("heartbeatTimeout", spec.Cluster.HeartbeatTimeout.D().String())
	if spec.Cluster.HeartbeatInterval != 0 {
		q.Set("heartbeatInterval", spec.Cluster.HeartbeatInterval.D().String())
	}
	if spec.Cluster.HeartbeatRPCFailureThreshold != 0 {
		q.Set("heartbeatRpcFailureThreshold", strconv.Itoa(spec.Cluster.HeartbeatRPCFailureThreshold))
	}
	pipelineSettingsFromSpec(q, spec)
}

// CmdRestore is the restore command: {"checkpoint": N} starts the job again
// from retained checkpoint or savepoint N, as `flink run -s` would.
const CmdRestore = "restore"

func parseRestore(raw json.RawMessage, c *Command) *protoError {
	var a struct {
		Checkpoint *int64 `json:"checkpoint"`
	}
	if e := decodeArgs(CmdRestore, raw, &a, `{"checkpoint":3}`); e != nil {
		return e
	}
	if a.Checkpoint == nil {
		return perr(CodeBadArgs, `restore: args.checkpoint is required: the id of a retained checkpoint or savepoint, e.g. {"checkpoint":3}`)
	}
	if *a.Checkpoint < 1 {
		return perr(CodeBadArgs, "restore: checkpoint %d is not a checkpoint id; ids start at 1", *a.Checkpoint)
	}
	c.Checkpoint = *a.Checkpoint
	return nil
}

func init() {
	commands[CmdRestore] = commandDef{parse: parseRestore}
	Templates = append(Templates, etlTemplate)
}

// etlTemplate is a job of forward edges only: source (2 partitions) -> map
// -> sink at parallelism 2, so it has two pipelined regions (source#i,
// map#i, sink#i). Crashing source#0 restarts only its region.
var etlTemplate = &JobTemplate{
	ID: "etl", TitleKey: "template.etl.title", DescKey: "template.etl.desc",
	Tunable: []string{},
	Defaults: SandboxSettings{Backend: "memory", Parallelism: map[string]int{}, Interval: 200 * time.Millisecond, TaskManagers: 2, Slots: 1,
		Seed: 1, Keys: 50, Driver: DriverStepper, Sink: engine.SinkExactlyOnce},
	build: func(s SandboxSettings) *engine.JobSpec {
		return &engine.JobSpec{
			Name:     "etl",
			Chaining: new(false), // every operator its own box, as the other templates
			Operators: []engine.OperatorSpec{
				{ID: "source", Kind: engine.KindSource, Parallelism: 2, Options: map[string]any{"partitions": 2, "generator": engine.GeneratorWords, "records": sandboxRecords, "keys": s.Keys}},
				{ID: "map", Kind: engine.KindMap, Parallelism: 2, Options: map[string]any{"fn": "upper"}},
				{ID: "sink", Kind: engine.KindSink, Parallelism: 2},
			},
			Edges: []engine.EdgeSpec{
				{From: "source", To: "map", Partitioner: engine.Forward},
				{From: "map", To: "sink", Partitioner: engine.Forward},
			},
		}
	},
}
