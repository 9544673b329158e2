package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
	"github.com/statelab/statelab/state"
)

func TestValueStateLoopsCountLikeTheGroundTruth(t *testing.T) {
	words := Workload{Seed: 5, Records: 3_000, Keys: 200}.Words()
	truth := Count(words)
	maxP := rescale.DefaultMaxParallelism(1)

	mem, err := CountWithValueState(state.Memory, words, maxP, "")
	require.NoError(t, err)
	assert.NoError(t, DiffCounts(mem.Counts, truth), "memory backend")

	peb, err := CountWithValueState(state.Pebble, words, maxP, filepath.Join(t.TempDir(), "p"))
	require.NoError(t, err)
	assert.NoError(t, DiffCounts(peb.Counts, truth), "pebble backend")

	assert.NoError(t, DiffCounts(CountWithBareMap(words).Counts, truth), "bare map")

	bare, err := CountWithBarePebble(words, filepath.Join(t.TempDir(), "b"))
	require.NoError(t, err)
	assert.NoError(t, DiffCounts(bare.Counts, truth), "bare pebble")
}

func TestCheckpointBenchIncrementalUploadsLessThanFull(t *testing.T) {
	cb, err := NewCheckpointBench(2_000, t.TempDir())
	require.NoError(t, err)
	defer cb.Close()
	r, err := cb.Round()
	require.NoError(t, err)
	assert.Equal(t, int64(2), r.CheckpointID, "checkpoint 1 was taken when the state was filled")
	assert.Equal(t, 20, r.ChangedKeys, "1 % of 2000 keys")
	assert.Positive(t, r.FullBytes)
	// A full snapshot holds every key: at least key and 8-byte value each.
	assert.Greater(t, r.FullBytes, int64(2_000*(len("w1999")+8)))
	assert.Positive(t, r.IncrementalBytes)
	assert.LessOrEqual(t, r.IncrementalBytes, r.IncrementalStateSize)

	_, err = NewCheckpointBench(50, t.TempDir())
	assert.Error(t, err, "too few keys to change 1 %")
}

func TestRescaleBenchKeyGroupsReadOnlyWhatTheyMove(t *testing.T) {
	const keys = 3_000
	rb, err := NewRescaleBench(keys, 2, t.TempDir())
	require.NoError(t, err)
	defer rb.Close()

	// Every key is one entry: [kg 2][state id 2][uvarint len 1][name] + 8.
	var want int64
	for i := range keys {
		want += int64(2 + 2 + 1 + len(KeyName(i)) + 8)
	}
	assert.Equal(t, want, rb.TotalBytes())

	kg, err := rb.KeyGroups(3)
	require.NoError(t, err)
	assert.Equal(t, keys, kg.KeysMoved)
	assert.Equal(t, want, kg.BytesMoved)
	assert.Equal(t, want, kg.BytesRead, "each new subtask scans only its key-group range")
	assert.Positive(t, kg.BlockBytesRead)

	naive, err := rb.Naive(3)
	require.NoError(t, err)
	assert.Equal(t, keys, naive.KeysMoved)
	assert.Equal(t, want, naive.BytesMoved)
	assert.Equal(t, 3*want, naive.BytesRead, "each of 3 new subtasks scans all old state")

	// Which bytes change owner follows from the two rules, computed here
	// key by key.
	maxP := rescale.DefaultMaxParallelism(2)
	var kgChanged, naiveChanged int64
	for i := range keys {
		name := KeyName(i)
		size := int64(2 + 2 + 1 + len(name) + 8)
		h := rescale.JavaStringHashCode(name)
		g := rescale.KeyGroupForKeyHash(h, maxP)
		if rescale.OperatorIndexForKeyGroup(maxP, 2, g) != rescale.OperatorIndexForKeyGroup(maxP, 3, g) {
			kgChanged += size
		}
		if rescale.NaiveOwner(h, 2) != rescale.NaiveOwner(h, 3) {
			naiveChanged += size
		}
	}
	assert.Equal(t, kgChanged, kg.BytesChangedOwner)
	assert.Equal(t, naiveChanged, naive.BytesChangedOwner)

	_, err = rb.KeyGroups(1000)
	assert.Error(t, err, "parallelism above max parallelism")
}

func TestStateKeyRoundTrip(t *testing.T) {
	k := encodeStateKey(nil, 300, "hello")
	assert.Equal(t, []byte{0x01, 0x2c, 0x00, 0x01, 5, 'h', 'e', 'l', 'l', 'o'}, k)
	got, err := decodeStateKey(k)
	require.NoError(t, err)
	assert.Equal(t, "hello", got)
	_, err = decodeStateKey(k[:6])
	assert.Error(t, err)
}

func TestBareHubDeliversEveryEventToEveryViewer(t *testing.T) {
	events := FanOutEvents(300)
	for _, v := range []int{1, 5} {
		res, err := BareHubFanOut(context.Background(), v, events)
		require.NoError(t, err)
		assert.Equal(t, int64(v*300), res.Delivered)
		assert.Positive(t, res.Elapsed)
	}
	_, err := BareHubFanOut(context.Background(), 0, events)
	assert.Error(t, err)
}

// tiny are sizes that run every group in a second or two.
var tiny = Sizes{WordCountRecords: 2_000, WordCountKeys: 100, Parallelisms: []int{1, 2},
	ValueStateRecords: 2_000, PebbleRecords: 500, StateSizes: []int{200, 2_000}, CheckpointRounds: 2,
	Viewers: []int{1, 3}, Events: 50}

func TestRunOnTinySizes(t *testing.T) {
	rep, err := Run(context.Background(), Config{Seed: 3, Rounds: 1, Sizes: &tiny, Dir: t.TempDir(), WebFanOut: BareHubFanOut})
	require.NoError(t, err)
	assert.Equal(t, ReportSchema, rep.Schema)
	groups := map[string]int{}
	for _, c := range rep.Cases {
		groups[c.Group]++
		assert.NotEmpty(t, c.Baseline, c.Name)
		assert.Positive(t, c.BaselineValue, c.Name)
		if c.BaselineValue != 0 {
			assert.InDelta(t, c.Value/c.BaselineValue, c.Ratio, 1e-9, c.Name)
		}
	}
	assert.Equal(t, 2, groups[GroupValueState])
	assert.Equal(t, 2*2, groups[GroupCheckpoint], "bytes and time at each of 2 sizes")
	assert.Equal(t, 3*2, groups[GroupRescale], "time, key-group bytes and naive bytes at each of 2 sizes")
	assert.Equal(t, 2, groups[GroupWebSocket], "one case per viewer count")
	// One slope per plotted series: checkpoint bytes 2, time 2, rescale time 2, bytes 3.
	assert.Equal(t, 9, groups[GroupScaling])
	if EngineAvailable() {
		assert.Equal(t, 4*2, groups[GroupWordCount], "memory and pebble, each vs two baselines, at each of 2 parallelisms")
		// Each backend's target is against the bare word count of the same
		// stages, not against the floor without them.
		for _, c := range rep.Cases {
			if c.Group == GroupWordCount && c.Target != nil {
				assert.Contains(t, c.Baseline, "bare word count", c.Name)
			}
		}
		// The cases with a target (memory and Pebble, each against its own
		// floor) give the ratio per CPU second beside the wall clock's.
		for _, c := range rep.Cases {
			if c.Group != GroupWordCount || c.Target == nil || processCPU() == 0 {
				continue
			}
			assert.Positive(t, c.Details["recordsPerCPUSecond"], c.Name)
			assert.Positive(t, c.Details["baselineRecordsPerCPUSecond"], c.Name)
			assert.Positive(t, c.Details["ratioPerCPUSecond"], c.Name)
		}
	} else {
		assert.Zero(t, groups[GroupWordCount])
		assert.NotEmpty(t, rep.Notes)
	}
}

func TestRunOnlyChosenGroups(t *testing.T) {
	rep, err := Run(context.Background(), Config{Seed: 1, Rounds: 1, Sizes: &tiny, Groups: []string{GroupRescale}, Dir: t.TempDir()})
	require.NoError(t, err)
	for _, c := range rep.Cases {
		assert.Contains(t, []string{GroupRescale, GroupScaling}, c.Group)
	}
	_, err = Run(context.Background(), Config{Groups: []string{"nope"}})
	assert.ErrorContains(t, err, `unknown group "nope"`)
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Sizes: &tiny, Dir: t.TempDir()})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestBareWordCountRunsTheSameStages(t *testing.T) {
	// Lines with several words, mixed case and extra blanks: the tokenizer
	// splits on white space and lower-cases, as the engine's does.
	lines := []string{"Flink  state", "state\tkey GROUP", "", "key"}
	want := map[string]int64{"flink": 1, "state": 2, "key": 2, "group": 1}
	for _, p := range []int{1, 2, 3} {
		res, err := RunBareWordCount(lines, p, 128)
		require.NoError(t, err)
		assert.Equal(t, want, res.Counts, "p=%d", p)
		assert.Equal(t, 6, res.SinkRecords, "one running count per word")
	}
	words := Workload{Seed: 9, Records: 5_000, Keys: 300}.Words()
	res, err := RunBareWordCount(words, 2, 128)
	require.NoError(t, err)
	assert.NoError(t, DiffCounts(res.Counts, Count(words)))
	assert.Equal(t, len(words), res.SinkRecords)
}

func TestBareWordCountOnPebbleRunsTheSameStages(t *testing.T) {
	lines := []string{"Flink  state", "state\tkey GROUP", "", "key"}
	want := map[string]int64{"flink": 1, "state": 2, "key": 2, "group": 1}
	for _, p := range []int{1, 2, 3} {
		res, err := RunBareWordCountPebble(lines, p, 128, t.TempDir())
		require.NoError(t, err)
		assert.Equal(t, want, res.Counts, "p=%d", p)
		assert.Equal(t, 6, res.SinkRecords, "one running count per word")
	}
	words := Workload{Seed: 9, Records: 5_000, Keys: 300}.Words()
	res, err := RunBareWordCountPebble(words, 2, 128, t.TempDir())
	require.NoError(t, err)
	assert.NoError(t, DiffCounts(res.Counts, Count(words)))
	assert.Equal(t, len(words), res.SinkRecords)
	assert.Positive(t, res.CPU, "the CPU of the timed window is measured")
	// A directory Pebble cannot open is an error naming the bare run.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = RunBareWordCountPebble(words, 1, 128, file)
	assert.ErrorContains(t, err, "bare word count on pebble")
}

func TestBarePebbleParallelCountsLikeTheGroundTruth(t *testing.T) {
	words := Workload{Seed: 4, Records: 2_000, Keys: 100}.Words()
	for _, p := range []int{1, 3} {
		res, err := CountWithBarePebbleParallel(words, p, 128, t.TempDir())
		require.NoError(t, err)
		assert.NoError(t, DiffCounts(res.Counts, Count(words)), "p=%d", p)
	}
}

// Every new database must hold exactly the keys its subtask owns, with the
// values they were written with, under both schemes. The owners are worked
// out here from Flink's rules key by key: key group → operator index for
// key groups, Java hashCode mod parallelism (non-negative) for the naive
// scheme.
func TestRescaleBenchNewDatabasesHoldExactlyTheirKeys(t *testing.T) {
	const keys, from, to = 500, 2, 3
	rb, err := NewRescaleBench(keys, from, t.TempDir())
	require.NoError(t, err)
	defer rb.Close()
	maxP := rescale.DefaultMaxParallelism(from)

	want := map[string][]map[string]uint64{SchemeKeyGroups: make([]map[string]uint64, to), SchemeNaive: make([]map[string]uint64, to)}
	for _, s := range want {
		for i := range s {
			s[i] = map[string]uint64{}
		}
	}
	for n := range keys {
		name := KeyName(n)
		h := rescale.JavaStringHashCode(name)
		want[SchemeKeyGroups][rescale.OperatorIndexForKeyGroup(maxP, to, rescale.KeyGroupForKeyHash(h, maxP))][name] = uint64(n)
		naive := int(h % to)
		if naive < 0 {
			naive += to
		}
		want[SchemeNaive][naive][name] = uint64(n)
	}

	got := map[string][]map[string]uint64{}
	var prevKey []byte
	rb.inspect = func(scheme string, i int, db *pebble.DB) error {
		if got[scheme] == nil {
			got[scheme] = make([]map[string]uint64, to)
		}
		got[scheme][i] = map[string]uint64{}
		it, err := db.NewIter(nil)
		if err != nil {
			return err
		}
		prevKey = nil
		for it.First(); it.Valid(); it.Next() {
			assert.Positive(t, bytes.Compare(it.Key(), prevKey), "keys in order")
			prevKey = append(prevKey[:0], it.Key()...)
			name, err := decodeStateKey(it.Key())
			if err != nil {
				it.Close()
				return err
			}
			// The key carries the key group it was written under.
			assert.Equal(t, rescale.KeyGroupForString(name, maxP), int(binary.BigEndian.Uint16(it.Key())), name)
			got[scheme][i][name] = binary.BigEndian.Uint64(it.Value())
		}
		return it.Close()
	}
	_, err = rb.KeyGroups(to)
	require.NoError(t, err)
	_, err = rb.Naive(to)
	require.NoError(t, err)
	for _, s := range []string{SchemeKeyGroups, SchemeNaive} {
		for i := range to {
			assert.NotEmpty(t, want[s][i], "%s subtask %d owns keys", s, i)
			assert.Equal(t, want[s][i], got[s][i], "%s, new subtask %d", s, i)
		}
	}
}
