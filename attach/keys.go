package attach

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/statelab/statelab/rescale"
)

// ErrNotKeyed is returned for a key lookup or a rescale plan on a vertex
// whose key groups are not known.
var ErrNotKeyed = errors.New("attach: vertex has no key groups")

// KeyType is the Java type of a key; it decides the hashCode Flink applies.
type KeyType string

// The key types StateLab can hash exactly as the JVM does.
const (
	KeyString KeyType = "string" // java.lang.String
	KeyInt    KeyType = "int"    // java.lang.Integer
	KeyLong   KeyType = "long"   // java.lang.Long
)

// ParseKeyType reads "string", "int" or "long" (also Flink's Java names).
func ParseKeyType(s string) (KeyType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "string", "java.lang.string":
		return KeyString, nil
	case "int", "integer", "java.lang.integer":
		return KeyInt, nil
	case "long", "java.lang.long":
		return KeyLong, nil
	}
	return "", fmt.Errorf("key type %q is not one of string, int, long", s)
}

// KeyOwner says where a key's state lives.
type KeyOwner struct {
	Key      string  `json:"key"`
	Type     KeyType `json:"type"`
	HashCode int32   `json:"hashCode"` // the key's Java hashCode
	KeyGroup int     `json:"keyGroup"`
	Subtask  int     `json:"subtask"`
}

// KeyHash is the Java hashCode of key read as type t: the number Flink
// feeds to murmurHash to find the key group.
func KeyHash(t KeyType, key string) (int32, error) {
	switch t {
	case KeyString:
		return rescale.JavaStringHashCode(key), nil
	case KeyInt:
		n, err := strconv.ParseInt(strings.TrimSpace(key), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("key %q is not a Java int (-2147483648..2147483647): %w", key, err)
		}
		return rescale.JavaIntHashCode(int32(n)), nil
	case KeyLong:
		n, err := strconv.ParseInt(strings.TrimSpace(key), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("key %q is not a Java long: %w", key, err)
		}
		return rescale.JavaLongHashCode(n), nil
	}
	return 0, fmt.Errorf("key type %q is not one of string, int, long", t)
}

// LocateKey is the key → key group → subtask lookup for an operator with
// the given max parallelism and parallelism.
func LocateKey(t KeyType, key string, maxParallelism, parallelism int) (KeyOwner, error) {
	if err := rescale.CheckParallelism(parallelism, maxParallelism); err != nil {
		return KeyOwner{}, err
	}
	h, err := KeyHash(t, key)
	if err != nil {
		return KeyOwner{}, err
	}
	g := rescale.KeyGroupForKeyHash(h, maxParallelism)
	return KeyOwner{Key: key, Type: t, HashCode: h, KeyGroup: g,
		Subtask: rescale.OperatorIndexForKeyGroup(maxParallelism, parallelism, g)}, nil
}

// LocateKey finds the subtask of v that holds key's state.
func (v Vertex) LocateKey(t KeyType, key string) (KeyOwner, error) {
	if err := v.requireKeyGroups(); err != nil {
		return KeyOwner{}, err
	}
	return LocateKey(t, key, v.MaxParallelism, v.Parallelism)
}

// RescalePlan is what would happen to v's keyed state if the job were
// restored with parallelism `to`: which key groups move and what each new
// subtask reads (rescale.NewPlan). Asking for more than max parallelism
// returns Flink's refusal.
func (v Vertex) RescalePlan(to int) (rescale.Plan, error) {
	if err := v.requireKeyGroups(); err != nil {
		return rescale.Plan{}, err
	}
	return rescale.NewPlan(v.MaxParallelism, v.Parallelism, to)
}

func (v Vertex) requireKeyGroups() error {
	switch {
	case !v.Keyed:
		return fmt.Errorf("%w: %s is not keyed (no input of it is a HASH edge), so its state is not split by key group", ErrNotKeyed, vertexLabel(v.ID, v.Name))
	case len(v.KeyGroups) == 0:
		return fmt.Errorf("%w: %s has no known max parallelism; see the warning about it", ErrNotKeyed, vertexLabel(v.ID, v.Name))
	}
	return nil
}

// Runs compresses ascending key groups into maximal contiguous ranges, the
// way a key-group strip draws moved groups: [3 4 5 9] → [3, 5], [9, 9].
func Runs(groups []int) []rescale.KeyGroupRange {
	var out []rescale.KeyGroupRange
	for _, g := range groups {
		if n := len(out); n > 0 && out[n-1].End+1 == g {
			out[n-1].End = g
			continue
		}
		out = append(out, rescale.KeyGroupRange{Start: g, End: g})
	}
	return out
}
