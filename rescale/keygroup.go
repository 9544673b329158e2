package rescale

import (
	"errors"
	"fmt"
)

// Flink's bounds on max parallelism (KeyGroupRangeAssignment).
const (
	// DefaultLowerBoundMaxParallelism is the smallest max parallelism Flink
	// picks by default (1 << 7).
	DefaultLowerBoundMaxParallelism = 1 << 7
	// UpperBoundMaxParallelism is the largest max parallelism (and so the
	// largest parallelism) Flink accepts (1 << 15).
	UpperBoundMaxParallelism = 1 << 15
)

// Sentinel errors; the wrapped messages say which value was wrong and what is allowed.
var (
	ErrParallelism    = errors.New("rescale: parallelism out of bounds")
	ErrMaxParallelism = errors.New("rescale: max parallelism out of bounds")
	ErrAboveMax       = errors.New("rescale: parallelism above max parallelism")
)

// KeyGroupRange is a contiguous, inclusive range of key groups, Flink's
// KeyGroupRange. The empty range is {0, -1}.
type KeyGroupRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// EmptyKeyGroupRange is Flink's KeyGroupRange.EMPTY_KEY_GROUP_RANGE.
var EmptyKeyGroupRange = KeyGroupRange{Start: 0, End: -1}

// NewKeyGroupRange returns [start, end], or the empty range when end < start.
func NewKeyGroupRange(start, end int) KeyGroupRange {
	if end < start {
		return EmptyKeyGroupRange
	}
	return KeyGroupRange{Start: start, End: end}
}

// Len is the number of key groups in r (Flink's getNumberOfKeyGroups).
func (r KeyGroupRange) Len() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Empty reports whether r holds no key group.
func (r KeyGroupRange) Empty() bool { return r.Len() == 0 }

// Contains reports whether key group g lies in r.
func (r KeyGroupRange) Contains(g int) bool { return g >= r.Start && g <= r.End }

// Intersection is Flink's KeyGroupRange.getIntersection.
func (r KeyGroupRange) Intersection(o KeyGroupRange) KeyGroupRange {
	return NewKeyGroupRange(max(r.Start, o.Start), min(r.End, o.End))
}

func (r KeyGroupRange) String() string {
	if r.Empty() {
		return "[]"
	}
	return fmt.Sprintf("[%d, %d]", r.Start, r.End)
}

// KeyGroupForKeyHash is KeyGroupRangeAssignment.computeKeyGroupForKeyHash:
// murmurHash(keyHash) % maxParallelism, where keyHash is the key's Java hashCode.
func KeyGroupForKeyHash(keyHash int32, maxParallelism int) int {
	return int(MurmurHash(keyHash)) % maxParallelism
}

// KeyGroupForString, KeyGroupForInt and KeyGroupForLong are
// KeyGroupRangeAssignment.assignToKeyGroup for the three key types StateLab
// speaks of.
func KeyGroupForString(key string, maxParallelism int) int {
	return KeyGroupForKeyHash(JavaStringHashCode(key), maxParallelism)
}

// KeyGroupForInt is assignToKeyGroup for a java.lang.Integer key.
func KeyGroupForInt(key int32, maxParallelism int) int {
	return KeyGroupForKeyHash(JavaIntHashCode(key), maxParallelism)
}

// KeyGroupForLong is assignToKeyGroup for a java.lang.Long key.
func KeyGroupForLong(key int64, maxParallelism int) int {
	return KeyGroupForKeyHash(JavaLongHashCode(key), maxParallelism)
}

// OperatorIndexForKeyGroup is computeOperatorIndexForKeyGroup: the subtask
// that owns keyGroup, keyGroup * parallelism / maxParallelism.
func OperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup int) int {
	return keyGroup * parallelism / maxParallelism
}

// KeyGroupRangeForOperator is computeKeyGroupRangeForOperatorIndex: the key
// groups subtask index owns, [ceil(i*max/p), floor(((i+1)*max-1)/p)].
func KeyGroupRangeForOperator(maxParallelism, parallelism, index int) KeyGroupRange {
	start := (index*maxParallelism + parallelism - 1) / parallelism
	end := ((index+1)*maxParallelism - 1) / parallelism
	return NewKeyGroupRange(start, end)
}

// KeyGroupRanges returns the ranges of every subtask of an operator, in subtask order.
func KeyGroupRanges(maxParallelism, parallelism int) []KeyGroupRange {
	out := make([]KeyGroupRange, parallelism)
	for i := range out {
		out[i] = KeyGroupRangeForOperator(maxParallelism, parallelism, i)
	}
	return out
}

// DefaultMaxParallelism is computeDefaultMaxParallelism: the max parallelism
// Flink chooses when none is set, min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768).
func DefaultMaxParallelism(parallelism int) int {
	return min(max(roundUpToPowerOfTwo(parallelism+parallelism/2), DefaultLowerBoundMaxParallelism), UpperBoundMaxParallelism)
}

// roundUpToPowerOfTwo is MathUtils.roundUpToPowerOfTwo on int32.
func roundUpToPowerOfTwo(x int) int {
	v := uint32(int32(x - 1))
	v |= v >> 1
	v |= v >> 2
	v |= v >> 4
	v |= v >> 8
	v |= v >> 16
	return int(int32(v + 1))
}

// CheckMaxParallelism applies Flink's bound on max parallelism: 1..32768.
func CheckMaxParallelism(maxParallelism int) error {
	if maxParallelism < 1 || maxParallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("%w: max parallelism %d is not within 1..%d", ErrMaxParallelism, maxParallelism, UpperBoundMaxParallelism)
	}
	return nil
}

// CheckParallelism applies Flink's bounds: parallelism within 1..32768,
// max parallelism within 1..32768, and parallelism not above max parallelism
// (the check Flink makes before it schedules or rescales a job vertex).
func CheckParallelism(parallelism, maxParallelism int) error {
	if parallelism < 1 || parallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("%w: parallelism %d is not within 1..%d", ErrParallelism, parallelism, UpperBoundMaxParallelism)
	}
	if err := CheckMaxParallelism(maxParallelism); err != nil {
		return err
	}
	if parallelism > maxParallelism {
		return fmt.Errorf("%w: parallelism %d is above max parallelism %d; key groups are the unit of keyed state, so an operator can have at most max parallelism subtasks (choose a parallelism of at most %d, or a larger max parallelism before the first savepoint)",
			ErrAboveMax, parallelism, maxParallelism, maxParallelism)
	}
	return nil
}
