package attach_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/rescale"
)

func TestLocateKeyMatchesTheJVM(t *testing.T) {
	// Rows of rescale/testdata/flink_keygroups.txt, written on a JVM with
	// java.lang hashCode and Flink's KeyGroupRangeAssignment formulas.
	tests := []struct {
		typ                    attach.KeyType
		key                    string
		maxP, p                int
		hash                   int32
		keyGroup, operatorIndx int
	}{
		{attach.KeyString, "2go", 128, 69, 51354, 63, 33},
		{attach.KeyString, "Flink", 3316, 1576, 67968320, 2127, 1010},
		{attach.KeyInt, "1619739610", 128, 52, 1619739610, 7, 2},
		{attach.KeyLong, "3765492817390041603", 128, 41, 1821429191, 56, 17},
		{attach.KeyLong, "4294967296", 7762, 381, 1, 2738, 134},
		{attach.KeyLong, "-1", 5849, 1745, 0, 3856, 1150},
	}
	for _, tt := range tests {
		got, err := attach.LocateKey(tt.typ, tt.key, tt.maxP, tt.p)
		require.NoError(t, err)
		assert.Equal(t, attach.KeyOwner{Key: tt.key, Type: tt.typ, HashCode: tt.hash, KeyGroup: tt.keyGroup, Subtask: tt.operatorIndx}, got)
	}
}

func TestVertexLocateKey(t *testing.T) {
	s, _ := snapshot(t, "flink-2.0", attach.Options{})
	job := s.Jobs[0]
	proc, ok := job.Vertex(v20Proc)
	require.True(t, ok)
	// Long.hashCode(2^32) = (int)(2^32 ^ 1) = 1 = Integer.hashCode(1), and
	// Long.hashCode(-1) = (int)(0xFFFFFFFF_FFFFFFFF ^ 0x00000000_FFFFFFFF) = 0:
	// equal hash codes land in the same key group.
	for _, pair := range [][2]string{{"4294967296", "1"}, {"-1", "0"}} {
		l, err := proc.LocateKey(attach.KeyLong, pair[0])
		require.NoError(t, err)
		i, err := proc.LocateKey(attach.KeyInt, pair[1])
		require.NoError(t, err)
		assert.Equal(t, i.HashCode, l.HashCode)
		assert.Equal(t, i.KeyGroup, l.KeyGroup)
	}
	for _, key := range []string{"alice", "bob", "用户-42", ""} {
		o, err := proc.LocateKey(attach.KeyString, key)
		require.NoError(t, err)
		assert.True(t, proc.KeyGroups[o.Subtask].Range.Contains(o.KeyGroup), "key %q: subtask %d owns group %d", key, o.Subtask, o.KeyGroup)
	}

	src, _ := job.Vertex(v20Source)
	_, err := src.LocateKey(attach.KeyString, "alice")
	assert.ErrorIs(t, err, attach.ErrNotKeyed)
	assert.Contains(t, err.Error(), "is not keyed")

	for _, bad := range []struct {
		typ attach.KeyType
		key string
	}{{attach.KeyInt, "2147483648"}, {attach.KeyInt, "1.5"}, {attach.KeyLong, "abc"}, {"double", "1"}} {
		_, err := proc.LocateKey(bad.typ, bad.key)
		assert.Error(t, err, "%s %q", bad.typ, bad.key)
	}
}

func TestParseKeyType(t *testing.T) {
	for in, want := range map[string]attach.KeyType{
		"string": attach.KeyString, "java.lang.String": attach.KeyString,
		"int": attach.KeyInt, "Integer": attach.KeyInt, "long": attach.KeyLong, "LONG": attach.KeyLong,
	} {
		got, err := attach.ParseKeyType(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := attach.ParseKeyType("double")
	assert.Error(t, err)
}

func TestRescalePlanner(t *testing.T) {
	s, _ := snapshot(t, "flink-1.13", attach.Options{})
	agg, ok := s.Jobs[0].Vertex(v113Agg)
	require.True(t, ok)

	// max 128, 3 -> 4: old [0,42] [43,85] [86,127]; new [0,31] [32,63] [64,95] [96,127].
	// Moved: 32..42 (0->1), 64..85 (1->2), 96..127 (2->3): 11 + 22 + 32 = 65 groups.
	plan, err := agg.RescalePlan(4)
	require.NoError(t, err)
	assert.Len(t, plan.Moved, 65)
	assert.Equal(t, []rescale.KeyGroupRange{r(32, 42), r(64, 85), r(96, 127)}, attach.Runs(plan.Moved))
	assert.Equal(t, []rescale.Read{{OldSubtask: 0, Range: r(32, 42)}, {OldSubtask: 1, Range: r(43, 63)}}, plan.Subtasks[1].Reads)

	same, err := agg.RescalePlan(3)
	require.NoError(t, err)
	assert.Empty(t, same.Moved)

	_, err = agg.RescalePlan(129)
	assert.ErrorIs(t, err, rescale.ErrAboveMax)

	src, _ := s.Jobs[0].Vertex(v113Source)
	_, err = src.RescalePlan(4)
	assert.ErrorIs(t, err, attach.ErrNotKeyed)
}

func TestRuns(t *testing.T) {
	tests := []struct {
		in   []int
		want []rescale.KeyGroupRange
	}{
		{in: nil, want: nil},
		{in: []int{0}, want: []rescale.KeyGroupRange{r(0, 0)}},
		{in: []int{3, 4, 5, 9}, want: []rescale.KeyGroupRange{r(3, 5), r(9, 9)}},
		{in: []int{1, 3, 5}, want: []rescale.KeyGroupRange{r(1, 1), r(3, 3), r(5, 5)}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, attach.Runs(tt.in), "%v", tt.in)
	}
}
