package web

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/web/pages"
)

// Limits bound what one session may ask of the server, so a classroom
// laptop cannot be exhausted by one command, one link or one student. The
// same bounds apply to sandbox settings, the rescale and add-taskmanager
// commands, imported scenarios, share links, forks and seeks; every refusal
// names the bound and the statelab serve flag that raises it
// (docs/security.md lists them with the tests that prove them).
type Limits struct {
	// Parallelism bounds every operator's parallelism (--max-parallelism,
	// default 8): sandbox settings and rescale.
	Parallelism int
	// TaskManagers bounds the TaskManagers of a session's cluster
	// (--max-taskmanagers, default 8): settings and add-taskmanager.
	TaskManagers int
	// Keys bounds the distinct keys a sandbox's source generates
	// (--max-keys, default 10,000): the state every checkpoint copies.
	Keys int
	// ReplaySteps bounds the steps a replay may take (--max-replay-steps,
	// default 200,000): share links, imported scenarios, forks and seeks.
	ReplaySteps int64
	// Commands bounds the commands one session records (--max-commands,
	// default 1,000): its log is replayed by every fork, seek and link.
	Commands int
	// ReplayTime bounds the time one replay may compute before it is
	// stopped (--max-replay-time, default 20s).
	ReplayTime time.Duration
}

// DefaultLimits are the bounds when a Config leaves them zero.
var DefaultLimits = Limits{Parallelism: 8, TaskManagers: 8, Keys: 10_000, ReplaySteps: 200_000, Commands: 1000, ReplayTime: 20 * time.Second}

// unbounded is for re-reading settings a server already accepted.
var unbounded = Limits{Parallelism: 1 << 15, TaskManagers: 1 << 15, Keys: 1 << 30, ReplaySteps: 1 << 40, Commands: 1 << 30, ReplayTime: 1 << 62}

func (l *Limits) setDefaults() {
	d := DefaultLimits
	if l.Parallelism <= 0 {
		l.Parallelism = d.Parallelism
	}
	if l.TaskManagers <= 0 {
		l.TaskManagers = d.TaskManagers
	}
	if l.Keys <= 0 {
		l.Keys = d.Keys
	}
	if l.ReplaySteps <= 0 {
		l.ReplaySteps = d.ReplaySteps
	}
	if l.Commands <= 0 {
		l.Commands = d.Commands
	}
	if l.ReplayTime <= 0 {
		l.ReplayTime = d.ReplayTime
	}
}

// limitError is a refusal that names the bound and the flag that raises it.
func limitError(what string, got any, bound any, flag string) *protoError {
	return perr(CodeBadArgs, "%s %v is above this server's bound of %v; whoever runs the server can raise it with statelab serve --%s", what, got, bound, flag)
}

// checkLimits checks a command against the session's bounds, before the
// engine sees it.
func (l Limits) checkCommand(cmd *Command, snap *engine.Snapshot) *protoError {
	if engineCommandNames[cmd.Name] && len(snap.Commands) >= l.Commands {
		return perr(CodeRefused, "%s: this session has recorded %d commands, this server's bound (every fork and share link replays them); reset the run or open a new sandbox, or whoever runs the server can raise it with statelab serve --max-commands",
			cmd.Name, len(snap.Commands))
	}
	switch cmd.Name {
	case CmdRescale:
		if cmd.Parallelism > l.Parallelism {
			return limitError("rescale: parallelism", cmd.Parallelism, l.Parallelism, "max-parallelism")
		}
	case CmdAddTaskManager:
		if n := len(snap.TaskManagers); n >= l.TaskManagers {
			return perr(CodeBadArgs, "add-taskmanager: the cluster already has %d TaskManagers, this server's bound; restart a lost one instead, or whoever runs the server can raise it with statelab serve --max-taskmanagers", n)
		}
	}
	return nil
}

// checkScenario checks a scenario's size against the bounds before any
// replay work: its steps, its commands, and what its commands would build.
func (l Limits) checkScenario(sc Scenario, spec *engine.JobSpec) *protoError {
	if sc.Step > l.ReplaySteps {
		return perr(CodeBadArgs, "the scenario replays %d steps, above this server's bound of %d; share an earlier step, or whoever runs the server can raise it with statelab serve --max-replay-steps", sc.Step, l.ReplaySteps)
	}
	if len(sc.Commands) > l.Commands {
		return perr(CodeBadArgs, "the scenario has %d commands, above this server's bound of %d; whoever runs the server can raise it with statelab serve --max-commands", len(sc.Commands), l.Commands)
	}
	tms := spec.Cluster.TaskManagers
	for i, lc := range sc.Commands {
		switch lc.Command.Name {
		case engine.CmdRescale:
			if lc.Command.Parallelism > l.Parallelism {
				return limitError(fmt.Sprintf("scenario command %d: rescale to parallelism", i), lc.Command.Parallelism, l.Parallelism, "max-parallelism")
			}
		case engine.CmdAddTaskManager:
			if tms++; tms > l.TaskManagers {
				return limitError(fmt.Sprintf("scenario command %d: TaskManager count", i), tms, l.TaskManagers, "max-taskmanagers")
			}
		}
	}
	return nil
}

// checkSettings checks parsed sandbox settings against the bounds.
func (l Limits) checkSettings(s SandboxSettings) error {
	for op, p := range s.Parallelism {
		if p > l.Parallelism {
			return fmt.Errorf("%w: p.%s=%d is above this server's bound of %d on parallelism; choose 1 to %d, or whoever runs the server can raise it with statelab serve --max-parallelism", ErrBadArgs, op, p, l.Parallelism, l.Parallelism)
		}
	}
	if s.TaskManagers > l.TaskManagers {
		return fmt.Errorf("%w: taskManagers=%d is above this server's bound of %d; choose 1 to %d, or whoever runs the server can raise it with statelab serve --max-taskmanagers", ErrBadArgs, s.TaskManagers, l.TaskManagers, l.TaskManagers)
	}
	if s.Keys > l.Keys {
		return fmt.Errorf("%w: keys=%d is above this server's bound of %d (every checkpoint copies the state of every key); choose 1 to %d, or whoever runs the server can raise it with statelab serve --max-keys", ErrBadArgs, s.Keys, l.Keys, l.Keys)
	}
	return nil
}

// settings parses sandbox settings from q within the server's bounds.
func (srv *Server) settings(t *JobTemplate, q map[string][]string) (SandboxSettings, error) {
	s, err := parseSettings(t, q, srv.cfg.Limits)
	if err != nil {
		return s, err
	}
	return s, srv.cfg.Limits.checkSettings(s)
}

// replayError says why a replay stopped: its budget ran out (the bound and
// its flag), or the one who asked for it went away.
func replayError(err error, steps int64, budget time.Duration) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: replaying %d steps took longer than this server's bound of %s, so it was stopped; share an earlier step or fewer keys, or whoever runs the server can raise it with statelab serve --max-replay-time", ErrRefused, steps, budget)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%w: the replay was stopped because nobody waits for it any more", ErrRefused)
	}
	return err
}

// Cost model of a replay, from statelab bench --only sessions on a 2-core
// machine (CPU time: 8.9 us per step of a default sandbox, 30 us at 10,000
// keys and 10 ms checkpoints), doubled for a loaded machine's wall time:
// each step costs about replayStepCost, and each checkpoint copies the state
// of every key, about replayKeyCost per key and step at the least
// checkpoint interval (10 ms), less at longer ones.
const (
	replayStepCost = 18 * time.Microsecond
	replayKeyCost  = 4 * time.Nanosecond
)

// replayEstimate is the estimated computing time of replaying steps of a
// job whose sources generate keys distinct keys, checkpointing every
// interval (0: never).
func replayEstimate(steps int64, keys int, interval time.Duration) time.Duration {
	per := replayStepCost
	if interval > 0 && keys > 0 {
		per += time.Duration(float64(replayKeyCost) * float64(keys) * float64(minCheckpointInterval) / float64(interval))
	}
	return time.Duration(steps) * per
}

// estimateReplay checks a scenario against the bounds and estimates its
// cost, before any work; a replay estimated above the budget is refused.
func (srv *Server) estimateReplay(sc Scenario) (pages.ReplayView, *protoError) {
	run, template, pe := srv.scenarioRun(sc)
	if pe != nil {
		return pages.ReplayView{}, pe
	}
	keys := 0
	for _, o := range run.Spec.Operators {
		if o.Kind != engine.KindSource {
			continue
		}
		for _, k := range []string{"keys", "pages"} {
			if n, ok := o.Options[k].(int); ok {
				keys += n
			}
		}
	}
	interval := run.Spec.Checkpointing.Interval.D()
	est := replayEstimate(sc.Step, keys, interval)
	budget := srv.cfg.Limits.ReplayTime
	if est > budget {
		return pages.ReplayView{}, perr(CodeBadArgs, "replaying this run's %d steps with %d keys, checkpointing every %s, would take about %s, above this server's bound of %s per replay; share an earlier step, or whoever runs the server can raise it with statelab serve --max-replay-time",
			sc.Step, keys, interval, est.Round(100*time.Millisecond), budget)
	}
	job := template
	if sc.Lesson != "" {
		job += " (" + sc.Job + ")"
	}
	return pages.ReplayView{Job: job, Steps: sc.Step, Commands: len(sc.Commands), Keys: keys, Estimate: est.Seconds(), Budget: budget.Seconds()}, nil
}
