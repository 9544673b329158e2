package state

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

func opBackend(t *testing.T, offsets []string, rules map[string]string) *OperatorBackend {
	t.Helper()
	o := NewOperatorBackend()
	l, err := OperatorList(o, "offsets", StringCodec)
	require.NoError(t, err)
	require.NoError(t, l.AddAll(offsets))
	u, err := UnionList(o, "watermarks", StringCodec)
	require.NoError(t, err)
	require.NoError(t, u.AddAll(offsets))
	bc, err := Broadcast(o, "rules", StringCodec, StringCodec)
	require.NoError(t, err)
	for k, v := range rules {
		require.NoError(t, bc.Put(k, v))
	}
	return o
}

func TestOperatorStateRescaleTwoToThree(t *testing.T) {
	old := []*OperatorSnapshot{
		opBackend(t, []string{"a", "b", "c"}, map[string]string{"r1": "x", "r2": "y"}).Snapshot(),
		opBackend(t, []string{"d", "e"}, map[string]string{"r1": "x", "r2": "y"}).Snapshot(),
	}
	// The snapshot survives JSON, as it does inside _metadata.
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	var back []*OperatorSnapshot
	require.NoError(t, json.Unmarshal(raw, &back))

	news, err := RestoreOperatorBackends(back, 3)
	require.NoError(t, err)
	require.Len(t, news, 3)
	// Split-distribute by hand (Flink's round robin): 5 elements over 3
	// subtasks -> chunks of 2, 2, 1 in old-subtask order.
	wantSplit := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}
	for i, o := range news {
		l, err := OperatorList(o, "offsets", StringCodec)
		require.NoError(t, err)
		got, _ := l.Get()
		assert.Equal(t, wantSplit[i], got, "subtask %d", i)
		u, _ := UnionList(o, "watermarks", StringCodec)
		got, _ = u.Get()
		assert.Equal(t, []string{"a", "b", "c", "d", "e"}, got, "union: everything everywhere")
		bc, _ := Broadcast(o, "rules", StringCodec, StringCodec)
		var seen []string
		require.NoError(t, bc.Iterate(func(k, v string) bool { seen = append(seen, k+"="+v); return true }))
		assert.Equal(t, []string{"r1=x", "r2=y"}, seen)
	}
	ents := news[2].Entries()
	assert.Equal(t, OperatorEntry{State: "offsets", Mode: rescale.SplitDistribute, Index: 0, Value: "e"}, ents[0])
}

func TestOperatorStateSameParallelismKeepsOwn(t *testing.T) {
	old := []*OperatorSnapshot{opBackend(t, []string{"a"}, nil).Snapshot(), nil}
	news, err := RestoreOperatorBackends(old, 2)
	require.NoError(t, err)
	l0, _ := OperatorList(news[0], "offsets", StringCodec)
	l1, _ := OperatorList(news[1], "offsets", StringCodec)
	g0, _ := l0.Get()
	g1, _ := l1.Get()
	assert.Equal(t, []string{"a"}, g0)
	assert.Empty(t, g1)
}

func TestOperatorStateModeConflictAndMutation(t *testing.T) {
	o := NewOperatorBackend()
	l, err := OperatorList(o, "s", Int64Codec)
	require.NoError(t, err)
	_, err = UnionList(o, "s", Int64Codec)
	assert.ErrorIs(t, err, ErrStateKind)
	require.NoError(t, l.Update([]int64{1, 2}))
	snap := o.Snapshot()
	require.NoError(t, l.Clear())
	assert.Len(t, snap.States[0].Elements, 2, "a snapshot is a copy")
	bc, _ := Broadcast(o, "b", StringCodec, Int64Codec)
	require.NoError(t, bc.Put("k", 1))
	ok, _ := bc.Contains("k")
	assert.True(t, ok)
	require.NoError(t, bc.Remove("k"))
	empty, _ := bc.IsEmpty()
	assert.True(t, empty)
}
