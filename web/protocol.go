package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
)

// ProtocolVersion is the "v" of every snapshot message. It changes only when
// a field a client relies on changes meaning or disappears.
const ProtocolVersion = 1

// Error codes of {"type":"error"} replies (docs/protocol.md lists them).
const (
	CodeBadJSON        = "bad-json"        // the message is not one JSON object
	CodeBadMessage     = "bad-message"     // a JSON object, but not a command message
	CodeUnknownCommand = "unknown-command" // name is not a command
	CodeBadArgs        = "bad-args"        // args missing, mistyped or out of range
	CodeRefused        = "refused"         // the engine cannot do it now (e.g. a TaskManager already lost)
	CodeForbidden      = "forbidden"       // this viewer may not control the session
	CodeUnknownSession = "unknown-session" // /ws?session=ID names no session
	CodeUnknownJob     = "unknown-template"
	CodeSessionLimit   = "session-limit" // too many sessions running
	CodeInternal       = "internal"      // a bug: the message says what failed
)

// ErrBadArgs and ErrRefused let an Engine choose the reply code: wrap them
// with a message that says what was wrong and what to do.
var (
	ErrBadArgs = errors.New("bad arguments")
	ErrRefused = errors.New("refused")
)

// Server -> client messages.

type snapshotMsg struct {
	Type     string `json:"type"`
	V        int    `json:"v"`
	Session  string `json:"session"`
	Template string `json:"template"`
	engine.Snapshot
}

type eventsMsg struct {
	Type   string  `json:"type"`
	Events []Event `json:"events"`
}

type ackMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Session and Step answer a fork: the new session and the step it
	// starts from.
	Session string `json:"session,omitempty"`
	Step    *int64 `json:"step,omitempty"`
}

type errorMsg struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// clientMsg is a client -> server message.
type clientMsg struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// protoError is a reply-worthy failure: a code and a sentence that says what
// was wrong and what to do.
type protoError struct {
	Code    string
	Message string
}

func (e *protoError) Error() string { return e.Code + ": " + e.Message }

func perr(code, format string, a ...any) *protoError {
	return &protoError{Code: code, Message: fmt.Sprintf(format, a...)}
}

// commandDef is web's half of one command of the catalogue (package
// catalog, which names every command, its arguments and bounds, and who may
// send it): the parser that turns its args into a Command.
type commandDef struct {
	// control is set when the command changes the run: a classroom follower
	// may send only non-control ones. parseClientMsg sets it from the
	// catalogue (not Follower), so a registration need not.
	control bool
	// parse reads args (nil when absent) into cmd, checking what can be
	// checked without the job; checkJob checks against the current job.
	parse func(args json.RawMessage, cmd *Command) *protoError
}

// Command names, exactly as the protocol spells them.
const (
	CmdPause              = "pause"
	CmdResume             = "resume"
	CmdStep               = "step"
	CmdSpeed              = "speed"
	CmdCrashSubtask       = "crash-subtask"
	CmdCrashTaskManager   = "crash-taskmanager"
	CmdRestartTaskManager = "restart-taskmanager"
	CmdAddTaskManager     = "add-taskmanager"
	CmdTriggerCheckpoint  = "trigger-checkpoint"
	CmdTriggerSavepoint   = "trigger-savepoint"
	CmdRescale            = "rescale"
	CmdInject             = "inject"
	CmdReset              = "reset"
	CmdSnapshot           = "snapshot"
)

// commandNames lists the commands in the order the protocol documents them:
// the catalogue's. Every one has a parser in commands (TestCommandCatalogue).
var commandNames = catalog.Names(nil)

// Limits on arguments: the catalogue's.
const (
	maxStepCount  = catalog.MaxStepCount
	minSpeed      = catalog.MinSpeed
	maxSpeed      = catalog.MaxSpeed
	maxInjectText = catalog.MaxInjectText
	maxIDLen      = 64
	// maxTaskManagerSlots bounds an added TaskManager's slots, the
	// engine's bound (the catalogue's, which the lessons' lint checks too).
	maxTaskManagerSlots = engine.MaxSlotsPerTaskManager
)

var commands = map[string]commandDef{
	CmdPause:  {parse: noArgs(CmdPause)},
	CmdResume: {parse: noArgs(CmdResume)},
	CmdStep: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Count *int `json:"count"`
		}
		if e := decodeArgs(CmdStep, raw, &a, `{"count":1}`); e != nil {
			return e
		}
		c.Count = 1
		if a.Count != nil {
			c.Count = *a.Count
		}
		if c.Count < 1 || c.Count > maxStepCount {
			return perr(CodeBadArgs, "step: count %d is out of range; send a whole number from 1 to %d", c.Count, maxStepCount)
		}
		return nil
	}},
	CmdSpeed: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Factor *float64 `json:"factor"`
			Driver *string  `json:"driver"`
		}
		if e := decodeArgs(CmdSpeed, raw, &a, `{"factor":2}`); e != nil {
			return e
		}
		if a.Factor == nil && a.Driver == nil {
			return perr(CodeBadArgs, `speed: send args.factor (1 is normal speed, %g to %g), args.driver ("step" for teaching mode, "live" for full speed), or both, e.g. {"factor":2}`, minSpeed, maxSpeed)
		}
		if a.Factor != nil {
			if math.IsNaN(*a.Factor) || *a.Factor < minSpeed || *a.Factor > maxSpeed {
				return perr(CodeBadArgs, "speed: factor %g is out of range; send a number from %g to %g (1 is normal speed)", *a.Factor, minSpeed, maxSpeed)
			}
			c.Factor = *a.Factor
		}
		if a.Driver != nil {
			if *a.Driver != DriverStepper && *a.Driver != DriverLive {
				return perr(CodeBadArgs, `speed: driver %q is unknown; send "step" (teaching mode, one event at a time) or "live" (full speed)`, *a.Driver)
			}
			c.Driver = *a.Driver
		}
		return nil
	}},
	CmdCrashSubtask: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Operator *string `json:"operator"`
			Index    *int    `json:"index"`
		}
		if e := decodeArgs(CmdCrashSubtask, raw, &a, `{"operator":"count","index":0}`); e != nil {
			return e
		}
		if a.Operator == nil || a.Index == nil {
			return perr(CodeBadArgs, `crash-subtask: args.operator and args.index are required; send e.g. {"operator":"count","index":0}`)
		}
		c.Operator, c.Index = *a.Operator, *a.Index
		return nil
	}},
	CmdCrashTaskManager:   {parse: taskManagerArg(CmdCrashTaskManager)},
	CmdRestartTaskManager: {parse: taskManagerArg(CmdRestartTaskManager)},
	CmdAddTaskManager: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Slots *int `json:"slots"`
		}
		if e := decodeArgs(CmdAddTaskManager, raw, &a, `{"slots":2}`); e != nil {
			return e
		}
		if a.Slots != nil {
			if *a.Slots < 1 || *a.Slots > maxTaskManagerSlots {
				return perr(CodeBadArgs, "add-taskmanager: slots %d is out of range; send a whole number from 1 to %d, or leave it out for the cluster's slots per TaskManager", *a.Slots, maxTaskManagerSlots)
			}
			c.Slots = *a.Slots
		}
		return nil
	}},
	CmdTriggerCheckpoint: {parse: noArgs(CmdTriggerCheckpoint)},
	CmdTriggerSavepoint:  {parse: noArgs(CmdTriggerSavepoint)},
	CmdRescale: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Operator    *string `json:"operator"`
			Parallelism *int    `json:"parallelism"`
		}
		if e := decodeArgs(CmdRescale, raw, &a, `{"operator":"count","parallelism":3}`); e != nil {
			return e
		}
		if a.Operator == nil || a.Parallelism == nil {
			return perr(CodeBadArgs, `rescale: args.operator and args.parallelism are required; send e.g. {"operator":"count","parallelism":3}`)
		}
		c.Operator, c.Parallelism = *a.Operator, *a.Parallelism
		if c.Parallelism < 1 {
			return perr(CodeBadArgs, "rescale: parallelism %d is below 1; an operator needs at least one subtask", c.Parallelism)
		}
		if _, hi := catalog.Bound(CmdRescale, "parallelism"); float64(c.Parallelism) > hi {
			return perr(CodeBadArgs, "rescale: parallelism %d is above %g, the largest max parallelism Flink accepts; choose 1 to the operator's max parallelism", c.Parallelism, hi)
		}
		return nil
	}},
	CmdInject: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Text      *string `json:"text"`
			Partition *int    `json:"partition"`
			Operator  *string `json:"operator"`
		}
		if e := decodeArgs(CmdInject, raw, &a, `{"text":"to be or not to be"}`); e != nil {
			return e
		}
		if a.Text == nil || strings.TrimSpace(*a.Text) == "" {
			return perr(CodeBadArgs, `inject: args.text is missing or blank; send the record to append to the source, e.g. {"text":"to be or not to be"}`)
		}
		if utf8.RuneCountInString(*a.Text) > maxInjectText {
			return perr(CodeBadArgs, "inject: text is %d characters long; send at most %d", utf8.RuneCountInString(*a.Text), maxInjectText)
		}
		c.Text = *a.Text
		c.Partition = -1
		if a.Partition != nil {
			if *a.Partition < 0 {
				return perr(CodeBadArgs, "inject: partition %d is negative; send a partition number from 0, or leave it out", *a.Partition)
			}
			c.Partition = *a.Partition
		}
		if a.Operator != nil {
			c.Operator = *a.Operator
		}
		return nil
	}},
	CmdReset: {parse: func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			Seed   *int64  `json:"seed"`
			Driver *string `json:"driver"`
			Job    *string `json:"job"` // a lesson's job variant (lesson sessions only)
		}
		if e := decodeArgs(CmdReset, raw, &a, `{"seed":42,"driver":"step"}`); e != nil {
			return e
		}
		if a.Seed != nil {
			c.Seed = *a.Seed
		}
		if a.Job != nil {
			if *a.Job == "" {
				return perr(CodeBadArgs, `reset: job is empty; send a job of the lesson, e.g. {"job":"main"}`)
			}
			c.Job = *a.Job
		}
		if a.Driver != nil {
			if *a.Driver != DriverStepper && *a.Driver != DriverLive {
				return perr(CodeBadArgs, `reset: driver %q is unknown; send "step" (teaching mode, one event at a time) or "live" (full speed)`, *a.Driver)
			}
			c.Driver = *a.Driver
		}
		return nil
	}},
	CmdSnapshot: {parse: noArgs(CmdSnapshot)},
}

func noArgs(name string) func(json.RawMessage, *Command) *protoError {
	return func(raw json.RawMessage, c *Command) *protoError {
		var a struct{}
		return decodeArgs(name, raw, &a, `{}`)
	}
}

func taskManagerArg(name string) func(json.RawMessage, *Command) *protoError {
	return func(raw json.RawMessage, c *Command) *protoError {
		var a struct {
			TaskManager *string `json:"taskManager"`
		}
		if e := decodeArgs(name, raw, &a, `{"taskManager":"tm-1"}`); e != nil {
			return e
		}
		if a.TaskManager == nil || *a.TaskManager == "" {
			return perr(CodeBadArgs, `%s: args.taskManager is required; send e.g. {"taskManager":"tm-1"}`, name)
		}
		c.TaskManager = *a.TaskManager
		return nil
	}
}

// decodeArgs reads args strictly: an unknown field is refused, so a typo
// such as "paralelism" is reported rather than silently ignored.
func decodeArgs(name string, raw json.RawMessage, into any, example string) *protoError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return perr(CodeBadArgs, "%s: args must be a JSON object, e.g. %s", name, example)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return perr(CodeBadArgs, "%s: args.%s must be a %s, not %s; send e.g. %s", name, te.Field, jsonTypeName(te.Type.String()), te.Value, example)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			field := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return perr(CodeBadArgs, "%s: unknown argument %s; send e.g. %s", name, field, example)
		default:
			return perr(CodeBadArgs, "%s: cannot read args (%v); send e.g. %s", name, err, example)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return perr(CodeBadArgs, "%s: args has data after the object; send one object, e.g. %s", name, example)
	}
	return nil
}

func jsonTypeName(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "int", "int64":
		return "whole number"
	case "float64":
		return "number"
	case "string":
		return "string"
	}
	return goType
}

// parseClientMsg turns a client frame into a validated Command. The id is
// returned even on error when it could be read, so the reply can carry it.
func parseClientMsg(data []byte) (id string, cmd Command, def commandDef, pe *protoError) {
	var m clientMsg
	if !json.Valid(data) {
		var probe any
		err := json.Unmarshal(data, &probe)
		return "", cmd, def, perr(CodeBadJSON, "the message is not valid JSON (%v); send one JSON object such as {\"type\":\"command\",\"id\":\"c1\",\"name\":\"pause\"}", err)
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return "", cmd, def, perr(CodeBadMessage, "the message must be a JSON object such as {\"type\":\"command\",\"id\":\"c1\",\"name\":\"pause\"}")
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", cmd, def, perr(CodeBadMessage, "cannot read the message (%v); type, id and name must be strings and args an object", err)
	}
	id = m.ID
	if len(id) > maxIDLen {
		return "", cmd, def, perr(CodeBadMessage, "id is %d bytes long; use an id of at most %d bytes", len(id), maxIDLen)
	}
	if m.Type != "command" {
		if m.Type == "" {
			return id, cmd, def, perr(CodeBadMessage, `the message has no "type"; send {"type":"command","id":"c1","name":"pause"}`)
		}
		return id, cmd, def, perr(CodeBadMessage, `unknown message type %q; the server accepts only "command" messages`, m.Type)
	}
	if id == "" {
		return id, cmd, def, perr(CodeBadMessage, `the command has no "id"; give every command an id (e.g. "c1") so its ack or error can be matched`)
	}
	def, ok := commands[m.Name]
	spec, inCatalogue := catalog.Lookup(m.Name)
	if !ok || !inCatalogue {
		if m.Name == "" {
			return id, cmd, def, perr(CodeUnknownCommand, "the command has no name; known commands: %s", strings.Join(commandNames, ", "))
		}
		return id, cmd, def, perr(CodeUnknownCommand, "unknown command %q; known commands: %s", m.Name, strings.Join(commandNames, ", "))
	}
	def.control = !spec.Follower
	cmd.Name = m.Name
	if e := def.parse(m.Args, &cmd); e != nil {
		return id, cmd, def, e
	}
	return id, cmd, def, nil
}

// checkAgainstJob checks a command's names and numbers against the job the
// session runs now, so the reply can list what would be accepted.
func checkAgainstJob(cmd *Command, snap *engine.Snapshot) *protoError {
	findOp := func() (*engine.OperatorView, *protoError) {
		ids := make([]string, 0, len(snap.Job.Operators))
		for i := range snap.Job.Operators {
			if snap.Job.Operators[i].ID == cmd.Operator {
				return &snap.Job.Operators[i], nil
			}
			ids = append(ids, snap.Job.Operators[i].ID)
		}
		return nil, perr(CodeBadArgs, "%s: this job has no operator %q; its operators are %s", cmd.Name, cmd.Operator, strings.Join(ids, ", "))
	}
	findTM := func() *protoError {
		ids := make([]string, 0, len(snap.TaskManagers))
		for _, tm := range snap.TaskManagers {
			if tm.ID == cmd.TaskManager {
				return nil
			}
			ids = append(ids, tm.ID)
		}
		return perr(CodeBadArgs, "%s: there is no TaskManager %q; the cluster has %s", cmd.Name, cmd.TaskManager, strings.Join(ids, ", "))
	}
	switch cmd.Name {
	case CmdCrashSubtask:
		op, e := findOp()
		if e != nil {
			return e
		}
		if cmd.Index < 0 || cmd.Index >= op.Parallelism {
			return perr(CodeBadArgs, "crash-subtask: %s has %d subtasks, so index %d does not exist; send an index from 0 to %d", op.ID, op.Parallelism, cmd.Index, op.Parallelism-1)
		}
	case CmdCrashTaskManager, CmdRestartTaskManager:
		return findTM()
	case CmdRescale:
		op, e := findOp()
		if e != nil {
			return e
		}
		if cmd.Parallelism > op.MaxParallelism {
			return perr(CodeBadArgs, "rescale: parallelism %d is above the max parallelism %d of operator %s (it has %d key groups, and a subtask needs at least one); choose 1 to %d",
				cmd.Parallelism, op.MaxParallelism, op.ID, op.MaxParallelism, op.MaxParallelism)
		}
	case CmdInject:
		var src *engine.OperatorView
		if cmd.Operator != "" {
			op, e := findOp()
			if e != nil {
				return e
			}
			src = op
		} else {
			for i := range snap.Job.Operators {
				if snap.Job.Operators[i].Kind == engine.KindSource {
					src = &snap.Job.Operators[i]
					break
				}
			}
		}
		if src == nil || src.Kind != engine.KindSource {
			return perr(CodeBadArgs, "inject: records can only be typed into a source operator")
		}
		cmd.Operator = src.ID
		if cmd.Partition >= 0 {
			n := 0
			for _, sv := range snap.Sources {
				if sv.Operator == src.ID {
					n = len(sv.Partitions)
				}
			}
			if cmd.Partition >= n {
				return perr(CodeBadArgs, "inject: source %s has %d partitions, so partition %d does not exist; send 0 to %d or leave it out", src.ID, n, cmd.Partition, n-1)
			}
		}
	}
	return nil
}
