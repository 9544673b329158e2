package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/bench"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, IO{In: bytes.NewReader(nil), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func TestBenchRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"bench", "--only", "nope"}, `unknown group "nope" in --only`},
		{[]string{"bench", "--rounds", "-1"}, "--rounds must be 0"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
		{[]string{"bench", "--peers", "/does/not/exist.json"}, "read peers report"},
		{[]string{"bench", "--bogus"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, tt.args...)
		assert.Equal(t, exitUsage, code, "%v", tt.args)
		assert.Contains(t, errOut, tt.msg, "%v", tt.args)
	}
}

// TestBenchQuickOnTinySizes is the --quick run on tiny sizes: every group,
// the table, bench.json and the charts.
func TestBenchQuickOnTinySizes(t *testing.T) {
	benchSizes = &bench.Sizes{WordCountRecords: 2_000, WordCountKeys: 100, Parallelisms: []int{1},
		ValueStateRecords: 2_000, PebbleRecords: 500, StateSizes: []int{200, 2_000}, CheckpointRounds: 2,
		Viewers: []int{2}, Events: 50, ReplaySteps: []int64{1_000, 2_000}, ClassroomForks: 2}
	t.Cleanup(func() { benchSizes = nil })

	peers := bench.PeersReport{Schema: 1, Systems: []bench.PeerRun{
		{Name: "statelab-memory", RecordsPerSecond: 600, Verified: true},
		{Name: "go-streams", RecordsPerSecond: 100, What: "go-streams", Verified: true}},
		Ratios: []bench.PeerPair{{StateLab: "statelab-memory", Peer: "go-streams", Ratio: 6, Target: bench.AtLeast(5)}}}
	peersFile := filepath.Join(t.TempDir(), "peers.json")
	data, err := json.Marshal(peers)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(peersFile, data, 0o644))

	out := filepath.Join(t.TempDir(), "results")
	code, stdout, stderr := runCLI(t, "bench", "--quick", "--rounds", "1", "--seed", "4", "--out", out, "--peers", peersFile)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "seed 4")
	assert.Contains(t, stdout, "quick run, seed 4")
	assert.Contains(t, stdout, "ValueState get+update, memory backend")
	assert.Contains(t, stdout, "rescale 2->3 bytes read, key groups")
	assert.Contains(t, stdout, "WebSocket fan-out, 2 viewers")
	assert.Regexp(t, `statelab-memory vs go-streams\s+600 records/s`, stdout)

	var rep bench.Report
	raw, err := os.ReadFile(filepath.Join(out, "bench.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rep))
	assert.Equal(t, int64(4), rep.Seed)
	assert.True(t, rep.Quick)
	require.NotNil(t, rep.Peers)
	for _, f := range []string{"checkpoint-bytes.svg", "checkpoint-time.svg", "rescale-time.svg", "rescale-bytes.svg", "ratios.svg"} {
		assert.FileExists(t, filepath.Join(out, f))
	}

	// --from re-renders without measuring; --peers merges (replacing the
	// earlier merge, not adding to it).
	out2 := filepath.Join(t.TempDir(), "again")
	code, stdout, stderr = runCLI(t, "bench", "--from", filepath.Join(out, "bench.json"), "--peers", peersFile, "--out", out2)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, stderr, "seed 4", "nothing is measured")
	assert.Equal(t, 1, strings.Count(stdout, "statelab-memory vs go-streams"))
	assert.FileExists(t, filepath.Join(out2, "ratios.svg"))

	code, _, stderr = runCLI(t, "bench", "--from", filepath.Join(t.TempDir(), "none.json"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "read report")

	code, stdout, _ = runCLI(t, "bench", "--quick", "--rounds", "1", "--only", "rescale", "--out", "", "--json")
	require.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	for _, c := range rep.Cases {
		assert.Contains(t, []string{bench.GroupRescale, bench.GroupScaling}, c.Group)
	}
}
