// Package rescale is the arithmetic Apache Flink uses to place keyed state and to
// redistribute state when an operator's parallelism changes. It is pure: no I/O,
// no clock, no randomness, so every other package (and every lesson) can trust
// that the numbers it shows are the numbers a real Flink job would produce.
//
// Everything here mirrors a Flink class, and keeps Flink's names:
//
//   - JavaStringHashCode, JavaIntHashCode, JavaLongHashCode: java.lang.String /
//     Integer / Long hashCode. Strings are hashed over UTF-16 code units, so a
//     character outside the Basic Multilingual Plane counts as two units.
//   - MurmurHash: org.apache.flink.util.MathUtils.murmurHash.
//   - KeyGroupForKeyHash, OperatorIndexForKeyGroup, KeyGroupRangeForOperator,
//     DefaultMaxParallelism, CheckParallelism: KeyGroupRangeAssignment.
//   - KeyGroupRange: org.apache.flink.runtime.state.KeyGroupRange (inclusive
//     bounds; the empty range is {Start: 0, End: -1}).
//   - Repartition: RoundRobinOperatorStateRepartitioner for operator state in
//     SPLIT_DISTRIBUTE, UNION and BROADCAST mode.
//   - NewPlan: the key-group range intersection StateAssignmentOperation
//     computes when a keyed operator is restored with a new parallelism.
//
// Contract for callers:
//
//  1. Validate parallelism and max parallelism once with CheckParallelism (or
//     CheckMaxParallelism); the other functions assume valid arguments, as
//     Flink's do after its own precondition checks.
//  2. Compute a key's group with KeyGroupForKeyHash(JavaXxxHashCode(key), max).
//  3. Derive ownership from the key group, never from the key: the owner of a
//     key group under parallelism p is OperatorIndexForKeyGroup(max, p, group).
package rescale
