package state

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/statelab/statelab/rescale"
)

// OperatorBackend holds the operator (non-keyed) state of one subtask,
// Flink's DefaultOperatorStateBackend. Like a keyed backend it is used by one
// goroutine at a time.
type OperatorBackend struct {
	order  []string // registration (or restore) order, the snapshot order
	states map[string]*opState
}

type opState struct {
	mode     rescale.Mode
	elements [][]byte          // list modes
	bcast    map[string][]byte // broadcast: encoded key -> encoded value
	render   renderer          // element (list) or value (broadcast)
	renderK  renderer
}

// NewOperatorBackend returns an empty operator state backend.
func NewOperatorBackend() *OperatorBackend {
	return &OperatorBackend{states: map[string]*opState{}}
}

func (o *OperatorBackend) state(name string, mode rescale.Mode, render, renderK renderer) (*opState, error) {
	if s, ok := o.states[name]; ok {
		if s.mode != mode {
			return nil, fmt.Errorf("%w: operator state %q is %s, asked for %s", ErrStateKind, name, s.mode, mode)
		}
		s.render, s.renderK = render, renderK
		return s, nil
	}
	s := &opState{mode: mode, render: render, renderK: renderK}
	if mode == rescale.Broadcast {
		s.bcast = map[string][]byte{}
	}
	o.states[name] = s
	o.order = append(o.order, name)
	return s, nil
}

// OperatorList returns the operator ListState called name in split-distribute
// mode (Flink's getListState): on rescale its elements are pooled and cut
// into contiguous chunks among the new subtasks.
func OperatorList[T any](o *OperatorBackend, name string, c Codec[T]) (ListState[T], error) {
	s, err := o.state(name, rescale.SplitDistribute, rendererFor(c), nil)
	if err != nil {
		return nil, err
	}
	return &opList[T]{s: s, c: c}, nil
}

// UnionList returns the operator ListState called name in union mode (Flink's
// getUnionListState): on restore every subtask gets every element.
func UnionList[T any](o *OperatorBackend, name string, c Codec[T]) (ListState[T], error) {
	s, err := o.state(name, rescale.Union, rendererFor(c), nil)
	if err != nil {
		return nil, err
	}
	return &opList[T]{s: s, c: c}, nil
}

// Broadcast returns the BroadcastState called name: a map every subtask holds
// a copy of; on restore each new subtask gets one old subtask's whole copy.
func Broadcast[K, V any](o *OperatorBackend, name string, kc Codec[K], vc Codec[V]) (MapState[K, V], error) {
	s, err := o.state(name, rescale.Broadcast, rendererFor(vc), rendererFor(kc))
	if err != nil {
		return nil, err
	}
	return &opMap[K, V]{s: s, kc: kc, vc: vc}, nil
}

type opList[T any] struct {
	s *opState
	c Codec[T]
}

func (l *opList[T]) Get() ([]T, error) {
	out := make([]T, 0, len(l.s.elements))
	for _, e := range l.s.elements {
		v, err := l.c.Decode(e)
		if err != nil {
			return nil, fmt.Errorf("decode operator list element: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (l *opList[T]) Add(v T) error {
	l.s.elements = append(l.s.elements, l.c.Append(nil, v))
	return nil
}

func (l *opList[T]) AddAll(vs []T) error {
	for _, v := range vs {
		l.s.elements = append(l.s.elements, l.c.Append(nil, v))
	}
	return nil
}

func (l *opList[T]) Update(vs []T) error { l.s.elements = nil; return l.AddAll(vs) }
func (l *opList[T]) Clear() error        { l.s.elements = nil; return nil }

type opMap[K, V any] struct {
	s  *opState
	kc Codec[K]
	vc Codec[V]
}

func (m *opMap[K, V]) Get(k K) (V, bool, error) {
	var zero V
	raw, ok := m.s.bcast[string(m.kc.Append(nil, k))]
	if !ok {
		return zero, false, nil
	}
	v, err := m.vc.Decode(raw)
	if err != nil {
		return zero, false, fmt.Errorf("decode broadcast state value: %w", err)
	}
	return v, true, nil
}

func (m *opMap[K, V]) Put(k K, v V) error {
	m.s.bcast[string(m.kc.Append(nil, k))] = m.vc.Append(nil, v)
	return nil
}

func (m *opMap[K, V]) Remove(k K) error { delete(m.s.bcast, string(m.kc.Append(nil, k))); return nil }

func (m *opMap[K, V]) Contains(k K) (bool, error) {
	_, ok := m.s.bcast[string(m.kc.Append(nil, k))]
	return ok, nil
}

func (m *opMap[K, V]) Iterate(fn func(k K, v V) bool) error {
	for _, ks := range sortedKeys(m.s.bcast) {
		k, err := m.kc.Decode([]byte(ks))
		if err != nil {
			return fmt.Errorf("decode broadcast state key: %w", err)
		}
		v, err := m.vc.Decode(m.s.bcast[ks])
		if err != nil {
			return fmt.Errorf("decode broadcast state value: %w", err)
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}

func (m *opMap[K, V]) IsEmpty() (bool, error) { return len(m.s.bcast) == 0, nil }
func (m *opMap[K, V]) Clear() error           { clear(m.s.bcast); return nil }

func sortedKeys(m map[string][]byte) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Snapshot copies the operator state out, in registration order; broadcast
// entries in key order.
func (o *OperatorBackend) Snapshot() *OperatorSnapshot {
	out := &OperatorSnapshot{States: []OperatorStateSnapshot{}}
	for _, name := range o.order {
		s := o.states[name]
		st := OperatorStateSnapshot{Name: name, Mode: s.mode, Elements: [][]byte{}}
		if s.mode == rescale.Broadcast {
			for _, k := range sortedKeys(s.bcast) {
				st.Elements = append(st.Elements, encodeKV([]byte(k), s.bcast[k]))
			}
		} else {
			for _, e := range s.elements {
				st.Elements = append(st.Elements, slices.Clone(e))
			}
		}
		out.States = append(out.States, st)
	}
	return out
}

func encodeKV(k, v []byte) []byte {
	b := binary.AppendUvarint(make([]byte, 0, len(k)+len(v)+2), uint64(len(k)))
	return append(append(b, k...), v...)
}

func decodeKV(e []byte) (k, v []byte, err error) {
	n, w := binary.Uvarint(e)
	if w <= 0 || uint64(len(e)-w) < n {
		return nil, nil, fmt.Errorf("%w: malformed broadcast state entry", ErrCorrupt)
	}
	return e[w : w+int(n)], e[w+int(n):], nil
}

// OperatorEntry is one operator state element for the state inspector.
type OperatorEntry struct {
	State string       `json:"state"`
	Mode  rescale.Mode `json:"mode"`
	Index int          `json:"index"`         // position in the list
	Key   string       `json:"key,omitempty"` // broadcast state key
	Value string       `json:"value"`
}

// Entries lists every element, states in registration order.
func (o *OperatorBackend) Entries() []OperatorEntry {
	var out []OperatorEntry
	for _, name := range o.order {
		s := o.states[name]
		r, rk := s.render, s.renderK
		if r == nil {
			r = RenderBytes
		}
		if rk == nil {
			rk = RenderBytes
		}
		if s.mode == rescale.Broadcast {
			for i, k := range sortedKeys(s.bcast) {
				out = append(out, OperatorEntry{State: name, Mode: s.mode, Index: i, Key: rk([]byte(k)), Value: r(s.bcast[k])})
			}
			continue
		}
		for i, e := range s.elements {
			out = append(out, OperatorEntry{State: name, Mode: s.mode, Index: i, Value: r(e)})
		}
	}
	return out
}

// RestoreOperatorBackends builds the operator backends of newParallelism
// subtasks from the snapshots of the old subtasks (old[i] is subtask i; nil
// for a subtask that had none), redistributing each state by its mode exactly
// as Flink's RoundRobinOperatorStateRepartitioner does (rescale.Repartition).
func RestoreOperatorBackends(old []*OperatorSnapshot, newParallelism int) ([]*OperatorBackend, error) {
	subs := make([]rescale.SubtaskState[[]byte], len(old))
	modes := map[string]rescale.Mode{}
	var order []string
	for i, snap := range old {
		if snap == nil {
			continue
		}
		for _, st := range snap.States {
			subs[i] = append(subs[i], rescale.NamedState[[]byte]{Name: st.Name, Mode: st.Mode, Elements: st.Elements})
			if _, ok := modes[st.Name]; !ok {
				modes[st.Name] = st.Mode
				order = append(order, st.Name)
			}
		}
	}
	parts, err := rescale.Repartition(subs, newParallelism)
	if err != nil {
		return nil, fmt.Errorf("state: restore operator state: %w", err)
	}
	out := make([]*OperatorBackend, newParallelism)
	for i, part := range parts {
		o := NewOperatorBackend()
		for _, name := range order {
			s, _ := o.state(name, modes[name], nil, nil)
			for _, e := range part[name] {
				if s.mode == rescale.Broadcast {
					k, v, err := decodeKV(e)
					if err != nil {
						return nil, fmt.Errorf("state: restore broadcast state %q: %w", name, err)
					}
					s.bcast[string(k)] = slices.Clone(v)
				} else {
					s.elements = append(s.elements, slices.Clone(e))
				}
			}
		}
		out[i] = o
	}
	return out, nil
}
