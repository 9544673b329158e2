package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/statelab/statelab/state"
)

// ChaosConfig configures a chaos run: word count (a source over 4
// partitions -> tokenizer -> keyed count -> sink) with crashes and rescales
// injected at seeded moments.
type ChaosConfig struct {
	Seed     int64
	Records  int     // source lines; default 2000
	Crashes  int     // subtask or TaskManager crashes
	Rescales int     // rescales of the count operator to a random parallelism 1..6
	Backend  Backend // memory, fs or pebble
	Driver   string  // step or live
	Sink     string  // exactly-once or at-least-once
	// Job is the job under chaos: wordcount (default) or alerts (a
	// KeyedProcessFunction whose event-time timers are keyed state; its
	// keyed operator is the one rescaled).
	Job string
	// Chaining turns on operator chaining (source -> tokenizer becomes one
	// task, chain.go); Unaligned makes the checkpoints unaligned
	// (unaligned.go), so crashes hit in-flight channel state.
	Chaining  bool
	Unaligned bool
	// MaxConcurrent is the job's max-concurrent-checkpoints (0: Flink's
	// default 1). Above 1 the checkpoint interval drops to 4 ms of job
	// time, shorter than a checkpoint of this job takes, so crashes and
	// rescales hit a job with several checkpoints pending.
	MaxConcurrent int
	// Dir holds local disks and checkpoints; empty uses a temporary directory.
	Dir    string
	Logger *slog.Logger
	// Trace, when set, receives one line per injected action.
	Trace func(string)
	// liveSpan overrides how long the Live run reads its sources (tests).
	liveSpan time.Duration
}

// Chaos defaults, used by `statelab chaos` and the tests.
const (
	DefaultChaosRecords  = 2000
	DefaultChaosCrashes  = 3
	DefaultChaosRescales = 2
	chaosMaxParallelism  = 6
)

// ChaosResult is the outcome of a chaos run.
type ChaosResult struct {
	Seed       int64      `json:"seed"`
	Backend    Backend    `json:"backend"`
	Driver     string     `json:"driver"`
	Sink       string     `json:"sink"`
	Job        string     `json:"job,omitempty"`
	Keys       int        `json:"keys"`
	Records    int64      `json:"records"`
	Crashes    int        `json:"crashes"`
	Rescales   int        `json:"rescales"`
	Restores   int        `json:"restores"`
	OK         bool       `json:"ok"`
	Comparison Comparison `json:"comparison"`
	Actions    []string   `json:"actions"`
	Steps      int64      `json:"steps,omitempty"`
}

// ChaosSpec is the chaos run's job: word count with the given sink and a
// small checkpoint interval, so failures land at every stage of a
// checkpoint.
func ChaosSpec(seed int64, records int, backend Backend, sink string) *JobSpec {
	return &JobSpec{
		Name: "chaos-wordcount", Seed: seed, Backend: backend,
		Operators: []OperatorSpec{
			{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "records": records, "keys": 200}},
			{ID: "tokenizer", Kind: KindTokenizer, Parallelism: 2},
			{ID: "count", Kind: KindCount, Parallelism: 2},
			{ID: "sink", Kind: KindSink, Parallelism: 2, Options: map[string]any{"semantics": sink}},
		},
		Edges: []EdgeSpec{
			{From: "source", To: "tokenizer", Partitioner: Forward},
			{From: "tokenizer", To: "count", Partitioner: Hash},
			{From: "count", To: "sink", Partitioner: Rebalance},
		},
		// Everything else is Flink's default: one retained checkpoint, a
		// 10 min timeout, no tolerated checkpoint failure and, since
		// checkpointing is on, the exponential-delay restart strategy
		// (unlimited attempts, so no number of crashes exhausts it).
		Checkpointing: CheckpointingSpec{Interval: Duration(40 * time.Millisecond)},
		Cluster:       ClusterSpec{TaskManagers: 3, SlotsPerTaskManager: 2},
	}
}

// Chaos jobs.
const (
	ChaosWordCount = "wordcount"
	ChaosAlerts    = "alerts"
)

// AlertsChaosSpec is the chaos run's timer job: words keyed by themselves
// into the alerts operator (event-time timeout 50 ms; timestamps are
// record indexes in ms, so rare words alert many times), then the sink.
// Its keyed state has a TTL (see below).
func AlertsChaosSpec(seed int64, records int, backend Backend, sink string) *JobSpec {
	spec := ChaosSpec(seed, records, backend, sink)
	spec.Name = "chaos-alerts"
	spec.Operators = []OperatorSpec{
		{ID: "source", Kind: KindSource, Parallelism: 2, Options: map[string]any{"partitions": 4, "records": records, "keys": 200, "wordsPerLine": 1}},
		// State TTL on the alerts' state, longer than the run (expiry would
		// make the output depend on processing time, which the ground
		// truth does not model): values carry their timestamps through
		// every crash, restore and rescale, and full snapshots run the
		// TTL filter.
		{ID: "alerts", Kind: KindAlerts, Parallelism: 2, Options: map[string]any{"timeout": "50ms",
			"ttl": "1h", "ttlUpdateType": string(state.OnReadAndWrite), "ttlCleanupFullSnapshot": true}},
		{ID: "sink", Kind: KindSink, Parallelism: 2, Options: map[string]any{"semantics": sink}},
	}
	spec.Edges = []EdgeSpec{
		{From: "source", To: "alerts", Partitioner: Hash},
		{From: "alerts", To: "sink", Partitioner: Rebalance},
	}
	return spec
}

// jobSpec is the spec of the configured chaos job.
func (cfg *ChaosConfig) jobSpec() *JobSpec {
	spec := ChaosSpec(cfg.Seed, cfg.Records, cfg.Backend, cfg.Sink)
	if cfg.Job == ChaosAlerts {
		spec = AlertsChaosSpec(cfg.Seed, cfg.Records, cfg.Backend, cfg.Sink)
	}
	// Every operator its own task unless the run asks for Flink's default
	// (pipeline.operator-chaining on: source -> tokenizer is one task).
	chaining := cfg.Chaining
	spec.Chaining = &chaining
	spec.Checkpointing.Unaligned = cfg.Unaligned
	if cfg.MaxConcurrent > 1 {
		spec.Checkpointing.MaxConcurrent = cfg.MaxConcurrent
		spec.Checkpointing.Interval = Duration(4 * time.Millisecond)
	}
	return spec
}

// keyedOp is the operator the chaos run rescales.
func (cfg *ChaosConfig) keyedOp() string {
	if cfg.Job == ChaosAlerts {
		return "alerts"
	}
	return "count"
}

func (cfg *ChaosConfig) defaults() error {
	if cfg.Job == "" {
		cfg.Job = ChaosWordCount
	}
	if cfg.Job != ChaosWordCount && cfg.Job != ChaosAlerts {
		return fmt.Errorf("%w: job %q (want wordcount or alerts)", ErrBadCommand, cfg.Job)
	}
	if cfg.Records == 0 {
		cfg.Records = DefaultChaosRecords
	}
	if cfg.Backend == "" {
		cfg.Backend = BackendMemory
	}
	if cfg.Driver == "" {
		cfg.Driver = "step"
	}
	if cfg.Sink == "" {
		cfg.Sink = SinkExactlyOnce
	}
	switch {
	case cfg.Records < 1:
		return fmt.Errorf("%w: --records must be at least 1", ErrBadCommand)
	case cfg.Crashes < 0 || cfg.Rescales < 0:
		return fmt.Errorf("%w: --crashes and --rescales cannot be negative", ErrBadCommand)
	case cfg.Crashes > 1000 || cfg.Rescales > 1000:
		return fmt.Errorf("%w: at most 1000 crashes and 1000 rescales", ErrBadCommand)
	case cfg.Backend != BackendMemory && cfg.Backend != BackendFS && cfg.Backend != BackendPebble:
		return fmt.Errorf("%w: backend %q (want memory, fs or pebble)", ErrBadCommand, cfg.Backend)
	case cfg.Driver != "step" && cfg.Driver != "live":
		return fmt.Errorf("%w: driver %q (want step or live)", ErrBadCommand, cfg.Driver)
	case cfg.Sink != SinkExactlyOnce && cfg.Sink != SinkAtLeastOnce:
		return fmt.Errorf("%w: sink %q (want exactly-once or at-least-once)", ErrBadCommand, cfg.Sink)
	}
	return nil
}

// chaosAction is one injected fault or rescale.
type chaosAction struct {
	at     float64 // position in the run, 0..1
	kind   string  // crash, rescale
	moment string  // any, alignment, checkpoint
}

// chaosPlan draws the actions from the seed: K crashes and R rescales at
// random positions, each crash at a random kind of moment.
func chaosPlan(rng *rand.Rand, crashes, rescales int) []chaosAction {
	var acts []chaosAction
	moments := []string{"any", "alignment", "checkpoint"}
	for range crashes {
		acts = append(acts, chaosAction{at: 0.05 + 0.85*rng.Float64(), kind: "crash", moment: moments[rng.IntN(len(moments))]})
	}
	for range rescales {
		acts = append(acts, chaosAction{at: 0.05 + 0.85*rng.Float64(), kind: "rescale"})
	}
	slices.SortStableFunc(acts, func(a, b chaosAction) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	return acts
}

// RunChaos runs the chaos word count and compares the committed sink output
// with the ground truth. The Stepper run is a pure function of the config.
func RunChaos(ctx context.Context, cfg ChaosConfig) (*ChaosResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Driver == "live" {
		return runChaosLive(ctx, cfg)
	}
	return runChaosStep(ctx, cfg)
}

// chaosHarness is one chaos run: its configuration, its seeded random
// source and the result it fills in.
type chaosHarness struct {
	cfg ChaosConfig
	rng *rand.Rand
	res *ChaosResult
}

func (h *chaosHarness) trace(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	h.res.Actions = append(h.res.Actions, line)
	if h.cfg.Trace != nil {
		h.cfg.Trace(line)
	}
}

// pickCrash chooses a crash from a snapshot: a live subtask or a
// TaskManager hosting one, half and half.
func (h *chaosHarness) pickCrash(s *Snapshot) (Command, bool) {
	var tasks []string
	for _, o := range s.Job.Operators {
		for _, st := range o.Subtasks {
			if live(st.Status) {
				tasks = append(tasks, st.Name)
			}
		}
	}
	var tms []string
	for _, tm := range s.TaskManagers {
		if tm.Status == TMAlive && len(tm.Tasks) > 0 {
			tms = append(tms, tm.ID)
		}
	}
	if len(tasks) == 0 {
		return Command{}, false
	}
	if len(tms) > 0 && h.rng.IntN(2) == 0 {
		return Command{Name: CmdCrashTaskManager, TaskManager: tms[h.rng.IntN(len(tms))]}, true
	}
	return Command{Name: CmdCrashSubtask, Task: tasks[h.rng.IntN(len(tasks))]}, true
}

func (h *chaosHarness) pickRescale(s *Snapshot) Command {
	cur := 0
	for _, o := range s.Job.Operators {
		if o.ID == h.cfg.keyedOp() {
			cur = o.Parallelism
		}
	}
	p := 1 + h.rng.IntN(chaosMaxParallelism-1)
	if p >= cur {
		p++
	}
	return Command{Name: CmdRescale, Operator: h.cfg.keyedOp(), Parallelism: p}
}

func (h *chaosHarness) finish(cmp Comparison, counters Counters) {
	h.res.Comparison = cmp
	h.res.Keys, h.res.Records = cmp.Keys, cmp.Records
	h.res.Restores = counters.Restores
	if h.cfg.Sink == SinkExactlyOnce {
		h.res.OK = cmp.ExactlyOnce
	} else {
		h.res.OK = cmp.AtLeastOnce
	}
}

func runChaosStep(ctx context.Context, cfg ChaosConfig) (*ChaosResult, error) {
	spec := cfg.jobSpec()
	s, err := NewStepper(spec, Options{Dir: cfg.Dir, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4a05))
	h := &chaosHarness{cfg: cfg, rng: rng, res: &ChaosResult{Seed: cfg.Seed, Backend: cfg.Backend, Driver: cfg.Driver, Sink: cfg.Sink, Job: cfg.Job, Actions: []string{}}}
	// A run of word count takes about 1.6 steps per source line between
	// failures; actions are spread over that span.
	span := int64(cfg.Records)*3/2 + 200
	// restartAt holds when each lost TaskManager comes back.
	type pendingRestart struct {
		step int64
		tm   string
	}
	var restarts []pendingRestart
	// advance steps until pred holds (checked before every step) or
	// maxSteps have passed, bringing lost TaskManagers back on time.
	advance := func(pred func(c *core) bool, maxSteps int64) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		limit := s.step + maxSteps
		for {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			for len(restarts) > 0 && restarts[0].step <= s.step {
				r := restarts[0]
				restarts = restarts[1:]
				if err := s.c.do(Command{Name: CmdRestartTaskManager, TaskManager: r.tm}, s.step); err == nil {
					h.trace("step %d: restart %s", s.step, r.tm)
				}
			}
			if pred(s.c) {
				return true, nil
			}
			if s.step >= limit {
				return false, nil
			}
			if !s.stepLocked() {
				if len(restarts) > 0 {
					s.step = max(s.step, restarts[0].step)
					continue
				}
				return false, errors.New("chaos: the job stopped making progress")
			}
		}
	}
	stepTo := func(target int64) error {
		s.mu.Lock()
		n := target - s.step
		s.mu.Unlock()
		_, err := advance(func(*core) bool { return false }, max(0, n))
		return err
	}
	acts := chaosPlan(rng, cfg.Crashes, cfg.Rescales)
	for _, a := range acts {
		if err := stepTo(int64(a.at * float64(span))); err != nil {
			return nil, err
		}
		switch a.kind {
		case "crash":
			// Wait (a bounded number of steps) for the moment asked for.
			var pred func(c *core) bool
			switch a.moment {
			case "alignment":
				pred = func(c *core) bool { return c.aligning() }
			case "checkpoint":
				pred = func(c *core) bool { return c.checkpointHalfAcked() }
			}
			for tries := 0; ; tries++ {
				if pred != nil {
					if _, err := advance(pred, 400); err != nil {
						return nil, err
					}
				}
				snap := s.Snapshot()
				cmd, ok := h.pickCrash(&snap)
				if !ok {
					if tries > 50 {
						return nil, errors.New("chaos: no subtask to crash")
					}
					if err := stepTo(snap.Step + 20); err != nil {
						return nil, err
					}
					continue
				}
				if err := s.Do(cmd); err != nil {
					if err := stepTo(snap.Step + 20); err != nil {
						return nil, err
					}
					continue
				}
				h.res.Crashes++
				what := cmd.Task
				if cmd.Name == CmdCrashTaskManager {
					what = "TaskManager " + cmd.TaskManager
					restarts = append(restarts, pendingRestart{step: snap.Step + 20 + int64(rng.IntN(300)), tm: cmd.TaskManager})
					slices.SortStableFunc(restarts, func(a, b pendingRestart) int { return int(a.step - b.step) })
				}
				h.trace("step %d: crash %s (%s)", snap.Step, what, momentName(a.moment, &snap))
				break
			}
		case "rescale":
			for tries := 0; ; tries++ {
				snap := s.Snapshot()
				cmd := h.pickRescale(&snap)
				if err := s.Do(cmd); err == nil {
					h.trace("step %d: rescale count to %d", snap.Step, cmd.Parallelism)
					// Wait until it completed or failed, so R rescales are R rescales.
					before := snap.Counters.Rescales
					ok, err := advance(func(c *core) bool { return c.rescaling == nil }, 2_000_000)
					if err != nil {
						return nil, err
					}
					if !ok {
						return nil, errors.New("chaos: a rescale never finished")
					}
					if s.Snapshot().Counters.Rescales > before {
						h.res.Rescales++
						break
					}
					h.trace("rescale failed; retrying")
				}
				if tries > 10000 {
					return nil, errors.New("chaos: could not rescale")
				}
				if err := stepTo(snap.Step + 25); err != nil {
					return nil, err
				}
			}
		}
	}
	// Every lost TaskManager comes back, then the job runs to the end of input.
	for _, r := range restarts {
		_ = s.Do(Command{Name: CmdRestartTaskManager, TaskManager: r.tm})
		h.trace("end: restart %s", r.tm)
	}
	if _, err := s.RunUntilDrained(50_000_000); err != nil {
		return nil, fmt.Errorf("chaos: run to the end of input: %w", err)
	}
	cmps, err := s.Compare()
	if err != nil {
		return nil, err
	}
	snap := s.Snapshot()
	h.res.Steps = snap.Step
	h.finish(cmps[0], snap.Counters)
	return h.res, nil
}

func momentName(m string, s *Snapshot) string {
	switch m {
	case "alignment":
		for _, ch := range s.Channels {
			if ch.Blocked {
				return fmt.Sprintf("while %s aligns checkpoint %d", ch.To, ch.BlockedBy)
			}
		}
	case "checkpoint":
		for _, h := range s.Checkpoints.History {
			if h.Status == CheckpointInProgress {
				return fmt.Sprintf("during checkpoint %d, %d of %d acknowledged", h.ID, h.Acknowledged, h.Total)
			}
		}
	}
	return "job " + string(s.Job.Status)
}

// aligning reports whether some subtask holds back an input for a checkpoint.
func (c *core) aligning() bool {
	if c.ex == nil {
		return false
	}
	for _, ch := range c.ex.channels {
		if ch.blocked.Load() {
			return true
		}
	}
	return false
}

// checkpointHalfAcked reports whether a checkpoint is pending with some but
// not all acknowledgements.
func (c *core) checkpointHalfAcked() bool {
	for _, p := range c.coord.pending {
		if p.stats.Acknowledged > 0 && p.stats.Acknowledged < p.stats.Total {
			return true
		}
	}
	return false
}

// Summary is the chaos run's report line.
func (r *ChaosResult) Summary() string {
	status := "ok"
	if !r.OK {
		status = "FAILED"
	}
	if r.Sink == SinkAtLeastOnce {
		return fmt.Sprintf("at-least-once: %s (keys=%d, records=%d, duplicates=%d, losses=%d, crashes=%d, rescales=%d, restores=%d)",
			status, r.Keys, r.Records, r.Comparison.DuplicateRecords, r.Comparison.LostRecords, r.Crashes, r.Rescales, r.Restores)
	}
	return fmt.Sprintf("exactly-once: %s (keys=%d, records=%d, crashes=%d, rescales=%d, restores=%d)",
		status, r.Keys, r.Records, r.Crashes, r.Rescales, r.Restores)
}

// Diff lists what differs from the ground truth, at most limit lines per kind.
func (r *ChaosResult) Diff(limit int) []string {
	var out []string
	add := func(what string, ds []Diff) {
		for i, d := range ds {
			if i == limit {
				out = append(out, fmt.Sprintf("  … and %d more %s", len(ds)-limit, what))
				break
			}
			out = append(out, fmt.Sprintf("  %s %s", strings.TrimSuffix(what, "s"), d))
		}
	}
	if r.Sink == SinkExactlyOnce {
		add("duplicates", r.Comparison.Duplicates)
	}
	add("losses", r.Comparison.Losses)
	add("unexpecteds", r.Comparison.Unexpected)
	return out
}

// liveChaosSpan is how long (real time) the Live chaos run reads its
// sources, so that faults land while records flow.
const liveChaosSpan = 600 * time.Millisecond

func runChaosLive(ctx context.Context, cfg ChaosConfig) (*ChaosResult, error) {
	spec := cfg.jobSpec()
	spec.Runtime.BatchSize = 16
	span := liveChaosSpan
	if cfg.liveSpan > 0 {
		span = cfg.liveSpan
	}
	spec.Operators[0].Options["rate"] = float64(cfg.Records) / 2 / span.Seconds()
	l, err := NewLive(spec, Options{Dir: cfg.Dir, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4a05))
	h := &chaosHarness{cfg: cfg, rng: rng, res: &ChaosResult{Seed: cfg.Seed, Backend: cfg.Backend, Driver: cfg.Driver, Sink: cfg.Sink, Job: cfg.Job, Actions: []string{}}}
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	type pendingRestart struct {
		at time.Time
		tm string
	}
	var restarts []pendingRestart
	// wait sleeps until pred holds or d passed, bringing lost TaskManagers back on time.
	wait := func(pred func(s *Snapshot) bool, d time.Duration) (bool, error) {
		end := time.Now().Add(d)
		for {
			for len(restarts) > 0 && !time.Now().Before(restarts[0].at) {
				r := restarts[0]
				restarts = restarts[1:]
				if err := l.Do(Command{Name: CmdRestartTaskManager, TaskManager: r.tm}); err == nil {
					h.trace("%v: restart %s", time.Since(start).Round(time.Millisecond), r.tm)
				}
			}
			if pred != nil {
				snap := l.Snapshot()
				if pred(&snap) {
					return true, nil
				}
			}
			if !time.Now().Before(end) {
				return false, nil
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(300 * time.Microsecond):
			}
		}
	}
	for _, a := range chaosPlan(rng, cfg.Crashes, cfg.Rescales) {
		if _, err := wait(nil, time.Until(start.Add(time.Duration(a.at*float64(span))))); err != nil {
			return nil, err
		}
		switch a.kind {
		case "crash":
			switch a.moment {
			case "alignment":
				_, err = wait(func(s *Snapshot) bool {
					for _, ch := range s.Channels {
						if ch.Blocked {
							return true
						}
					}
					return false
				}, 300*time.Millisecond)
			case "checkpoint":
				_, err = wait(func(s *Snapshot) bool {
					for _, cp := range s.Checkpoints.History {
						if cp.Status == CheckpointInProgress && cp.Acknowledged > 0 && cp.Acknowledged < cp.Total {
							return true
						}
					}
					return false
				}, 300*time.Millisecond)
			}
			if err != nil {
				return nil, err
			}
			// The job may be RESTARTING for a while: the exponential-delay
			// backoff grows by 1.5 with every crash (1 s, 1.5 s, 2.25 s ...).
			giveUp := time.Now().Add(2 * time.Minute)
			for {
				snap := l.Snapshot()
				cmd, ok := h.pickCrash(&snap)
				if ok && l.Do(cmd) == nil {
					h.res.Crashes++
					what := cmd.Task
					if cmd.Name == CmdCrashTaskManager {
						what = "TaskManager " + cmd.TaskManager
						restarts = append(restarts, pendingRestart{at: time.Now().Add(time.Duration(10+rng.IntN(100)) * time.Millisecond), tm: cmd.TaskManager})
						slices.SortStableFunc(restarts, func(a, b pendingRestart) int { return a.at.Compare(b.at) })
					}
					h.trace("%v: crash %s (%s)", time.Since(start).Round(time.Millisecond), what, momentName(a.moment, &snap))
					break
				}
				if time.Now().After(giveUp) {
					return nil, errors.New("chaos: no subtask to crash")
				}
				if _, err := wait(nil, time.Millisecond); err != nil {
					return nil, err
				}
			}
		case "rescale":
			for tries := 0; ; tries++ {
				snap := l.Snapshot()
				cmd := h.pickRescale(&snap)
				if err := l.Do(cmd); err == nil {
					h.trace("%v: rescale count to %d", time.Since(start).Round(time.Millisecond), cmd.Parallelism)
					ok, err := wait(func(s *Snapshot) bool { return s.Job.Rescale == nil }, 60*time.Second)
					if err != nil {
						return nil, err
					}
					if !ok {
						return nil, errors.New("chaos: a rescale never finished")
					}
					if l.Snapshot().Counters.Rescales > snap.Counters.Rescales {
						h.res.Rescales++
						break
					}
					h.trace("rescale failed; retrying")
				}
				if tries > 5000 {
					return nil, errors.New("chaos: could not rescale")
				}
				if _, err := wait(nil, 2*time.Millisecond); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, r := range restarts {
		_ = l.Do(Command{Name: CmdRestartTaskManager, TaskManager: r.tm})
		h.trace("end: restart %s", r.tm)
	}
	dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := l.WaitDrained(dctx); err != nil {
		return nil, fmt.Errorf("chaos: run to the end of input: %w", err)
	}
	cmps, err := l.Compare()
	if err != nil {
		return nil, err
	}
	h.finish(cmps[0], l.Snapshot().Counters)
	return h.res, nil
}
