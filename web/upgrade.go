package web

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
)

// CmdUpgrade is the upgrade command: {"checkpoint": N, "change": C, ...}
// starts a changed job from retained checkpoint or savepoint N, as
// `flink run -s <savepoint> [--allowNonRestoredState]` submits a new
// version of a program (engine.CmdUpgrade; docs/protocol.md).
const CmdUpgrade = engine.CmdUpgrade

const upgradeExample = `{"checkpoint":3,"change":"add-operator","operator":"tokenizer","kind":"map"}`

func parseUpgrade(raw json.RawMessage, c *Command) *protoError {
	var a struct {
		Checkpoint            *int64  `json:"checkpoint"`
		Change                *string `json:"change"`
		Operator              *string `json:"operator"`
		Kind                  *string `json:"kind"`
		UID                   *string `json:"uid"`
		UIDHash               *string `json:"uidHash"`
		Parallelism           *int    `json:"parallelism"`
		MaxParallelism        *int    `json:"maxParallelism"`
		AllowNonRestoredState *bool   `json:"allowNonRestoredState"`
	}
	if e := decodeArgs(CmdUpgrade, raw, &a, upgradeExample); e != nil {
		return e
	}
	if a.Checkpoint == nil || a.Change == nil {
		return perr(CodeBadArgs, "upgrade: args.checkpoint and args.change are required: the savepoint or checkpoint to start from and what to change (%s), e.g. %s",
			strings.Join(engine.UpgradeChanges, ", "), upgradeExample)
	}
	if *a.Checkpoint < 1 {
		return perr(CodeBadArgs, "upgrade: checkpoint %d is not a checkpoint id; ids start at 1", *a.Checkpoint)
	}
	if !slices.Contains(engine.UpgradeChanges, *a.Change) {
		return perr(CodeBadArgs, "upgrade: change %q is unknown; send one of %s", *a.Change, strings.Join(engine.UpgradeChanges, ", "))
	}
	c.Checkpoint, c.Change = *a.Checkpoint, *a.Change
	if a.Operator != nil {
		c.Operator = *a.Operator
	}
	if a.Kind != nil {
		if !slices.Contains(engine.UpgradeAddKinds, *a.Kind) {
			return perr(CodeBadArgs, "upgrade: kind %q cannot be added; send one of %s", *a.Kind, strings.Join(engine.UpgradeAddKinds, ", "))
		}
		c.Kind = *a.Kind
	}
	if a.UID != nil {
		if n := utf8.RuneCountInString(*a.UID); n > engine.MaxUIDLength {
			return perr(CodeBadArgs, "upgrade: uid is %d characters long; send at most %d", n, engine.MaxUIDLength)
		}
		c.UID = *a.UID
	}
	if a.UIDHash != nil {
		if n := utf8.RuneCountInString(*a.UIDHash); n > 32 {
			return perr(CodeBadArgs, "upgrade: uidHash is %d characters long; an operator ID is 32 hex digits", n)
		}
		c.UIDHash = *a.UIDHash
	}
	_, hi := catalog.Bound(CmdUpgrade, "parallelism")
	if a.Parallelism != nil {
		if *a.Parallelism < 1 || float64(*a.Parallelism) > hi {
			return perr(CodeBadArgs, "upgrade: parallelism %d is outside 1 to %g", *a.Parallelism, hi)
		}
		c.Parallelism = *a.Parallelism
	}
	if a.MaxParallelism != nil {
		if *a.MaxParallelism < 1 || float64(*a.MaxParallelism) > hi {
			return perr(CodeBadArgs, "upgrade: maxParallelism %d is outside 1 to %g", *a.MaxParallelism, hi)
		}
		c.MaxParallelism = *a.MaxParallelism
	}
	if a.AllowNonRestoredState != nil {
		c.AllowNonRestoredState = *a.AllowNonRestoredState
	}
	// What each change needs besides (an operator, a kind, a number) the
	// engine checks against the job, and says what is missing.
	return nil
}

func init() {
	commands[CmdUpgrade] = commandDef{parse: parseUpgrade}
}
