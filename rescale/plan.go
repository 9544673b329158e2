package rescale

// KeyGroupMove is one key group's owner before and after a rescale.
type KeyGroupMove struct {
	KeyGroup int `json:"keyGroup"`
	From     int `json:"from"`
	To       int `json:"to"`
}

// Read is one piece of keyed state a new subtask restores: the part of an
// old subtask's key-group range that falls in the new subtask's range.
type Read struct {
	OldSubtask int           `json:"oldSubtask"`
	Range      KeyGroupRange `json:"range"`
}

// SubtaskAssignment is what one new subtask restores.
type SubtaskAssignment struct {
	Subtask int           `json:"subtask"`
	Range   KeyGroupRange `json:"range"`
	Reads   []Read        `json:"reads"`
}

// Plan is what happens to keyed state when an operator goes from parallelism
// From to To under a fixed max parallelism.
type Plan struct {
	MaxParallelism int                 `json:"maxParallelism"`
	From           int                 `json:"from"`
	To             int                 `json:"to"`
	KeyGroups      []KeyGroupMove      `json:"keyGroups"` // every key group, ascending
	Moved          []int               `json:"moved"`     // key groups whose owner changes
	Subtasks       []SubtaskAssignment `json:"subtasks"`  // every new subtask, ascending
}

// NewPlan computes the rescale plan. Each new subtask reads, from every old
// subtask whose key-group range intersects its own, exactly that
// intersection, as StateAssignmentOperation does; with the parallelism
// unchanged each subtask reads back its own range.
func NewPlan(maxParallelism, from, to int) (Plan, error) {
	if err := CheckParallelism(from, maxParallelism); err != nil {
		return Plan{}, err
	}
	if err := CheckParallelism(to, maxParallelism); err != nil {
		return Plan{}, err
	}
	p := Plan{MaxParallelism: maxParallelism, From: from, To: to,
		KeyGroups: make([]KeyGroupMove, maxParallelism), Moved: []int{}}
	for g := range maxParallelism {
		m := KeyGroupMove{KeyGroup: g,
			From: OperatorIndexForKeyGroup(maxParallelism, from, g),
			To:   OperatorIndexForKeyGroup(maxParallelism, to, g)}
		p.KeyGroups[g] = m
		if m.From != m.To {
			p.Moved = append(p.Moved, g)
		}
	}
	oldRanges := KeyGroupRanges(maxParallelism, from)
	for i := range to {
		r := KeyGroupRangeForOperator(maxParallelism, to, i)
		a := SubtaskAssignment{Subtask: i, Range: r, Reads: []Read{}}
		for j, or := range oldRanges {
			if x := or.Intersection(r); !x.Empty() {
				a.Reads = append(a.Reads, Read{OldSubtask: j, Range: x})
			}
		}
		p.Subtasks = append(p.Subtasks, a)
	}
	return p, nil
}

// NaiveOwner is the scheme key groups replace, used for teaching: a key goes
// to subtask hash mod parallelism (non-negative modulo of the Java hashCode).
// Under it, a rescale reassigns keys one by one, so every new subtask must
// scan the state of every old subtask to find its keys.
func NaiveOwner(keyHash int32, parallelism int) int {
	m := int(keyHash) % parallelism
	if m < 0 {
		m += parallelism
	}
	return m
}

// NaiveMovedShare is the share of uniformly spread hashes whose owner changes
// under NaiveOwner when parallelism goes from p to q: of every lcm(p, q)
// consecutive hashes exactly min(p, q) keep their owner (h mod p = h mod q = r
// for one h per r < min(p, q), by the Chinese remainder theorem).
func NaiveMovedShare(p, q int) float64 {
	if p == q {
		return 0
	}
	l := p / gcd(p, q) * q
	return 1 - float64(min(p, q))/float64(l)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// MoveStats counts, for a concrete key set, how many keys change owner under
// key groups and under the naive scheme.
type MoveStats struct {
	Keys             int `json:"keys"`
	MovedByKeyGroups int `json:"movedByKeyGroups"`
	MovedByNaive     int `json:"movedByNaive"`
}

// CompareMoves counts the keys (given by their Java hash codes) that change
// owner when parallelism goes from `from` to `to`, under key groups with the
// given max parallelism and under NaiveOwner.
func CompareMoves(keyHashes []int32, maxParallelism, from, to int) MoveStats {
	s := MoveStats{Keys: len(keyHashes)}
	for _, h := range keyHashes {
		g := KeyGroupForKeyHash(h, maxParallelism)
		if OperatorIndexForKeyGroup(maxParallelism, from, g) != OperatorIndexForKeyGroup(maxParallelism, to, g) {
			s.MovedByKeyGroups++
		}
		if NaiveOwner(h, from) != NaiveOwner(h, to) {
			s.MovedByNaive++
		}
	}
	return s
}
