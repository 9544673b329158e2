package engine

import (
	"fmt"
	"strings"
)

// Command names, as the web protocol spells them. Driver controls (pause,
// resume, step, speed, reset, snapshot) are methods of the drivers, not
// commands: they do not change what the job does, only when.
const (
	CmdCrashSubtask       = "crash-subtask"       // Task
	CmdCrashTaskManager   = "crash-taskmanager"   // TaskManager
	CmdRestartTaskManager = "restart-taskmanager" // TaskManager
	CmdAddTaskManager     = "add-taskmanager"     // Slots (optional; 0 = the cluster's slots per TaskManager)
	CmdTriggerCheckpoint  = "trigger-checkpoint"  // (none)
	CmdTriggerSavepoint   = "trigger-savepoint"   // (none)
	CmdRescale            = "rescale"             // Operator, Parallelism
	CmdInject             = "inject"              // Operator, Partition (-1 = next in turn), Text
	CmdRestore            = "restore"             // Checkpoint: start again from retained checkpoint or savepoint N
	// CmdUpgrade starts a changed job from a retained checkpoint or
	// savepoint: Checkpoint, Change (see UpgradeChanges) with Operator,
	// Kind, UID, Parallelism or MaxParallelism, AllowNonRestoredState.
	CmdUpgrade = "upgrade"
)

// Command is one thing a user (or a lesson, or the chaos run) does to the
// job. Only the fields its Name lists are read.
type Command struct {
	Name        string `json:"name"`
	Task        string `json:"task,omitempty"`
	TaskManager string `json:"taskManager,omitempty"`
	Operator    string `json:"operator,omitempty"`
	Parallelism int    `json:"parallelism,omitempty"`
	Partition   int    `json:"partition,omitempty"`
	Text        string `json:"text,omitempty"`
	// Slots is how many slots an added TaskManager offers; 0 takes the
	// cluster's slotsPerTaskManager.
	Slots int `json:"slots,omitempty"`
	// Checkpoint is the retained checkpoint or savepoint a restore starts from.
	Checkpoint int64 `json:"checkpoint,omitempty"`
	// Change, Kind, UID, MaxParallelism and AllowNonRestoredState are an
	// upgrade's (see the Change constants).
	Change                string `json:"change,omitempty"`
	Kind                  string `json:"kind,omitempty"`
	UID                   string `json:"uid,omitempty"`
	UIDHash               string `json:"uidHash,omitempty"`
	MaxParallelism        int    `json:"maxParallelism,omitempty"`
	AllowNonRestoredState bool   `json:"allowNonRestoredState,omitempty"`
}

func (c Command) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	add := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	add("task", c.Task)
	add("taskManager", c.TaskManager)
	add("operator", c.Operator)
	if c.Name == CmdRescale {
		add("parallelism", fmt.Sprint(c.Parallelism))
	}
	if c.Name == CmdAddTaskManager && c.Slots != 0 {
		add("slots", fmt.Sprint(c.Slots))
	}
	if c.Name == CmdRestore || c.Name == CmdUpgrade {
		add("checkpoint", fmt.Sprint(c.Checkpoint))
	}
	if c.Name == CmdUpgrade {
		add("change", c.Change)
		add("kind", c.Kind)
		if c.UID != "" || c.Change == ChangeSetUID {
			add("uid", fmt.Sprintf("%q", c.UID))
		}
		add("uidHash", c.UIDHash)
		if c.Change == ChangeSetParallelism {
			add("parallelism", fmt.Sprint(c.Parallelism))
		}
		if c.Change == ChangeSetMaxParallelism {
			add("maxParallelism", fmt.Sprint(c.MaxParallelism))
		}
		if c.AllowNonRestoredState {
			add("allowNonRestoredState", "true")
		}
	}
	if c.Name == CmdInject {
		add("partition", fmt.Sprint(c.Partition))
		add("text", fmt.Sprintf("%q", c.Text))
	}
	return b.String()
}

// LoggedCommand is a command with the Stepper step before which it was
// applied. Replaying the log on a Stepper of the same spec and seed gives
// the same run.
type LoggedCommand struct {
	Step    int64   `json:"step"`
	Command Command `json:"command"`
	// Failed records that the command was refused (it is replayed anyway:
	// a refusal is part of the run).
	Failed bool   `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// do applies cmd and logs it.
func (c *core) do(cmd Command, step int64) error {
	err := c.apply(cmd)
	lc := LoggedCommand{Step: step, Command: cmd}
	msg := "command " + cmd.String()
	if err != nil {
		lc.Failed, lc.Error = true, err.Error()
		msg += " refused: " + err.Error()
	}
	c.cmdLog = append(c.cmdLog, lc)
	cp := cmd
	c.publish(Event{Kind: EvCommand, Command: &cp, Message: msg})
	return err
}

func (c *core) apply(cmd Command) error {
	if c.terminal && cmd.Name != CmdAddTaskManager && cmd.Name != CmdRestartTaskManager && cmd.Name != CmdInject && cmd.Name != CmdRestore && cmd.Name != CmdUpgrade {
		return fmt.Errorf("%w: the job is %s", ErrJobTerminal, c.status)
	}
	switch cmd.Name {
	case CmdCrashSubtask:
		return c.crashSubtask(cmd.Task)
	case CmdCrashTaskManager:
		return c.crashTaskManager(cmd.TaskManager)
	case CmdRestartTaskManager:
		return c.restartTaskManager(cmd.TaskManager)
	case CmdAddTaskManager:
		_, err := c.addTaskManager(cmd.Slots)
		return err
	case CmdTriggerCheckpoint:
		return c.requestCheckpoint()
	case CmdTriggerSavepoint:
		_, err := c.triggerCheckpoint(true, false)
		return err
	case CmdRescale:
		return c.rescale(cmd.Operator, cmd.Parallelism)
	case CmdInject:
		return c.inject(cmd.Operator, cmd.Partition, cmd.Text)
	case CmdRestore:
		if cmd.Checkpoint < 1 {
			return fmt.Errorf("%w: restore needs the checkpoint to start from, {\"checkpoint\": N} with N a retained checkpoint or savepoint id", ErrBadCommand)
		}
		return c.restoreFrom(cmd.Checkpoint)
	case CmdUpgrade:
		return c.upgrade(cmd)
	}
	return fmt.Errorf("%w: unknown command %q (want %s)", ErrBadCommand, cmd.Name,
		strings.Join([]string{CmdCrashSubtask, CmdCrashTaskManager, CmdRestartTaskManager, CmdAddTaskManager,
			CmdTriggerCheckpoint, CmdTriggerSavepoint, CmdRescale, CmdInject, CmdRestore, CmdUpgrade}, ", "))
}

// Engine is what both drivers offer a viewer (the web session, a lesson).
// The Stepper adds Step, Steps, RunFor, RunUntil, RunUntilDrained, Play and
// Replay; the Live driver adds Start and WaitDrained.
type Engine interface {
	// Do applies a command (see the Cmd constants).
	Do(cmd Command) error
	// Snapshot returns the whole picture as plain data.
	Snapshot() Snapshot
	// TaskState returns the state inspector's view of one subtask.
	TaskState(task string, limit int) (TaskStateView, error)
	// Subscribe streams events; a slow subscriber loses events, never blocks.
	Subscribe(buffer int) *Subscription
	// Compare checks sink output against the ground truth.
	Compare() ([]Comparison, error)
	Pause()
	Resume()
	SetSpeed(f float64) error
	Close() error
}

var (
	_ Engine = (*Stepper)(nil)
	_ Engine = (*Live)(nil)
)
