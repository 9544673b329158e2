package lessons

import (
	"fmt"
	"slices"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// An upgrade action (engine.CmdUpgrade, docs/protocol.md "Upgrading a
// job") starts a changed job from a savepoint, as `flink run -s`. The lint
// follows the change so that later steps meet the new job, and the
// "upgrade-accepted" prediction answers whether Flink would start it.

// upgradeChange is an upgrade action's change, read from its arguments.
type upgradeChange struct {
	change, operator, kind, uid, uidHash string
	parallelism, maxParallelism          int
	allow                                bool
}

func readUpgrade(args map[string]any) upgradeChange {
	u := upgradeChange{}
	u.change, _ = args["change"].(string)
	u.operator, _ = args["operator"].(string)
	u.kind, _ = args["kind"].(string)
	u.uid, _ = args["uid"].(string)
	u.uidHash, _ = args["uidHash"].(string)
	if _, ok := args["parallelism"]; ok {
		u.parallelism, _ = argInt(args, "parallelism")
	}
	if _, ok := args["maxParallelism"]; ok {
		u.maxParallelism, _ = argInt(args, "maxParallelism")
	}
	u.allow, _ = args["allowNonRestoredState"].(bool)
	return u
}

// current is the job as the lint knows it here: the spec with the
// parallelisms the steps so far gave it.
func (js *jobState) current() *engine.JobSpec {
	s := js.spec.Clone()
	for i := range s.Operators {
		if p, ok := js.par[s.Operators[i].ID]; ok {
			s.Operators[i].Parallelism = p
		}
	}
	return s
}

// changed applies u to a copy of the job, as the engine's upgrade does
// (engine/upgrade.go changedSpec), and validates the result.
func (js *jobState) changed(u upgradeChange) (*engine.JobSpec, error) {
	nu := js.current()
	var op *engine.OperatorSpec
	if u.change != engine.ChangeNone {
		if u.operator == "" {
			return nil, fmt.Errorf("%s needs the operator to change", u.change)
		}
		var ok bool
		if op, ok = nu.Operator(u.operator); !ok {
			return nil, fmt.Errorf("job %s has no operator %q (it has %s)", js.name, u.operator, js.operatorIDs())
		}
	}
	switch u.change {
	case engine.ChangeNone:
	case engine.ChangeAddOperator:
		if !slices.Contains(engine.UpgradeAddKinds, u.kind) {
			return nil, fmt.Errorf("add-operator needs kind, one of %v", engine.UpgradeAddKinds)
		}
		if op.Kind == engine.KindSink {
			return nil, fmt.Errorf("%s is a sink and has no output to insert an operator into", op.ID)
		}
		id := u.kind
		for n := 2; ; n++ {
			if _, taken := nu.Operator(id); !taken {
				break
			}
			id = fmt.Sprintf("%s-%d", u.kind, n)
		}
		at := slices.IndexFunc(nu.Operators, func(o engine.OperatorSpec) bool { return o.ID == u.operator })
		nu.Operators = slices.Insert(nu.Operators, at+1, engine.OperatorSpec{ID: id, Kind: u.kind, Parallelism: op.Parallelism, UID: u.uid})
		for i := range nu.Edges {
			if nu.Edges[i].From == u.operator {
				nu.Edges[i].From = id
			}
		}
		nu.Edges = append(nu.Edges, engine.EdgeSpec{From: u.operator, To: id, Partitioner: engine.Forward})
	case engine.ChangeRemoveOperator:
		if op.Kind == engine.KindSource {
			return nil, fmt.Errorf("%s is a source; only operators with an input can be removed", op.ID)
		}
		var in, out, rest []engine.EdgeSpec
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
			return nil, fmt.Errorf("%s has %d inputs; only operators with one input can be removed", op.ID, len(in))
		}
		up, _ := nu.Operator(in[0].From)
		for _, e := range out {
			if slices.ContainsFunc(rest, func(r engine.EdgeSpec) bool { return r.From == up.ID && r.To == e.To }) {
				continue
			}
			down, _ := nu.Operator(e.To)
			if e.Partitioner == engine.Forward && up.Parallelism != down.Parallelism {
				e.Partitioner = engine.Rebalance
			}
			e.From = up.ID
			rest = append(rest, e)
		}
		nu.Edges = rest
		nu.Operators = slices.DeleteFunc(nu.Operators, func(o engine.OperatorSpec) bool { return o.ID == u.operator })
	case engine.ChangeSetUID:
		op.UID, op.UIDHash = u.uid, u.uidHash
	case engine.ChangeSetParallelism:
		if u.parallelism < 1 {
			return nil, fmt.Errorf("set-parallelism needs parallelism")
		}
		op.Parallelism = u.parallelism
	case engine.ChangeSetMaxParallelism:
		if u.maxParallelism < 1 {
			return nil, fmt.Errorf("set-max-parallelism needs maxParallelism")
		}
		op.MaxParallelism = u.maxParallelism
	default:
		return nil, fmt.Errorf("unknown change %q (want one of %v)", u.change, engine.UpgradeChanges)
	}
	if err := nu.Validate(); err != nil {
		return nil, fmt.Errorf("the changed job is not valid: %w", err)
	}
	return nu, nil
}

// upgrade checks an upgrade action against the job and, unless the lesson
// expects the engine to refuse it, makes the changed job the one later
// steps meet.
func (js *jobState) upgrade(a Action) error {
	nu, err := js.changed(readUpgrade(a.Args))
	if err != nil {
		return err
	}
	if !a.ExpectRefused {
		tms := js.tms
		*js = *newJobState(js.name, nu)
		js.tms = tms
	}
	return nil
}

// keepsState says whether an operator leaves state in a savepoint: all
// but the stateless tokenizer, map and filter, and a sink that does not
// commit in transactions (semantics at-least-once keeps nothing; the
// default, exactly-once, keeps its pre-committed transactions). Flink skips an operator's state that is empty without asking
// (Checkpoints.loadAndValidateCheckpoint), so only these can refuse an
// upgrade.
func keepsState(o engine.OperatorSpec) bool {
	switch o.Kind {
	case engine.KindTokenizer, engine.KindMap, engine.KindFilter:
		return false
	case engine.KindSink:
		sem, _ := o.Options["semantics"].(string)
		return sem != engine.SinkAtLeastOnce
	}
	return true
}

// upgradeAccepted answers the "upgrade-accepted" prediction: will Flink
// start the changed job from a savepoint of the job as it is? As
// Checkpoints.loadAndValidateCheckpoint decides: every operator's state
// must find an operator of the new job with the same operator ID (its own,
// or an alternative ID set by setUidHash) unless allowNonRestoredState is
// set; and a max parallelism configured on the new job must equal the
// state's.
func upgradeAccepted(pf *predictFile, js *jobState) (*Prediction, error) {
	if pf.upgrade == nil {
		return nil, fmt.Errorf("predict upgrade-accepted: the step has no upgrade action to predict")
	}
	u := readUpgrade(pf.upgrade)
	nu, err := js.changed(u)
	if err != nil {
		return nil, fmt.Errorf("predict upgrade-accepted: %w", err)
	}
	old := js.current()
	oldIDs := old.OperatorIDs()
	newIDs := map[string]bool{}
	for _, id := range nu.OperatorIDs() {
		newIDs[id] = true
	}
	for _, o := range nu.Operators {
		if o.UIDHash != "" {
			newIDs[o.UIDHash] = true
		}
	}
	accepted := true
	for _, o := range old.Operators {
		if keepsState(o) && !newIDs[oldIDs[o.ID]] && !u.allow {
			accepted = false
		}
	}
	if u.change == engine.ChangeSetMaxParallelism {
		if o, ok := old.Operator(u.operator); ok {
			was := o.MaxParallelism
			if was == 0 {
				was = rescale.DefaultMaxParallelism(o.Parallelism)
			}
			if was != u.maxParallelism {
				accepted = false
			}
		}
	}
	return &Prediction{Kind: pf.Kind, Operator: u.operator, Choices: []string{Yes, No}, Answer: yesNo(accepted)}, nil
}
