package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// This file is Flink's restart strategies (RestartBackoffTimeStrategy and
// its four implementations in org.apache.flink.runtime.executiongraph.
// failover), chosen as RestartBackoffTimeStrategyFactoryLoader chooses:
// the strategy the job configures, else exponential-delay when periodic
// checkpointing is on, else none. Times are the driver's clock (virtual on
// the Stepper), so a 1-minute backoff costs a lesson nothing.

func (r *RestartSpec) validate() error {
	if r.Strategy != RestartDefault && !slices.Contains(RestartStrategies, r.Strategy) {
		return specErr("unknown restart strategy %q (want %s, or leave it empty for Flink's default)", r.Strategy, strings.Join(RestartStrategies, ", "))
	}
	switch {
	case r.Attempts < 0:
		return specErr("restart.attempts cannot be negative (0 takes Flink's default)")
	case r.Delay < 0 || r.MaxBackoff < 0 || r.ResetThreshold < 0 || r.Interval < 0:
		return specErr("restart delays and intervals cannot be negative (0 takes Flink's default)")
	case r.Multiplier != 0 && r.Multiplier <= 1:
		return specErr("restart.multiplier %v: Flink's backoff multiplier must be greater than 1", r.Multiplier)
	case r.Jitter > 1:
		return specErr("restart.jitter %v: Flink's jitter factor must be within 0 and 1", r.Jitter)
	}
	e := r.effective(true)
	if e.Strategy == RestartExponentialDelay && e.Delay > e.MaxBackoff {
		return specErr("restart: the initial backoff %v is above the max backoff %v (Flink refuses it too)", e.Delay.D(), e.MaxBackoff.D())
	}
	return nil
}

// Effective returns the restart strategy the job runs with: the configured
// one with Flink's defaults for what it leaves out, or, when none is
// configured, Flink's default (exponential-delay with checkpointing, none
// without). Call it on a validated spec.
func (s *JobSpec) Effective() RestartSpec {
	return s.Restart.effective(s.Checkpointing.Interval > 0)
}

func (r RestartSpec) effective(checkpointing bool) RestartSpec {
	e := r
	if e.Strategy == RestartDefault {
		e = RestartSpec{Strategy: RestartNone}
		if checkpointing {
			e.Strategy = RestartExponentialDelay
		}
	}
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	switch e.Strategy {
	case RestartNone:
		return RestartSpec{Strategy: RestartNone}
	case RestartFixedDelay:
		if e.Attempts == 0 {
			e.Attempts = DefaultFixedDelayAttempts
		}
		def(&e.Delay, DefaultFixedDelay)
		return RestartSpec{Strategy: e.Strategy, Attempts: e.Attempts, Delay: e.Delay}
	case RestartFailureRate:
		if e.Attempts == 0 {
			e.Attempts = DefaultFailureRateMaxFailures
		}
		def(&e.Delay, DefaultFailureRateDelay)
		def(&e.Interval, DefaultFailureRateInterval)
		return RestartSpec{Strategy: e.Strategy, Attempts: e.Attempts, Delay: e.Delay, Interval: e.Interval}
	}
	if e.Attempts == 0 {
		e.Attempts = UnlimitedAttempts
	}
	def(&e.Delay, DefaultExponentialInitialBackoff)
	def(&e.MaxBackoff, DefaultExponentialMaxBackoff)
	def(&e.ResetThreshold, DefaultExponentialResetThreshold)
	if e.Multiplier == 0 {
		e.Multiplier = DefaultExponentialMultiplier
	}
	switch {
	case e.Jitter == 0:
		e.Jitter = DefaultExponentialJitter
	case e.Jitter < 0:
		e.Jitter = 0
	}
	e.Interval = 0
	return e
}

// className is the Flink class that implements the strategy.
func (r RestartSpec) className() string {
	switch r.Strategy {
	case RestartFixedDelay:
		return "FixedDelayRestartBackoffTimeStrategy"
	case RestartFailureRate:
		return "FailureRateRestartBackoffTimeStrategy"
	case RestartExponentialDelay:
		return "ExponentialDelayRestartBackoffTimeStrategy"
	}
	return "NoRestartBackoffTimeStrategy"
}

// describe is the strategy as a learner reads it.
func (r RestartSpec) describe() string {
	switch r.Strategy {
	case RestartFixedDelay:
		return fmt.Sprintf("fixed-delay (%d attempts, %v apart)", r.Attempts, r.Delay.D())
	case RestartFailureRate:
		return fmt.Sprintf("failure-rate (at most %d failures per %v, %v apart)", r.Attempts, r.Interval.D(), r.Delay.D())
	case RestartExponentialDelay:
		att := "unlimited attempts"
		if r.Attempts != UnlimitedAttempts {
			att = fmt.Sprintf("%d attempts before the backoff resets", r.Attempts)
		}
		return fmt.Sprintf("exponential-delay (from %v to at most %v, x%g, jitter %g, reset after %v, %s)",
			r.Delay.D(), r.MaxBackoff.D(), r.Multiplier, r.Jitter, r.ResetThreshold.D(), att)
	}
	return "none"
}

// restartState is the mutable part of the job's RestartBackoffTimeStrategy.
// Plain data, so a fork copies it.
type restartState struct {
	// attempt is currentRestartAttempt (fixed-delay, exponential-delay).
	attempt int
	// failures are the failure-rate strategy's recent failure times (at
	// most Attempts+1 of them, as Flink's deque).
	failures []time.Duration
	// next is exponential-delay's nextRestartTimestamp (valid when hasNext).
	next    time.Duration
	hasNext bool
	// restarted: a restart happened since next was set. A failure after it
	// (a restore that fails at the restart's own instant, too) is a new
	// attempt: in Flink the restored tasks fail after they were deployed,
	// so always after nextRestartTimestamp, and only a failure at or before
	// it merges into the backoff.
	restarted bool
	// draws counts jitter draws: the jitter of draw n comes from a
	// generator seeded with (job seed, n), so a replay or a fork draws the
	// same backoffs.
	draws uint64
	// lastDelay and restartAt describe the pending restart for the view.
	lastDelay time.Duration
	restartAt time.Duration
}

// notifyFailure records a failure at now and returns whether the strategy
// allows a restart and after what delay (Flink: notifyFailure, then
// canRestart and getBackoffTime, as ExecutionFailureHandler calls them).
func (st *restartState) notifyFailure(r RestartSpec, now time.Duration, seed int64) (bool, time.Duration) {
	switch r.Strategy {
	case RestartFixedDelay:
		st.attempt++
		return st.attempt <= r.Attempts, r.Delay.D()
	case RestartFailureRate:
		if len(st.failures) > r.Attempts {
			st.failures = st.failures[1:]
		}
		st.failures = append(st.failures, now)
		if len(st.failures) > r.Attempts && now-st.failures[0] <= r.Interval.D() {
			return false, 0
		}
		return true, r.Delay.D()
	case RestartExponentialDelay:
		// Failures within a pending backoff merge into one attempt.
		if !st.hasNext || now > st.next || st.restarted {
			if !st.hasNext || now-st.next >= r.ResetThreshold.D() {
				st.attempt = 0
			}
			st.next = now + st.backoff(r, seed)
			st.hasNext = true
			st.restarted = false
			st.attempt++
		}
		return st.attempt <= r.Attempts, max(0, st.next-now)
	}
	return false, 0
}

// backoff is calculateActualBackoffTime: initial * multiplier^attempt in
// whole milliseconds, plus a jitter drawn uniformly from
// [-jitter*backoff, +jitter*backoff], clamped to [initial, max].
func (st *restartState) backoff(r RestartSpec, seed int64) time.Duration {
	initial := r.Delay.D().Milliseconds()
	maxMS := r.MaxBackoff.D().Milliseconds()
	// Java's (long) cast saturates at Long.MAX_VALUE; Go's conversion of a
	// float past the int64 range is undefined, so saturate here (after
	// ~1,750 attempts at 1.5 the power leaves the range). The sum with the
	// jitter saturates too, so the backoff stays at its cap.
	cur := int64(math.MaxInt64)
	if f := float64(initial) * math.Pow(r.Multiplier, float64(st.attempt)); f < math.MaxInt64 {
		cur = int64(f)
	}
	var jitter int64
	if r.Jitter > 0 {
		off := min(int64(float64(cur)*r.Jitter), (math.MaxInt64-1)/2)
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed0000+st.draws))
		st.draws++
		jitter = rng.Int64N(2*off+1) - off
	}
	sum := cur + jitter
	if jitter > 0 && cur > math.MaxInt64-jitter {
		sum = math.MaxInt64
	}
	return time.Duration(max(initial, min(sum, maxMS))) * time.Millisecond
}

// maxAttempts is what the view shows as the limit (0: unlimited or by rate).
func (r RestartSpec) maxAttempts() int {
	switch r.Strategy {
	case RestartFixedDelay:
		return r.Attempts
	case RestartExponentialDelay:
		if r.Attempts != UnlimitedAttempts {
			return r.Attempts
		}
	}
	return 0
}
