package engine

import (
	"math"
	"time"
)

// Flink's defaults, in one place. Every default a job spec does not set
// comes from here, named by the Flink configuration option it mirrors and
// the Flink class that holds it, so a learner who sets the option in Flink
// gets the same behaviour as here (docs/flink-fidelity.md lists each with
// the test that proves it).
const (
	// DefaultRetainedCheckpoints is state.checkpoints.num-retained
	// (CheckpointingOptions.MAX_RETAINED_CHECKPOINTS): 1.
	DefaultRetainedCheckpoints = 1
	// DefaultCheckpointTimeout is execution.checkpointing.timeout
	// (CheckpointingOptions.CHECKPOINTING_TIMEOUT): 10 minutes.
	DefaultCheckpointTimeout = 10 * time.Minute
	// DefaultMinPause is execution.checkpointing.min-pause
	// (CheckpointingOptions.MIN_PAUSE_BETWEEN_CHECKPOINTS): 0.
	DefaultMinPause = 0 * time.Millisecond
	// DefaultMaxConcurrentCheckpoints is
	// execution.checkpointing.max-concurrent-checkpoints
	// (CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS): 1, so by default no
	// checkpoint starts while one is pending: the periodic ticks meanwhile
	// wait in the queue and start one by one as pending ones end;
	// CheckpointingSpec.MaxConcurrent raises it.
	DefaultMaxConcurrentCheckpoints = 1
	// DefaultTolerableFailedCheckpoints is
	// execution.checkpointing.tolerable-failed-checkpoints
	// (CheckpointingOptions.TOLERABLE_FAILURE_NUMBER, enforced by
	// CheckpointFailureManager): 0, the first counted failure fails the job
	// over.
	DefaultTolerableFailedCheckpoints = 0

	// DefaultFixedDelayAttempts is restart-strategy.fixed-delay.attempts
	// (RestartStrategyOptions): 1.
	DefaultFixedDelayAttempts = 1
	// DefaultFixedDelay is restart-strategy.fixed-delay.delay: 1 s.
	DefaultFixedDelay = time.Second
	// DefaultFailureRateMaxFailures is
	// restart-strategy.failure-rate.max-failures-per-interval: 1.
	DefaultFailureRateMaxFailures = 1
	// DefaultFailureRateInterval is
	// restart-strategy.failure-rate.failure-rate-interval: 1 min.
	DefaultFailureRateInterval = time.Minute
	// DefaultFailureRateDelay is restart-strategy.failure-rate.delay: 1 s.
	DefaultFailureRateDelay = time.Second
	// DefaultExponentialInitialBackoff is
	// restart-strategy.exponential-delay.initial-backoff: 1 s.
	DefaultExponentialInitialBackoff = time.Second
	// DefaultExponentialMaxBackoff is
	// restart-strategy.exponential-delay.max-backoff: 1 min.
	DefaultExponentialMaxBackoff = time.Minute
	// DefaultExponentialMultiplier is
	// restart-strategy.exponential-delay.backoff-multiplier: 1.5.
	DefaultExponentialMultiplier = 1.5
	// DefaultExponentialJitter is
	// restart-strategy.exponential-delay.jitter-factor: 0.1.
	DefaultExponentialJitter = 0.1
	// DefaultExponentialResetThreshold is
	// restart-strategy.exponential-delay.reset-backoff-threshold: 1 h.
	DefaultExponentialResetThreshold = time.Hour
	// UnlimitedAttempts is restart-strategy.exponential-delay.
	// attempts-before-reset-backoff's default, Integer.MAX_VALUE: unlimited.
	UnlimitedAttempts = math.MaxInt32

	// DefaultSlotRequestTimeout is slot.request.timeout
	// (JobManagerOptions.SLOT_REQUEST_TIMEOUT): 5 min of job time, after
	// which the default scheduler fails the job and the restart strategy
	// decides.
	DefaultSlotRequestTimeout = 5 * time.Minute
	// FlinkHeartbeatTimeout is heartbeat.timeout (HeartbeatManagerOptions):
	// 50 s. StateLab's default (DefaultHeartbeatTimeout) is shorter, for
	// teaching; the spec's cluster.heartbeatTimeout sets Flink's own.
	FlinkHeartbeatTimeout = 50 * time.Second
	// DefaultHeartbeatTimeout is how long (job time) the JobManager takes
	// to notice a TaskManager that died without a word, unless
	// cluster.heartbeatInterval turns on Flink's rule (heartbeat.go). Flink
	// notices a killed process when heartbeat.rpc-failure-threshold (2)
	// heartbeat requests in a row fail, one every heartbeat.interval (10 s),
	// so 10-20 s, and waits heartbeat.timeout (50 s) only where requests do
	// not fail (a host gone); an active resource manager (YARN, Kubernetes)
	// or a task's lost network connection may tell it sooner. StateLab's
	// 100 ms simplifies. Job time: at the teaching pace (one real second is
	// 20 ms of job time) it is 5 s on screen; 20 s would be 17 minutes.
	DefaultHeartbeatTimeout = 100 * time.Millisecond

	// DefaultChaining is pipeline.operator-chaining.enabled (its
	// deprecated key pipeline.operator-chaining; PipelineOptions.
	// OPERATOR_CHAINING): true, operators chain where
	// StreamingJobGraphGenerator.isChainable allows. A job spec without
	// chaining: gets it (chain.go).
	DefaultChaining = true
)

// FlinkDefault is one default as docs/flink-fidelity.md lists it.
type FlinkDefault struct {
	Option string `json:"option"` // Flink's configuration key
	Class  string `json:"class"`  // the Flink class that holds or applies it
	Value  string `json:"value"`  // Flink's default
	// StateLab is StateLab's default, when it differs from Flink's (and why).
	StateLab string `json:"statelab,omitempty"`
}

// FlinkDefaults lists every failure-handling default StateLab takes from
// Flink, for the docs and the tests.
var FlinkDefaults = []FlinkDefault{
	{Option: "state.checkpoints.num-retained", Class: "CheckpointingOptions", Value: "1"},
	{Option: "execution.checkpointing.timeout", Class: "CheckpointingOptions", Value: "10 min"},
	{Option: "execution.checkpointing.min-pause", Class: "CheckpointingOptions", Value: "0"},
	{Option: "execution.checkpointing.max-concurrent-checkpoints", Class: "CheckpointingOptions", Value: "1"},
	{Option: "execution.checkpointing.tolerable-failed-checkpoints", Class: "CheckpointFailureManager", Value: "0"},
	{Option: "restart-strategy.type", Class: "RestartBackoffTimeStrategyFactoryLoader", Value: "none without checkpointing, exponential-delay with it"},
	{Option: "restart-strategy.fixed-delay.attempts / .delay", Class: "FixedDelayRestartBackoffTimeStrategy", Value: "1 / 1 s"},
	{Option: "restart-strategy.failure-rate.max-failures-per-interval / .failure-rate-interval / .delay", Class: "FailureRateRestartBackoffTimeStrategy", Value: "1 / 1 min / 1 s"},
	{Option: "restart-strategy.exponential-delay.*", Class: "ExponentialDelayRestartBackoffTimeStrategy", Value: "initial 1 s, max 1 min, multiplier 1.5, jitter 0.1, reset threshold 1 h, attempts unlimited"},
	{Option: "jobmanager.execution.failover-strategy", Class: "RestartPipelinedRegionFailoverStrategy", Value: "region"},
	{Option: "slot.request.timeout", Class: "JobManagerOptions", Value: "5 min"},
	{Option: "pipeline.operator-chaining.enabled (pipeline.operator-chaining)", Class: "PipelineOptions, StreamingJobGraphGenerator", Value: "true"},
	{Option: "heartbeat.timeout", Class: "HeartbeatManagerOptions", Value: "50 s", StateLab: "100 ms of job time from the crash, simplified (Flink notices a killed process after 2 failed heartbeat requests, 10-20 s, and waits the timeout only where requests do not fail); set cluster.heartbeatTimeout 50s and cluster.heartbeatInterval 10s for Flink's rule"},
	{Option: "heartbeat.interval", Class: "HeartbeatManagerOptions, HeartbeatManagerSenderImpl", Value: "10 s", StateLab: "unset: a crashed TaskManager is noticed cluster.heartbeatTimeout after its crash; set cluster.heartbeatInterval for Flink's rule (heartbeat.go)"},
	{Option: "heartbeat.rpc-failure-threshold", Class: "HeartbeatManagerOptions, DefaultHeartbeatMonitor", Value: "2"},
}
