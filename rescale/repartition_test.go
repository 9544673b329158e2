package rescale

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func split(name string, els ...string) NamedState[string] {
	return NamedState[string]{Name: name, Mode: SplitDistribute, Elements: els}
}

// The article's source: 5 Kafka partitions' offsets on one subtask, rescaled to two.
func TestArticleSourceOneToTwo(t *testing.T) {
	old := []SubtaskState[string]{{split("offsets", "p0", "p1", "p2", "p3", "p4")}}
	got, err := Repartition(old, 2)
	require.NoError(t, err)
	assert.Equal(t, []map[string][]string{
		{"offsets": {"p0", "p1", "p2"}},
		{"offsets": {"p3", "p4"}},
	}, got)
}

func TestRepartitionWorkedExamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		old  []SubtaskState[string]
		newP int
		want []map[string][]string
	}{{
		name: "2 -> 3 concatenates in subtask order and cuts contiguous chunks, remainder first",
		old:  []SubtaskState[string]{{split("s", "a", "b", "c")}, {split("s", "d")}},
		newP: 3,
		want: []map[string][]string{{"s": {"a", "b"}}, {"s": {"c"}}, {"s": {"d"}}},
	}, {
		name: "fewer elements than subtasks leaves the last ones empty",
		old:  []SubtaskState[string]{{split("s", "a")}, {split("s", "b")}},
		newP: 4,
		want: []map[string][]string{{"s": {"a"}}, {"s": {"b"}}, {"s": {}}, {"s": {}}},
	}, {
		name: "unchanged parallelism keeps split state in place",
		old:  []SubtaskState[string]{{split("s", "a", "b", "c")}, {split("s")}},
		newP: 2,
		want: []map[string][]string{{"s": {"a", "b", "c"}}, {"s": {}}},
	}, {
		name: "union gives everyone everything, also at unchanged parallelism",
		old: []SubtaskState[string]{
			{{Name: "u", Mode: Union, Elements: []string{"a"}}},
			{{Name: "u", Mode: Union, Elements: []string{"b", "c"}}}},
		newP: 2,
		want: []map[string][]string{{"u": {"a", "b", "c"}}, {"u": {"a", "b", "c"}}},
	}, {
		name: "broadcast: new subtask i takes old copy i mod old parallelism",
		old: []SubtaskState[string]{
			{{Name: "rules", Mode: Broadcast, Elements: []string{"r=0"}}},
			{{Name: "rules", Mode: Broadcast, Elements: []string{"r=1"}}}},
		newP: 3,
		want: []map[string][]string{{"rules": {"r=0"}}, {"rules": {"r=1"}}, {"rules": {"r=0"}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Repartition(tc.old, tc.newP)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Two split states "Aa" and "BB" share a Java hash (2112), so they share a
// HashMap bucket. Flink groups names with HashMap.computeIfAbsent, which puts
// a new key at the head of its bucket, so BB (seen second) is visited first.
// With 3 elements each onto 2 subtasks: BB starts at subtask 0 (2, then 1);
// Aa starts at the first subtask that got the shorter chunk, subtask 1.
func TestSplitRotationAcrossNames(t *testing.T) {
	old := []SubtaskState[string]{{split("Aa", "a0", "a1", "a2"), split("BB", "b0", "b1", "b2")}}
	got, err := Repartition(old, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b0", "b1"}, got[0]["BB"])
	assert.Equal(t, []string{"b2"}, got[1]["BB"])
	assert.Equal(t, []string{"a0", "a1"}, got[1]["Aa"])
	assert.Equal(t, []string{"a2"}, got[0]["Aa"])
}

func TestRepartitionErrors(t *testing.T) {
	_, err := Repartition[string](nil, 2)
	require.ErrorIs(t, err, ErrNoOldSubtasks)
	_, err = Repartition([]SubtaskState[string]{{split("s")}}, 0)
	require.ErrorIs(t, err, ErrParallelism)
	_, err = Repartition([]SubtaskState[string]{{split("s")}, {{Name: "s", Mode: Union}}}, 3)
	require.ErrorIs(t, err, ErrModeConflict)
	_, err = Repartition([]SubtaskState[string]{{{Name: "s", Mode: "ROUND_ROBIN"}}}, 3)
	require.ErrorIs(t, err, ErrMode)
}

// Cases written on a JVM with real java.util.HashMaps by
// testdata/flinkgen/FlinkVectors.java, which transcribes
// RoundRobinOperatorStateRepartitioner.
func TestFlinkRepartitionVectors(t *testing.T) {
	f, err := os.Open("testdata/flink_repartition.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	n := 0
	for sc.Scan() {
		var tc struct {
			Input struct {
				NewParallelism int               `json:"newParallelism"`
				Subtasks       []json.RawMessage `json:"subtasks"`
			} `json:"input"`
			Expected struct {
				Subtasks []map[string][]string `json:"subtasks"`
			} `json:"expected"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &tc))
		old := make([]SubtaskState[string], len(tc.Input.Subtasks))
		for i, raw := range tc.Input.Subtasks {
			old[i] = decodeOrdered(t, raw)
		}
		got, err := Repartition(old, tc.Input.NewParallelism)
		require.NoError(t, err, "case %d", n)
		require.Equal(t, tc.Expected.Subtasks, got, "case %d: %s", n, sc.Text())
		n++
	}
	require.NoError(t, sc.Err())
	require.GreaterOrEqual(t, n, 400)
}

// decodeOrdered reads {"name":{"mode":…,"elements":[…]},…} keeping key order.
func decodeOrdered(t *testing.T, raw []byte) SubtaskState[string] {
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, err := dec.Token()
	require.NoError(t, err)
	var out SubtaskState[string]
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		var s struct {
			Mode     Mode     `json:"mode"`
			Elements []string `json:"elements"`
		}
		require.NoError(t, dec.Decode(&s))
		out = append(out, NamedState[string]{Name: tok.(string), Mode: s.Mode, Elements: s.Elements})
	}
	return out
}

func TestJavaHashMapOrder(t *testing.T) {
	// Java: new HashMap<>() with "b","a" iterates a, b (bucket 1 before 2 in 16).
	assert.Equal(t, []string{"a", "b"}, javaHashMapOrder([]string{"b", "a"}, 0))
	// Colliding keys keep insertion order.
	assert.Equal(t, []string{"BB", "Aa"}, javaHashMapOrder([]string{"BB", "Aa"}, 0))
	assert.Equal(t, 1, tableSizeFor(0))
	assert.Equal(t, 4, tableSizeFor(3))
}

func TestNaiveScheme(t *testing.T) {
	assert.Equal(t, 1, NaiveOwner(-5, 3)) // floorMod(-5, 3)
	assert.InDelta(t, 2.0/3, NaiveMovedShare(2, 3), 1e-12)
	assert.InDelta(t, 0.5, NaiveMovedShare(1, 2), 1e-12)
	assert.Zero(t, NaiveMovedShare(4, 4))
	hashes := make([]int32, 3000)
	for i := range hashes {
		hashes[i] = JavaStringHashCode("k" + string(rune('a'+i%26)) + string(rune('A'+i/26%26)) + string(rune('0'+i/676)))
	}
	s := CompareMoves(hashes, 128, 2, 3)
	assert.Equal(t, 3000, s.Keys)
	assert.Less(t, s.MovedByKeyGroups, s.MovedByNaive, "key groups move fewer keys than hash %% parallelism for 2 -> 3")
}
