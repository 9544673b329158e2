package lessons

import (
	"fmt"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// An upgrade action (engine.CmdUpgrade, docs/protocol.md "Upgrading a
// job") starts a changed job from a savepoint, as `flink run -s`. The lint
// follows the change so that later steps meet the new job, and the
// "upgrade-accepted" prediction answers whether Flink would start it.

// readUpgrade is an upgrade action's command, read from its arguments.
func readUpgrade(args map[string]any) engine.Command {
	c := engine.Command{Name: engine.CmdUpgrade}
	c.Change, _ = args["change"].(string)
	c.Operator, _ = args["operator"].(string)
	c.Kind, _ = args["kind"].(string)
	c.UID, _ = args["uid"].(string)
	c.UIDHash, _ = args["uidHash"].(string)
	if _, ok := args["parallelism"]; ok {
		c.Parallelism, _ = argInt(args, "parallelism")
	}
	if _, ok := args["maxParallelism"]; ok {
		c.MaxParallelism, _ = argInt(args, "maxParallelism")
	}
	c.AllowNonRestoredState, _ = args["allowNonRestoredState"].(bool)
	return c
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

// changed is the job the engine's upgrade would start from the job as it
// is here (engine.ChangedSpec: the same change, the same validation).
func (js *jobState) changed(u engine.Command) (*engine.JobSpec, error) {
	return engine.ChangedSpec(js.current(), u)
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
		if keepsState(o) && !newIDs[oldIDs[o.ID]] && !u.AllowNonRestoredState {
			accepted = false
		}
	}
	if u.Change == engine.ChangeSetMaxParallelism {
		if o, ok := old.Operator(u.Operator); ok {
			was := o.MaxParallelism
			if was == 0 {
				was = rescale.DefaultMaxParallelism(o.Parallelism)
			}
			if was != u.MaxParallelism {
				accepted = false
			}
		}
	}
	return &Prediction{Kind: pf.Kind, Operator: u.Operator, Choices: []string{Yes, No}, Answer: yesNo(accepted)}, nil
}
