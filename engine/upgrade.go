package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

// The changes an upgrade command makes to the job (Command.Change). Each is
// one of the classic edits of a Flink job between a savepoint and the next
// `flink run -s`.
const (
	// ChangeNone submits the same job again.
	ChangeNone = "none"
	// ChangeAddOperator inserts a stateless operator of Kind (map, filter)
	// or a tally (operator state) after Operator, with Operator's
	// parallelism; Operator's outputs now leave from the new operator.
	ChangeAddOperator = "add-operator"
	// ChangeRemoveOperator removes Operator (not a source; one input): its
	// input is connected to its outputs.
	ChangeRemoveOperator = "remove-operator"
	// ChangeSetUID gives Operator the uid UID (empty: no uid, a generated ID)
	// and the alternative ID UIDHash (setUidHash; empty: none).
	ChangeSetUID = "set-uid"
	// ChangeSetParallelism gives Operator the parallelism Parallelism.
	ChangeSetParallelism = "set-parallelism"
	// ChangeSetMaxParallelism configures Operator's max parallelism
	// explicitly as MaxParallelism.
	ChangeSetMaxParallelism = "set-max-parallelism"
)

// UpgradeChanges lists the changes an upgrade may make.
var UpgradeChanges = []string{ChangeNone, ChangeAddOperator, ChangeRemoveOperator, ChangeSetUID, ChangeSetParallelism, ChangeSetMaxParallelism}

// UpgradeAddKinds lists the operator kinds an upgrade may add.
var UpgradeAddKinds = []string{KindMap, KindFilter, KindTally}

// ChangedSpec is the job an upgrade command would start: cmd's change
// applied to a copy of s and validated. The lesson lint follows a lesson's
// upgrades with it, so the lint and the engine cannot disagree on a change.
func ChangedSpec(s *JobSpec, cmd Command) (*JobSpec, error) {
	nu, _, _, err := changedSpec(s, cmd)
	return nu, err
}

// changedSpec applies cmd's change to a copy of s and validates it. The
// result's operators keep the max parallelism s had (StateLab fills it in
// at validation), so only set-max-parallelism configures a different one;
// explicit names that operator.
func changedSpec(s *JobSpec, cmd Command) (nu *JobSpec, desc string, explicit string, err error) {
	nu = s.Clone()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: upgrade: %s", ErrBadCommand, fmt.Sprintf(format, a...))
	}
	var op *OperatorSpec
	if cmd.Change != ChangeNone {
		if cmd.Operator == "" {
			return nil, "", "", bad("%s needs the operator to change", cmd.Change)
		}
		var ok bool
		if op, ok = nu.Operator(cmd.Operator); !ok {
			return nil, "", "", bad("the job has no operator %q (it has %s)", cmd.Operator, strings.Join(operatorNames(s), ", "))
		}
	}
	switch cmd.Change {
	case ChangeNone:
		desc = "the same job"
	case ChangeAddOperator:
		if !slices.Contains(UpgradeAddKinds, cmd.Kind) {
			return nil, "", "", bad("add-operator adds a %s; not %q", strings.Join(UpgradeAddKinds, ", a "), cmd.Kind)
		}
		if op.Kind == KindSink {
			return nil, "", "", bad("%s is a sink and has no output to insert an operator into", op.ID)
		}
		id := cmd.Kind
		for n := 2; ; n++ {
			if _, taken := nu.Operator(id); !taken {
				break
			}
			id = fmt.Sprintf("%s-%d", cmd.Kind, n)
		}
		added := OperatorSpec{ID: id, Kind: cmd.Kind, Parallelism: op.Parallelism, UID: cmd.UID}
		at := slices.IndexFunc(nu.Operators, func(o OperatorSpec) bool { return o.ID == cmd.Operator })
		nu.Operators = slices.Insert(nu.Operators, at+1, added)
		for i := range nu.Edges {
			if nu.Edges[i].From == cmd.Operator {
				nu.Edges[i].From = id
			}
		}
		nu.Edges = append(nu.Edges, EdgeSpec{From: cmd.Operator, To: id, Partitioner: Forward})
		desc = fmt.Sprintf("a %s %q added after %s", cmd.Kind, id, cmd.Operator)
		if cmd.UID != "" {
			desc += fmt.Sprintf(" with uid %q", cmd.UID)
		}
	case ChangeRemoveOperator:
		if op.Kind == KindSource {
			return nil, "", "", bad("%s is a source; StateLab removes only operators that have an input", op.ID)
		}
		var in []EdgeSpec
		var out []EdgeSpec
		var rest []EdgeSpec
		for _, e := range nu.Edges {
			switch {
			case e.To == op.ID:
				in = append(in, e)
			case e.From == op.ID:
				out = append(out, e)
			default:
				rest = append(rest, e)
			}
		}
		if len(in) != 1 {
			return nil, "", "", bad("%s has %d inputs; StateLab removes only operators with one input", op.ID, len(in))
		}
		up, _ := nu.Operator(in[0].From)
		for _, e := range out {
			if slices.ContainsFunc(rest, func(r EdgeSpec) bool { return r.From == up.ID && r.To == e.To }) {
				continue
			}
			down, _ := nu.Operator(e.To)
			if e.Partitioner == Forward && up.Parallelism != down.Parallelism {
				e.Partitioner = Rebalance
			}
			e.From = up.ID
			rest = append(rest, e)
		}
		nu.Edges = rest
		nu.Operators = slices.DeleteFunc(nu.Operators, func(o OperatorSpec) bool { return o.ID == cmd.Operator })
		desc = fmt.Sprintf("%s removed", cmd.Operator)
	case ChangeSetUID:
		was := op.UID
		op.UID, op.UIDHash = cmd.UID, cmd.UIDHash
		switch {
		case cmd.UID == "":
			desc = fmt.Sprintf("%s without its uid %q (a generated ID)", op.ID, was)
		case was == "":
			desc = fmt.Sprintf("%s with uid %q (it had none: a generated ID)", op.ID, cmd.UID)
		default:
			desc = fmt.Sprintf("%s with uid %q instead of %q", op.ID, cmd.UID, was)
		}
		if cmd.UIDHash != "" {
			desc += fmt.Sprintf(" and uidHash %s", cmd.UIDHash)
		}
	case ChangeSetParallelism:
		if cmd.Parallelism < 1 {
			return nil, "", "", bad("set-parallelism needs a parallelism of at least 1")
		}
		desc = fmt.Sprintf("%s at parallelism %d instead of %d", op.ID, cmd.Parallelism, op.Parallelism)
		op.Parallelism = cmd.Parallelism
	case ChangeSetMaxParallelism:
		if cmd.MaxParallelism < 1 || cmd.MaxParallelism > rescale.UpperBoundMaxParallelism {
			return nil, "", "", bad("set-max-parallelism needs a max parallelism from 1 to %d", rescale.UpperBoundMaxParallelism)
		}
		desc = fmt.Sprintf("%s with max parallelism %d configured (it was %d)", op.ID, cmd.MaxParallelism, op.MaxParallelism)
		op.MaxParallelism = cmd.MaxParallelism
		explicit = op.ID
	default:
		return nil, "", "", bad("unknown change %q (want %s)", cmd.Change, strings.Join(UpgradeChanges, ", "))
	}
	if err := nu.Validate(); err != nil {
		return nil, "", "", fmt.Errorf("%w: upgrade: the changed job is not valid: %w", ErrBadCommand, err)
	}
	return nu, desc, explicit, nil
}

func operatorNames(s *JobSpec) []string {
	var out []string
	for _, o := range s.Operators {
		out = append(out, o.ID)
	}
	return out
}

// ErrNonRestoredState is an upgrade refused because the savepoint holds
// state for an operator the new job does not have (and
// allowNonRestoredState is not set), or whose max parallelism changed.
var ErrNonRestoredState = errors.New("engine: savepoint state cannot be mapped to the new job")

// validateUpgrade checks checkpoint meta against the new job as Flink's
// Checkpoints.loadAndValidateCheckpoint does: every operator state must
// find an operator of the new job with the same operator ID, unless it is
// empty or allowNonRestoredState skips it; a matched operator whose max
// parallelism was configured differently is refused, one whose max
// parallelism was not configured takes the state's. It returns what each
// operator of the new job restores and what is skipped, as sentences.
func validateUpgrade(nu *JobSpec, meta *state.CheckpointMetadata, pointer, explicit string, allow bool) (mapped, skipped []string, err error) {
	ids := nu.OperatorIDs()
	byOp, unmapped := mapStates(nu, meta)
	for _, os := range unmapped {
		if !hasState(os) {
			skipped = append(skipped, fmt.Sprintf("the empty state of %s", operatorIDLabel(os.OperatorID, os.UID, os.Hash)))
			continue
		}
		if !allow {
			return nil, nil, fmt.Errorf("%w: Failed to rollback to checkpoint/savepoint %s. Cannot map checkpoint/savepoint state for operator %s to the new program, because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI. (That state is %s's; no operator of the new job has ID %s — give the operator back its uid, or set allowNonRestoredState to drop the state.)",
				ErrNonRestoredState, pointer, os.Hash, operatorIDLabel(os.OperatorID, os.UID, os.Hash), os.Hash)
		}
		skipped = append(skipped, fmt.Sprintf("the state of %s (allowNonRestoredState)", operatorIDLabel(os.OperatorID, os.UID, os.Hash)))
	}
	for i := range nu.Operators {
		o := &nu.Operators[i]
		os := byOp[o.ID]
		if os == nil {
			mapped = append(mapped, fmt.Sprintf("%s starts with empty state", operatorIDLabel(o.ID, o.UID, ids[o.ID])))
			continue
		}
		if os.MaxParallelism != o.MaxParallelism {
			if o.ID == explicit {
				return nil, nil, fmt.Errorf("%w: Failed to rollback to checkpoint/savepoint %s. Max parallelism mismatch between checkpoint/savepoint state and new program. Cannot map operator %s with max parallelism %d to new program with max parallelism %d. This indicates that the program has been changed in a non-compatible way after the checkpoint/savepoint. (Key groups are the unit of keyed state: their number cannot change.)",
					ErrNonRestoredState, pointer, os.Hash, os.MaxParallelism, o.MaxParallelism)
			}
			o.MaxParallelism = os.MaxParallelism
		}
		if err := rescale.CheckParallelism(o.Parallelism, o.MaxParallelism); err != nil {
			return nil, nil, fmt.Errorf("%w: operator %s: %w", ErrNonRestoredState, o.ID, err)
		}
		from := os.OperatorID
		if from == o.ID {
			from = "its own"
		} else {
			from += "'s"
		}
		mapped = append(mapped, fmt.Sprintf("%s restores %s state", operatorIDLabel(o.ID, o.UID, ids[o.ID]), from))
	}
	return mapped, skipped, nil
}

// upgrade is the upgrade command: the job starts again from retained
// checkpoint or savepoint cmd.Checkpoint with a changed job, as
// `flink run -s <savepoint> [--allowNonRestoredState]` submits a new
// version of a program. State is matched by operator ID; what cannot be
// matched refuses the upgrade with Flink's message, and the running job is
// left as it was.
func (c *core) upgrade(cmd Command) error {
	if cmd.Checkpoint < 1 {
		return fmt.Errorf("%w: upgrade needs the checkpoint or savepoint to start from, {\"checkpoint\": N}", ErrBadCommand)
	}
	if c.spec.Cluster.Reactive && cmd.Change == ChangeSetParallelism {
		return fmt.Errorf("%w: upgrade: in reactive mode the slots decide every parallelism; change the TaskManagers instead", ErrBadCommand)
	}
	nu, desc, explicit, err := changedSpec(c.spec, cmd)
	if err != nil {
		return err
	}
	meta, err := c.retainedCheckpoint(cmd.Checkpoint)
	if err != nil {
		return err
	}
	pointer := fmt.Sprintf("checkpoint %d", meta.CheckpointID)
	for _, in := range c.storage.Checkpoints() {
		if in.ID == meta.CheckpointID && in.Path != "" {
			pointer = in.Path
		}
	}
	mapped, skipped, err := validateUpgrade(nu, meta, pointer, explicit, cmd.AllowNonRestoredState)
	if err != nil {
		return err
	}
	what := "checkpoint"
	if meta.Savepoint {
		what = "savepoint"
	}
	msg := fmt.Sprintf("upgrade from %s %d (as flink run -s would) to %s: %s", what, meta.CheckpointID, desc, strings.Join(mapped, "; "))
	if len(skipped) > 0 {
		msg += "; skipped: " + strings.Join(skipped, "; ")
	}
	c.resubmit(meta, nu, func() Event { return Event{Kind: EvRestoreRequested, Checkpoint: meta.CheckpointID, Message: msg} })
	return nil
}

// swapSpec makes nu the job's spec (an upgrade, with no execution
// running): operators keep their source topic and sink system by name; a
// new sink gets a new system, a removed one's output is gone from the
// comparison.
func (c *core) swapSpec(nu *JobSpec) {
	c.spec = nu
	c.opIndex = map[string]int{}
	c.par = map[string]int{}
	sinks := map[string]*sinkStore{}
	for i, o := range nu.Operators {
		c.opIndex[o.ID] = i
		c.par[o.ID] = o.Parallelism
		if o.Kind == KindSink {
			if s := c.sinks[o.ID]; s != nil {
				sinks[o.ID] = s
			} else {
				sinks[o.ID] = newSinkStore()
			}
		}
	}
	c.sinks = sinks
	c.truthCache, c.cmpCache = nil, nil
	c.offCache = offsetsCache{}
	c.restart = nu.Effective()
}
