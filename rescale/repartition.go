package rescale

import (
	"errors"
	"fmt"
	"slices"
)

// Mode is how a named operator state is redistributed on restore, Flink's
// OperatorStateHandle.Mode.
type Mode string

// The three modes of operator state.
const (
	// SplitDistribute is ListState from getListState: the elements of all old
	// subtasks are concatenated and cut into contiguous chunks, one per new subtask.
	SplitDistribute Mode = "SPLIT_DISTRIBUTE"
	// Union is ListState from getUnionListState: every new subtask gets every element.
	Union Mode = "UNION"
	// Broadcast is BroadcastState: every new subtask gets one whole copy.
	Broadcast Mode = "BROADCAST"
)

// ParseMode accepts a mode name as Flink spells it.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case SplitDistribute, Union, Broadcast:
		return m, nil
	}
	return "", fmt.Errorf("%w: %q (want SPLIT_DISTRIBUTE, UNION or BROADCAST)", ErrMode, s)
}

// Errors returned by Repartition.
var (
	ErrMode          = errors.New("rescale: unknown operator state mode")
	ErrModeConflict  = errors.New("rescale: one state name used with two modes")
	ErrNoOldSubtasks = errors.New("rescale: no old subtasks")
)

// NamedState is one named operator state of one subtask: what Flink's
// OperatorStateHandle.StateMetaInfo describes (the offsets of the elements)
// together with the elements themselves.
type NamedState[T any] struct {
	Name     string
	Mode     Mode
	Elements []T
}

// SubtaskState is all operator state of one old subtask, in the order the
// operator registered it.
type SubtaskState[T any] []NamedState[T]

// Repartition is RoundRobinOperatorStateRepartitioner.repartitionState: it
// takes the operator state of every old subtask (old[i] is subtask i) and
// returns, for each of newParallelism new subtasks, the elements it restores
// per state name. Every state name appears on every new subtask, with an empty
// slice where Flink hands that subtask nothing. Where one new subtask receives
// elements from several old subtasks, they come in ascending old-subtask order.
//
// With the parallelism unchanged Flink keeps each subtask's state where it is,
// except that union states are given to everyone and a broadcast state missing
// on some subtasks (finished tasks) is copied to them. With a new parallelism:
//
//   - SPLIT_DISTRIBUTE: per state name, elements are cut into contiguous chunks
//     of total/newParallelism, the first total%newParallelism chunks one longer.
//     Chunks are dealt starting at a subtask that rotates across state names:
//     the next name starts at the first subtask that got a shorter chunk. Names
//     are visited in java.util.HashMap iteration order, as Flink does.
//   - UNION: every new subtask gets all elements.
//   - BROADCAST: new subtask i gets the copy of the (i mod n)-th old subtask
//     holding the state.
func Repartition[T any](old []SubtaskState[T], newParallelism int) ([]map[string][]T, error) {
	if len(old) == 0 {
		return nil, ErrNoOldSubtasks
	}
	if newParallelism < 1 || newParallelism > UpperBoundMaxParallelism {
		return nil, fmt.Errorf("%w: new parallelism %d is not within 1..%d", ErrParallelism, newParallelism, UpperBoundMaxParallelism)
	}
	modes := map[string]Mode{}
	var names []string // every name, first appearance order
	for i, st := range old {
		seen := map[string]bool{}
		for _, ns := range st {
			if _, err := ParseMode(string(ns.Mode)); err != nil {
				return nil, fmt.Errorf("old subtask %d, state %q: %w", i, ns.Name, err)
			}
			if seen[ns.Name] {
				return nil, fmt.Errorf("rescale: old subtask %d lists state %q twice", i, ns.Name)
			}
			seen[ns.Name] = true
			if m, ok := modes[ns.Name]; ok && m != ns.Mode {
				return nil, fmt.Errorf("%w: %q is %s on one subtask and %s on old subtask %d", ErrModeConflict, ns.Name, m, ns.Mode, i)
			} else if !ok {
				modes[ns.Name] = ns.Mode
				names = append(names, ns.Name)
			}
		}
	}

	out := make([]map[string][]T, newParallelism)
	for i := range out {
		out[i] = make(map[string][]T, len(names))
		for _, n := range names {
			out[i][n] = []T{}
		}
	}

	// holders lists, per name, the old subtasks that have it, in subtask order:
	// the list Flink builds per name in groupByStateMode.
	holders := map[string][]int{}
	for i, st := range old {
		for _, ns := range st {
			holders[ns.Name] = append(holders[ns.Name], i)
		}
	}
	get := func(sub int, name string) []T {
		for _, ns := range old[sub] {
			if ns.Name == name {
				return ns.Elements
			}
		}
		return nil
	}
	unionAll := func(name string) []T {
		all := []T{}
		for _, j := range holders[name] {
			all = append(all, get(j, name)...)
		}
		return all
	}

	if newParallelism == len(old) {
		for i := range old {
			for _, ns := range old[i] {
				out[i][ns.Name] = append(out[i][ns.Name], ns.Elements...)
			}
		}
		for _, n := range names {
			switch modes[n] {
			case Union:
				for i := range out {
					out[i][n] = unionAll(n)
				}
			case Broadcast:
				h := holders[n]
				for i := range out {
					if !slices.Contains(h, i) {
						out[i][n] = append([]T{}, get(h[i%len(h)], n)...)
					}
				}
			}
		}
		return out, nil
	}

	// SPLIT_DISTRIBUTE, names in the order Flink's HashMap hands them out.
	start := 0
	for _, n := range splitNameOrder(old) {
		var flat []T
		for _, j := range holders[n] {
			flat = append(flat, get(j, n)...)
		}
		total := len(flat)
		base, rem := total/newParallelism, total%newParallelism
		next := start
		pos := 0
		for i := 0; i < newParallelism; i++ {
			idx := (i + start) % newParallelism
			take := base
			if rem > 0 {
				take++
				rem--
			} else if rem == 0 {
				next = idx
				rem--
			}
			out[idx][n] = append(out[idx][n], flat[pos:pos+take]...)
			pos += take
		}
		start = next
	}
	for _, n := range names {
		switch modes[n] {
		case Union:
			all := unionAll(n)
			for i := range out {
				out[i][n] = append([]T{}, all...)
			}
		case Broadcast:
			h := holders[n]
			for i := range out {
				out[i][n] = append([]T{}, get(h[i%len(h)], n)...)
			}
		}
	}
	return out, nil
}

// splitNameOrder is the order in which Flink's groupByStateMode HashMap
// yields the SPLIT_DISTRIBUTE state names. Names are inserted as they first
// appear when scanning old subtasks in order, each subtask's names in the
// order of its snapshot's metadata map (DefaultOperatorStateBackend writes
// list states, then broadcast states, each through HashMaps of their own).
func splitNameOrder[T any](old []SubtaskState[T]) []string {
	var inserted []string
	seen := map[string]bool{}
	for _, st := range old {
		var lists, bcast []string
		for _, ns := range st {
			if ns.Mode == Broadcast {
				bcast = append(bcast, ns.Name)
			} else {
				lists = append(lists, ns.Name)
			}
		}
		// registered states (default HashMap) -> deep copy HashMap(size)
		lists = javaHashMapOrder(javaHashMapOrder(lists, 0), len(lists))
		bcast = javaHashMapOrder(javaHashMapOrder(bcast, 0), len(bcast))
		written := javaHashMapOrder(append(lists, bcast...), len(lists)+len(bcast))
		for _, n := range written {
			if seen[n] {
				continue
			}
			seen[n] = true
			for _, ns := range st {
				if ns.Name == n && ns.Mode == SplitDistribute {
					inserted = append(inserted, n)
				}
			}
		}
	}
	// groupByStateMode fills its HashMap with computeIfAbsent.
	m := newJavaHashMap(0)
	for _, n := range inserted {
		m.computeIfAbsent(n)
	}
	return m.keys()
}

// javaHashMap reproduces the iteration order of a java.util.HashMap with
// String keys: a table of buckets walked in index order. put appends to a
// bucket, computeIfAbsent prepends; a resize splits each bucket keeping the
// relative order of its keys. Not reproduced: tree bins, which Java builds
// only once eight or more keys share one bucket of a table of 64 or more.
type javaHashMap struct {
	initialCapacity int // 0 = new HashMap<>()
	threshold, size int
	table           [][]string
}

func newJavaHashMap(initialCapacity int) *javaHashMap {
	m := &javaHashMap{initialCapacity: initialCapacity}
	if initialCapacity > 0 {
		m.threshold = tableSizeFor(initialCapacity)
	}
	return m
}

func javaSpread(k string) uint32 {
	h := uint32(JavaStringHashCode(k))
	return h ^ h>>16
}

// resize is HashMap.resize.
func (m *javaHashMap) resize() {
	oldCap := len(m.table)
	var newCap, newThr int
	switch {
	case oldCap > 0:
		newCap = oldCap * 2
		if oldCap >= 16 {
			newThr = m.threshold * 2
		}
	case m.threshold > 0:
		newCap = m.threshold
	default:
		newCap, newThr = 16, 12
	}
	if newThr == 0 {
		newThr = int(float32(newCap) * 0.75)
	}
	table := make([][]string, newCap)
	for j, bin := range m.table {
		for _, k := range bin {
			if javaSpread(k)&uint32(oldCap) == 0 {
				table[j] = append(table[j], k)
			} else {
				table[j+oldCap] = append(table[j+oldCap], k)
			}
		}
	}
	m.table, m.threshold = table, newThr
}

func (m *javaHashMap) bucket(k string) int { return int(javaSpread(k) & uint32(len(m.table)-1)) }

// put is HashMap.put of a new key.
func (m *javaHashMap) put(k string) {
	if len(m.table) == 0 {
		m.resize()
	}
	i := m.bucket(k)
	m.table[i] = append(m.table[i], k)
	if len(m.table[i]) >= 9 && len(m.table) < 64 { // treeifyBin on a small table resizes
		m.resize()
	}
	m.size++
	if m.size > m.threshold {
		m.resize()
	}
}

// computeIfAbsent is HashMap.computeIfAbsent of a new key: it resizes before
// inserting, and puts the new key at the head of its bucket.
func (m *javaHashMap) computeIfAbsent(k string) {
	if m.size > m.threshold || len(m.table) == 0 {
		m.resize()
	}
	i := m.bucket(k)
	before := len(m.table[i])
	m.table[i] = append([]string{k}, m.table[i]...)
	if before >= 8 && len(m.table) < 64 {
		m.resize()
	}
	m.size++
}

func (m *javaHashMap) keys() []string {
	var out []string
	for _, bin := range m.table {
		out = append(out, bin...)
	}
	return out
}

// javaHashMapOrder is the iteration order of new HashMap<>(initialCapacity)
// after put(k) for each key in order.
func javaHashMapOrder(keys []string, initialCapacity int) []string {
	m := newJavaHashMap(initialCapacity)
	for _, k := range keys {
		m.put(k)
	}
	return m.keys()
}

// tableSizeFor is HashMap.tableSizeFor: the next power of two >= c (at least 1).
func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}
