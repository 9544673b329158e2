package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/bench"
)

// A small workload with a hot key and a long tail: every system must count it
// exactly, or its throughput means nothing.
var small = bench.Workload{Seed: 11, Records: 3_000, Keys: 300}

func TestGoStreamsCountsLikeTheGroundTruth(t *testing.T) {
	words := small.Words()
	r := runGoStreams(words)
	assert.NoError(t, bench.DiffCounts(r.counts, bench.Count(words)))
}

func TestGokaCountsLikeTheGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("goka joins a consumer group on a fake Kafka: seconds per run")
	}
	words := small.Words()
	for _, st := range []gokaStorage{gokaMemory, gokaLevelDB} {
		t.Run(string(st), func(t *testing.T) {
			r, err := runGoka(context.Background(), words, 2, st, t.TempDir())
			require.NoError(t, err)
			assert.NoError(t, bench.DiffCounts(r.counts, bench.Count(words)))
			assert.Positive(t, r.elapsed)
			assert.GreaterOrEqual(t, r.total, r.elapsed)
		})
	}
}

func TestFNV32aMatchesGokaHasher(t *testing.T) {
	// FNV-1a 32 of "a" is 0xe40c292c (the published test vector).
	assert.Equal(t, uint32(0xe40c292c), fnv32a([]byte("a")))
	assert.Equal(t, uint32(2166136261), fnv32a(nil))
}

func TestRunPrintsJSONWithRatios(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--records", "2000", "--keys", "50", "--rounds", "2", "--only", "go-streams,bare-batched", "--json"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var rep bench.PeersReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	names := []string{}
	for _, s := range rep.Systems {
		names = append(names, s.Name)
		assert.True(t, s.Verified)
		assert.Len(t, s.Samples, 2)
		assert.Positive(t, s.RecordsPerSecond)
	}
	assert.Equal(t, []string{"bare-batched", "go-streams"}, names, "--only picks systems, in their own order")

	out.Reset()
	code = run(context.Background(), []string{"--records", "2000", "--keys", "50", "--rounds", "1", "--only", "go-streams,statelab-memory", "--json"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.Len(t, rep.Ratios, 1)
	assert.Equal(t, "statelab-memory", rep.Ratios[0].StateLab)
	assert.Equal(t, "go-streams", rep.Ratios[0].Peer)
	assert.Positive(t, rep.Ratios[0].Ratio)
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"--records", "0"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "at least one record")
	assert.Equal(t, 2, run(context.Background(), []string{"--rounds", "0"}, &out, &errOut))
}

func TestRatiosPairStateLabWithPeers(t *testing.T) {
	got := ratios([]bench.PeerRun{
		{Name: "statelab-memory", RecordsPerSecond: 600},
		{Name: "go-streams", RecordsPerSecond: 100},
		{Name: "goka-memory", RecordsPerSecond: 200},
	})
	require.Len(t, got, 2)
	assert.Equal(t, "go-streams", got[0].Peer)
	assert.InDelta(t, 6, got[0].Ratio, 1e-9)
	assert.True(t, got[0].Target.Met)
	assert.InDelta(t, 3, got[1].Ratio, 1e-9)
	assert.False(t, got[1].Target.Met, "3x is short of the 5x target")
}
