package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unchained says chaining: false on spec (Flink's
// env.disableOperatorChaining()): the tests of generated IDs that count
// places in an unchained topology say so, since a spec without it chains.
func unchained(spec *JobSpec) *JobSpec {
	off := false
	spec.Chaining = &off
	return spec
}

// withUIDs gives every operator of spec its name as uid.
func withUIDs(spec *JobSpec) *JobSpec {
	for i := range spec.Operators {
		spec.Operators[i].UID = spec.Operators[i].ID
	}
	return spec
}

// Generated IDs follow the topology, as StreamGraphHasherV2's do: inserting
// an operator changes the ID of every operator after it and of none before
// it; a uid keeps an operator's ID whatever changes around it; a parallelism
// or a kind is not part of it.
func TestOperatorIDsFollowTopologyUnlessUID(t *testing.T) {
	base := unchained(wordCount(100, 2, 2, 0))
	require.NoError(t, base.Validate())
	ids := base.OperatorIDs()
	require.Len(t, ids, 4)
	seen := map[string]bool{}
	for _, id := range ids {
		assert.Len(t, id, 32)
		assert.False(t, seen[id], "IDs are distinct: %v", ids)
		seen[id] = true
	}

	added, _, _, err := changedSpec(base, Command{Name: CmdUpgrade, Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindMap})
	require.NoError(t, err)
	ids2 := added.OperatorIDs()
	assert.Equal(t, ids["source"], ids2["source"])
	assert.Equal(t, ids["tokenizer"], ids2["tokenizer"])
	assert.NotEqual(t, ids["count"], ids2["count"], "count is one place further from the source")
	assert.NotEqual(t, ids["sink"], ids2["sink"])

	par, _, _, err := changedSpec(base, Command{Name: CmdUpgrade, Change: ChangeSetParallelism, Operator: "count", Parallelism: 3})
	require.NoError(t, err)
	assert.Equal(t, ids, par.OperatorIDs(), "parallelism is not part of a generated ID (of an unchained job; chained, it decides which edges chain)")

	kind := base.Clone()
	kind.Operators[2].Kind = KindSum
	assert.Equal(t, ids, kind.OperatorIDs(), "the operator's function is not part of it either")

	u := withUIDs(base.Clone())
	uidIDs := u.OperatorIDs()
	addedU, _, _, err := changedSpec(u, Command{Name: CmdUpgrade, Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindMap})
	require.NoError(t, err)
	for _, name := range []string{"source", "tokenizer", "count", "sink"} {
		assert.Equal(t, uidIDs[name], addedU.OperatorIDs()[name], name)
	}
}

// With chaining on, an operator's generated ID also covers the operators
// chained to it (StreamGraphHasherV2 hashes its place once more per
// chainable output): turning chaining on, or disableChaining() on the
// tokenizer, changes the source's ID and every later one; a uid keeps it.
func TestGeneratedIDsFollowChains(t *testing.T) {
	off := unchained(wordCount(100, 2, 2, 0))
	require.NoError(t, off.Validate())
	on := off.Clone()
	yes := true
	on.Chaining = &yes
	require.NoError(t, on.Validate())
	a, b := off.OperatorIDs(), on.OperatorIDs()
	assert.NotEqual(t, a["source"], b["source"], "source -> tokenizer chains: the source's hash covers it")
	unset := off.Clone()
	unset.Chaining = nil
	assert.Equal(t, b, unset.OperatorIDs(), "a spec without chaining: chains, as Flink's default")
	assert.NotEqual(t, a["count"], b["count"], "an input's ID changed, so count's did")

	broken := on.Clone()
	broken.Operators[1].Chain = ChainDisable
	require.NoError(t, broken.Validate())
	c := broken.OperatorIDs()
	assert.Equal(t, a["source"], c["source"], "nothing chains to the source any more")
	assert.NotEqual(t, b["source"], c["source"])

	pinned := withUIDs(on.Clone())
	pinnedBroken := withUIDs(broken.Clone())
	assert.Equal(t, pinned.OperatorIDs(), pinnedBroken.OperatorIDs(), "uids ignore chaining")
}

// Two operators with one uid are refused with Flink's message.
func TestDuplicateUIDIsRefused(t *testing.T) {
	spec := wordCount(100, 2, 2, 0)
	spec.Operators[1].UID = "same"
	spec.Operators[2].UID = "same"
	err := spec.Validate()
	require.ErrorIs(t, err, ErrInvalidSpec)
	assert.Contains(t, err.Error(), "Hash collision on user-specified ID. Most likely cause is a non-unique ID.")
}

// savepointOf runs spec, takes a savepoint and returns the stepper, the
// savepoint id and the event log.
func savepointOf(t *testing.T, spec *JobSpec) (*Stepper, int64, *eventLog) {
	t.Helper()
	s, log := newTestStepper(t, spec)
	s.Steps(150)
	before := s.Snapshot().Checkpoints.Counts.Completed
	require.NoError(t, s.Do(Command{Name: CmdTriggerSavepoint}))
	_, err := s.RunUntil(func(s *Snapshot) bool { return s.Checkpoints.Counts.Completed > before }, 5000)
	require.NoError(t, err)
	h := s.Snapshot().Checkpoints.History
	return s, h[len(h)-1].ID, log
}

// The classic mistake, part one: an operator inserted into a job without
// uids takes the generated ID count had (the same place in the topology,
// the same input), count takes the sink's, and the sink gets a new one.
// Nothing is refused — state is matched by ID alone, as in Flink — but the
// map now holds count's state and count the sink's: the counts start over
// and the totals come out wrong. The upgrade's event says which operator
// restores whose state.
func TestUpgradeWithoutUIDsMovesState(t *testing.T) {
	s, sp, log := savepointOf(t, unchained(wordCount(300, 2, 2, 0)))
	before := map[string]string{}
	for _, o := range s.Snapshot().Job.Operators {
		before[o.ID] = o.OperatorID
	}
	require.NoError(t, s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindMap}))
	after := map[string]string{}
	for _, o := range s.Snapshot().Job.Operators {
		after[o.ID] = o.OperatorID
	}
	assert.Equal(t, before["count"], after["map"])
	assert.Equal(t, before["sink"], after["count"])
	msg := log.kinds(EvRestoreRequested)[0].Message
	assert.Contains(t, msg, "map (ID "+after["map"]+", generated) restores count's state")
	assert.Contains(t, msg, "count (ID "+after["count"]+", generated) restores sink's state")
	assert.Contains(t, msg, "sink (ID "+after["sink"]+", generated) starts with empty state")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.NotEmpty(t, cmp[0].Losses, "count started over: its totals are short")
}

// Part two: giving count a uid after the savepoint was taken without one
// files its state under an ID no operator has. Flink refuses the savepoint
// with its message and the running job is left alone; allowNonRestoredState
// drops the state and count starts empty.
func TestUpgradeAddingUIDLaterNeedsAllowNonRestoredState(t *testing.T) {
	s, sp, log := savepointOf(t, wordCount(300, 2, 2, 0))
	countID := ""
	for _, o := range s.Snapshot().Job.Operators {
		if o.ID == "count" {
			countID = o.OperatorID
		}
	}
	attempt := s.Snapshot().Job.Attempt
	cmd := Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeSetUID, Operator: "count", UID: "count"}
	err := s.Do(cmd)
	require.ErrorIs(t, err, ErrNonRestoredState)
	assert.Contains(t, err.Error(), "Failed to rollback to checkpoint/savepoint savepoint-")
	assert.Contains(t, err.Error(), ". Cannot map checkpoint/savepoint state for operator "+countID+" to the new program, because the operator is not available in the new program. If you want to allow to skip this, you can set the --allowNonRestoredState option on the CLI.")
	snap := s.Snapshot()
	assert.Equal(t, JobRunning, snap.Job.Status, "the refused upgrade leaves the job running")
	assert.Equal(t, attempt, snap.Job.Attempt)
	assert.Empty(t, snap.Job.Operators[2].UID)

	cmd.AllowNonRestoredState = true
	require.NoError(t, s.Do(cmd))
	msg := log.kinds(EvRestoreRequested)[0].Message
	assert.Contains(t, msg, `count (uid "count", ID`)
	assert.Contains(t, msg, "starts with empty state")
	assert.Contains(t, msg, "skipped: the state of count (ID "+countID+", generated) (allowNonRestoredState)")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.NotEmpty(t, cmp[0].Losses, "count started over")
}

// With a uid on every operator the same change keeps every operator's
// state: the job runs to the end with the right totals.
func TestUpgradeWithUIDsKeepsState(t *testing.T) {
	spec := withUIDs(wordCount(300, 2, 2, 0))
	s, sp, log := savepointOf(t, spec)
	require.NoError(t, s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindMap, UID: "identity-map"}))
	msg := log.kinds(EvRestoreRequested)[0].Message
	assert.Contains(t, msg, `count (uid "count", ID`)
	assert.Contains(t, msg, "restores its own state")
	assert.Contains(t, msg, `map (uid "identity-map"`)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	require.NotEmpty(t, cmp)
	assert.Empty(t, cmp[0].Losses, "every count kept its state")
}

// Changing a uid orphans the state filed under the old one; removing a
// stateful operator does too. Both are refused without
// allowNonRestoredState and accepted with it.
func TestUpgradeUIDChangeAndRemovalNeedAllowNonRestoredState(t *testing.T) {
	for _, cmd := range []Command{
		{Change: ChangeSetUID, Operator: "count", UID: "count-v2"},
		{Change: ChangeRemoveOperator, Operator: "count"},
	} {
		t.Run(cmd.Change, func(t *testing.T) {
			s, sp, _ := savepointOf(t, withUIDs(wordCount(300, 2, 2, 0)))
			cmd.Name, cmd.Checkpoint = CmdUpgrade, sp
			err := s.Do(cmd)
			require.ErrorIs(t, err, ErrNonRestoredState)
			assert.Contains(t, err.Error(), `count (uid "count", ID`)
			cmd.AllowNonRestoredState = true
			require.NoError(t, s.Do(cmd))
			runToEnd(t, s)
		})
	}
}

// A stateless operator has no state to lose: removing the tokenizer is
// refused only because count and the sink move in a job without uids; with
// uids it goes through, its empty state skipped without complaint.
func TestUpgradeRemovesStatelessOperator(t *testing.T) {
	spec := withUIDs(wordCount(300, 2, 2, 0))
	spec.Operators[1].Kind = KindMap // a line is one key: count counts lines
	s, sp, log := savepointOf(t, spec)
	require.NoError(t, s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeRemoveOperator, Operator: "tokenizer"}))
	assert.Contains(t, log.kinds(EvRestoreRequested)[0].Message, `skipped: the empty state of tokenizer`)
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// A new parallelism maps key groups as a rescale does; a max parallelism
// configured differently from the savepoint's is refused with Flink's
// message.
func TestUpgradeParallelismAndMaxParallelism(t *testing.T) {
	s, sp, _ := savepointOf(t, wordCount(300, 2, 2, 0))
	err := s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeSetMaxParallelism, Operator: "count", MaxParallelism: 256})
	require.ErrorIs(t, err, ErrNonRestoredState)
	assert.Contains(t, err.Error(), "Max parallelism mismatch between checkpoint/savepoint state and new program. Cannot map operator ")
	assert.Contains(t, err.Error(), "with max parallelism 128 to new program with max parallelism 256.")

	require.NoError(t, s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeSetParallelism, Operator: "count", Parallelism: 3}))
	runToEnd(t, s)
	snap := s.Snapshot()
	assert.Equal(t, 3, snap.Job.Operators[2].Parallelism)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses)
}

// Bad upgrades say what was wrong.
func TestUpgradeBadCommands(t *testing.T) {
	s, sp, _ := savepointOf(t, wordCount(300, 2, 2, 0))
	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{Command{Change: ChangeAddOperator, Operator: "tokenizer", Kind: KindCount}, "add-operator adds a map"},
		{Command{Change: ChangeAddOperator, Operator: "nope", Kind: KindMap}, `no operator "nope"`},
		{Command{Change: ChangeRemoveOperator, Operator: "source"}, "is a source"},
		{Command{Change: "rename", Operator: "count"}, "unknown change"},
		{Command{Change: ChangeSetParallelism, Operator: "count", Parallelism: 500}, "not valid"},
		{Command{Change: ChangeNone, Checkpoint: 99}, "no retained checkpoint or savepoint 99"},
	} {
		tc.cmd.Name = CmdUpgrade
		if tc.cmd.Checkpoint == 0 {
			tc.cmd.Checkpoint = sp
		}
		err := s.Do(tc.cmd)
		require.ErrorIs(t, err, ErrBadCommand, "%v", tc.cmd)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// The way out of part two, as Flink's setUidHash: give count its uid and,
// as uidHash, the ID its state was filed under. In a job where every other
// operator has a uid the savepoint maps without allowNonRestoredState and
// count keeps its counts. Where the sink has no uid it is refused again:
// the sink's generated ID mixes in count's, which changed.
func TestUpgradeUIDHashKeepsStateFiledUnderTheOldID(t *testing.T) {
	spec := withUIDs(wordCount(300, 2, 2, 0))
	spec.Operators[2].UID = ""
	s, sp, log := savepointOf(t, spec)
	countID := ""
	for _, o := range s.Snapshot().Job.Operators {
		if o.ID == "count" {
			countID = o.OperatorID
		}
	}
	require.NoError(t, s.Do(Command{Name: CmdUpgrade, Checkpoint: sp, Change: ChangeSetUID, Operator: "count", UID: "count", UIDHash: countID}))
	msg := log.kinds(EvRestoreRequested)[0].Message
	assert.Contains(t, msg, `count (uid "count", ID`)
	assert.Contains(t, msg, "restores its own state")
	runToEnd(t, s)
	cmp, err := s.Compare()
	require.NoError(t, err)
	assert.Empty(t, cmp[0].Losses, "count kept its state")

	s2, sp2, _ := savepointOf(t, wordCount(300, 2, 2, 0))
	ids := map[string]string{}
	for _, o := range s2.Snapshot().Job.Operators {
		ids[o.ID] = o.OperatorID
	}
	err = s2.Do(Command{Name: CmdUpgrade, Checkpoint: sp2, Change: ChangeSetUID, Operator: "count", UID: "count", UIDHash: ids["count"]})
	require.ErrorIs(t, err, ErrNonRestoredState)
	assert.Contains(t, err.Error(), "state for operator "+ids["sink"]+" to the new program")

	bad := wordCount(100, 2, 2, 0)
	bad.Operators[2].UIDHash = "not-hex"
	require.ErrorIs(t, bad.Validate(), ErrInvalidSpec)
}
