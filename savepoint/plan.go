package savepoint

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/statelab/statelab/rescale"
)

// ErrNoOperator: the plan names an operator the metadata does not hold.
var ErrNoOperator = errors.New("savepoint: no such operator")

// ErrAboveMax is Flink's refusal to restore with a parallelism above the
// state's max parallelism (StateAssignmentOperation.checkParallelismPreconditions).
var ErrAboveMax = errors.New("savepoint: parallelism above the state's max parallelism")

// Plan is what each new subtask of one operator would read if the job were
// restored from this savepoint with another parallelism.
type Plan struct {
	Operator       string `json:"operator"`
	Name           string `json:"name"`
	UID            string `json:"uid"`
	MaxParallelism int    `json:"maxParallelism"`
	From           int    `json:"from"`
	To             int    `json:"to"`
	// MovedKeyGroups are the key groups whose owner changes.
	MovedKeyGroups []int         `json:"movedKeyGroups"`
	Subtasks       []PlanSubtask `json:"subtasks"`
	// Notes say what the plan leaves out (raw state, coordinator state);
	// RawState and Coordinator say the same for a page to word itself.
	Notes       []string `json:"notes,omitempty"`
	RawState    bool     `json:"rawState,omitempty"`
	Coordinator bool     `json:"coordinator,omitempty"`
}

// PlanSubtask is one new subtask's share.
type PlanSubtask struct {
	Subtask int                   `json:"subtask"`
	Range   rescale.KeyGroupRange `json:"range"`
	// KeyedReads: the old keyed handles whose key-group range meets this
	// subtask's range, and the bytes it reads from each.
	KeyedReads []KeyedRead `json:"keyedReads"`
	KeyedBytes int64       `json:"keyedBytes"`
	// OperatorState: per state name, the elements this subtask restores.
	OperatorState []PlanState `json:"operatorState"`
}

// KeyedRead is one old handle a new subtask reads from.
type KeyedRead struct {
	OldSubtask int                   `json:"oldSubtask"`
	Kind       string                `json:"kind"`
	Range      rescale.KeyGroupRange `json:"range"` // the intersection
	Bytes      int64                 `json:"bytes"`
	// WholeHandle: the handle has no per-key-group offsets (incremental and
	// changelog handles), so the subtask fetches all of it and drops the key
	// groups outside its range, as Flink's RocksDB restore does.
	WholeHandle bool `json:"wholeHandle,omitempty"`
}

// PlanState is one named operator state on a new subtask.
type PlanState struct {
	Name     string       `json:"name"`
	Mode     string       `json:"mode"`
	Elements []ElementRef `json:"elements"`
	Bytes    int64        `json:"bytes"`
}

// ElementRef is an old element: which old subtask held it, its index in that
// subtask's list, and its length.
type ElementRef struct {
	OldSubtask int   `json:"oldSubtask"`
	Index      int   `json:"index"`
	Bytes      int64 `json:"bytes"`
}

// FindOperator finds an operator by its id (hex, any case), uid or name.
func (m *Metadata) FindOperator(key string) (*OperatorState, error) {
	k := strings.ToLower(strings.TrimSpace(key))
	for i := range m.Operators {
		op := &m.Operators[i]
		if op.ID == k || (op.UID != "" && op.UID == key) || (op.Name != "" && op.Name == key) {
			return op, nil
		}
	}
	ids := make([]string, 0, len(m.Operators))
	for _, op := range m.Operators {
		ids = append(ids, op.ID)
	}
	return nil, fmt.Errorf("%w: %q is not the id, uid or name of any operator in this metadata (ids: %s)", ErrNoOperator, key, strings.Join(ids, ", "))
}

// NewPlan computes the restore of op with parallelism to, from the handles in
// the metadata: keyed state by key-group range intersection (rescale's
// Flink-exact ranges), operator state with rescale.Repartition.
func NewPlan(op *OperatorState, to int) (*Plan, error) {
	if op.MaxParallelism < to {
		return nil, fmt.Errorf("%w: the state for operator %s can not be restored: its maximum parallelism (%d) is lower than the configured parallelism (%d); Flink refuses this too, so choose a parallelism of at most %d",
			ErrAboveMax, op.ID, op.MaxParallelism, to, op.MaxParallelism)
	}
	if err := rescale.CheckParallelism(to, op.MaxParallelism); err != nil {
		return nil, err
	}
	// The saved parallelism must itself be one Flink could have run with;
	// a file that says otherwise is refused before anything is sized by it.
	from := op.Parallelism
	if err := rescale.CheckParallelism(from, op.MaxParallelism); err != nil {
		return nil, fmt.Errorf("%w: operator %s was saved with parallelism %d and max parallelism %d: %w", ErrCorrupt, op.ID, from, op.MaxParallelism, err)
	}
	p := &Plan{Operator: op.ID, Name: op.Name, UID: op.UID, MaxParallelism: op.MaxParallelism, From: op.Parallelism, To: to, MovedKeyGroups: []int{}}
	for g := range op.MaxParallelism {
		if rescale.OperatorIndexForKeyGroup(op.MaxParallelism, from, g) != rescale.OperatorIndexForKeyGroup(op.MaxParallelism, to, g) {
			p.MovedKeyGroups = append(p.MovedKeyGroups, g)
		}
	}

	// Operator state: every old subtask, in index order, with its managed lists.
	type ref = ElementRef
	old := make([]rescale.SubtaskState[ref], from)
	raw, coord := false, op.Coordinator != nil
	for _, st := range op.Subtasks {
		if st.Index >= from {
			continue
		}
		if st.RawOperatorState != nil || st.RawKeyedState != nil {
			raw = true
		}
		h := st.ManagedOperatorState
		if h == nil {
			continue
		}
		for _, sv := range DecodeOperatorState(h) {
			els := make([]ref, len(sv.Elements))
			for i, e := range sv.Elements {
				els[i] = ref{OldSubtask: st.Index, Index: i, Bytes: e.Bytes}
			}
			old[st.Index] = append(old[st.Index], rescale.NamedState[ref]{Name: sv.Name, Mode: rescale.Mode(sv.Mode), Elements: els})
		}
	}
	parts, err := rescale.Repartition(old, to)
	if err != nil {
		return nil, fmt.Errorf("repartition operator state: %w", err)
	}
	names := map[string]string{}
	for _, st := range old {
		for _, ns := range st {
			names[ns.Name] = string(ns.Mode)
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)

	for i := range to {
		r := rescale.KeyGroupRangeForOperator(op.MaxParallelism, to, i)
		ps := PlanSubtask{Subtask: i, Range: r, KeyedReads: []KeyedRead{}, OperatorState: []PlanState{}}
		for _, st := range op.Subtasks {
			h := st.ManagedKeyedState
			if h == nil {
				continue
			}
			x := h.Range.Intersection(r)
			if x.Empty() {
				continue
			}
			kr := KeyedRead{OldSubtask: st.Index, Kind: h.Kind, Range: x}
			if per := h.KeyGroupBytes(); per != nil {
				for g := x.Start; g <= x.End; g++ {
					kr.Bytes += per[g-h.Range.Start]
				}
			} else {
				kr.Bytes, kr.WholeHandle = h.Size(), true
			}
			ps.KeyedBytes += kr.Bytes
			ps.KeyedReads = append(ps.KeyedReads, kr)
		}
		for _, n := range sorted {
			els := parts[i][n]
			pst := PlanState{Name: n, Mode: names[n], Elements: els}
			for _, e := range els {
				pst.Bytes += e.Bytes
			}
			ps.OperatorState = append(ps.OperatorState, pst)
		}
		p.Subtasks = append(p.Subtasks, ps)
	}
	p.RawState, p.Coordinator = raw, coord
	if raw {
		p.Notes = append(p.Notes, "raw operator or keyed state is present; its restore follows the same rules but is not shown")
	}
	if coord {
		p.Notes = append(p.Notes, "the operator coordinator's state is restored whole on the job manager, whatever the parallelism")
	}
	return p, nil
}
