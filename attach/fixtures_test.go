package attach_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/attach/attachtest"
	"github.com/statelab/statelab/rescale"
)

// Job and vertex IDs of the fixtures in testdata.
const (
	v112Job    = "0f6d3a2b9c8e7d1f4a5b6c7d8e9f0a1b"
	v112Source = "bc764cd8ddf7a0cff126f51c16239658"
	v112Fraud  = "20ba6b65f97481d5570070de90e4e791"
	v112Sink   = "6d2677a0ecc3fd8df0b72ec675edf8f4"

	v113Job    = "7a1b2c3d4e5f60718293a4b5c6d7e8f9"
	v113Gone   = "e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9"
	v113Source = "5f1c8e6d2a9b4c7e8f0a1b2c3d4e5f60"
	v113Agg    = "9dd63673dd41ea021b896d5203f3ba7c"

	v117Job     = "3c9e1f7a5b2d4e6f8091a2b3c4d5e6f7"
	v117NoCkpt  = "8e2f4a6c1b3d5e7f9a0b1c2d3e4f5a6b"
	v117Source  = "feca28aff5a3958840bee985ee7de4d3"
	v117Window  = "2963852293169ba90d9d4e8a2cc3a3b2"
	v117OneNode = "717c7b8afebbfb7137f6f0f99beb2a94"

	v20Job    = "b7e4c1d8a5f2e9b6c3d0a7f4e1b8c5d2"
	v20Source = "0a448493b4782967b150582570326227"
	v20Window = "ea632d67b7d595e5b851708ae9ad79d6"
	v20Proc   = "6cdc5bb954874d922eaee11a8e7ca5be"
	v20Audit  = "c27dcf7b54ef6bfd6cff02ca8870b681"
)

// r is a hand-written key-group range.
func r(start, end int) rescale.KeyGroupRange { return rescale.KeyGroupRange{Start: start, End: end} }

type wantVertex struct {
	id          string
	parallelism int
	maxP        int
	keyed       bool
	ranges      []rescale.KeyGroupRange // computed by hand from Flink's formula
}

type wantJob struct {
	id, name string
	vertices []wantVertex
	edges    int
	counts   attach.CheckpointCounts
	enabled  bool
}

func snapshot(t *testing.T, dir string, opts attach.Options) (attach.Snapshot, *attachtest.Server) {
	t.Helper()
	srv := attachtest.NewServer(t, attachtest.FixtureDir(dir))
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	s, err := c.Snapshot(context.Background(), opts)
	require.NoError(t, err)
	return s, srv
}

func TestSnapshotAcrossFlinkVersions(t *testing.T) {
	// Hand-computed ranges, [ceil(i*max/p), floor(((i+1)*max-1)/p)]:
	// max 128, p 3: 127/3=42; (128+2)/3=43, 255/3=85; (256+2)/3=86, 383/3=127.
	// max 128, p 5: [0,25] [26,51] [52,76] [77,102] [103,127].
	// max 256, p 4: quarters of 64.
	p3of128 := []rescale.KeyGroupRange{r(0, 42), r(43, 85), r(86, 127)}
	tests := []struct {
		dir      string
		jobs     []wantJob
		warnings []error // sentinels, in order
	}{
		{dir: "flink-1.12", jobs: []wantJob{{id: v112Job, name: "Fraud Detection", edges: 2, enabled: true,
			counts: attach.CheckpointCounts{Restored: 0, Total: 5, InProgress: 0, Completed: 4, Failed: 1},
			vertices: []wantVertex{
				{id: v112Source, parallelism: 2},
				{id: v112Fraud, parallelism: 3, keyed: true}, // no maxParallelism before 1.13: no ranges
				{id: v112Sink, parallelism: 1},
			}}},
			warnings: []error{attach.ErrMissingField}},
		{dir: "flink-1.13", jobs: []wantJob{{id: v113Job, name: "Socket Window WordCount", edges: 1, enabled: true,
			counts: attach.CheckpointCounts{Restored: 1, Total: 12, InProgress: 1, Completed: 10, Failed: 1},
			vertices: []wantVertex{
				{id: v113Source, parallelism: 2, maxP: 128},
				{id: v113Agg, parallelism: 3, maxP: 128, keyed: true, ranges: p3of128},
			}}},
			warnings: []error{attach.ErrJobNotFound}},
		{dir: "flink-1.17", jobs: []wantJob{
			{id: v117Job, name: "Sessionize Clicks", edges: 1, enabled: true,
				counts: attach.CheckpointCounts{Restored: 0, Total: 42, InProgress: 0, Completed: 41, Failed: 1},
				vertices: []wantVertex{
					{id: v117Source, parallelism: 5, maxP: 128},
					{id: v117Window, parallelism: 5, maxP: 128, keyed: true,
						ranges: []rescale.KeyGroupRange{r(0, 25), r(26, 51), r(52, 76), r(77, 102), r(103, 127)}},
				}},
			{id: v117NoCkpt, name: "Enrich Orders", edges: 0, enabled: false,
				vertices: []wantVertex{{id: v117OneNode, parallelism: 2, maxP: 128}}},
		}},
		{dir: "flink-2.0", jobs: []wantJob{{id: v20Job, name: "Fraud Scoring", edges: 3, enabled: true,
			counts: attach.CheckpointCounts{Restored: 1, Total: 8, InProgress: 0, Completed: 7, Failed: 1},
			vertices: []wantVertex{
				{id: v20Source, parallelism: 2, maxP: 128},
				{id: v20Window, parallelism: 4, maxP: 256, keyed: true,
					ranges: []rescale.KeyGroupRange{r(0, 63), r(64, 127), r(128, 191), r(192, 255)}},
				{id: v20Proc, parallelism: 3, maxP: 128, keyed: true, ranges: p3of128},
				{id: v20Audit, parallelism: 1, maxP: 1},
			}}}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			s, srv := snapshot(t, tt.dir, attach.Options{})
			for _, req := range srv.Requests() {
				assert.Regexp(t, `^GET `, req, "attach mode only reads")
			}
			require.Len(t, s.Warnings, len(tt.warnings), "warnings: %+v", s.Warnings)
			for i, w := range tt.warnings {
				assert.ErrorIs(t, s.Warnings[i].Err, w)
			}
			require.Len(t, s.Jobs, len(tt.jobs))
			for i, wj := range tt.jobs {
				j := s.Jobs[i]
				assert.Equal(t, wj.id, j.ID)
				assert.Equal(t, wj.name, j.Name)
				assert.Len(t, j.Edges, wj.edges)
				assert.Equal(t, wj.enabled, j.Checkpoints.Enabled)
				assert.Equal(t, wj.counts, j.Checkpoints.Counts)
				require.Len(t, j.Vertices, len(wj.vertices))
				for k, wv := range wj.vertices {
					v := j.Vertices[k]
					assert.Equal(t, wv.id, v.ID)
					assert.Equal(t, wv.parallelism, v.Parallelism, v.Name)
					assert.Equal(t, wv.maxP, v.MaxParallelism, v.Name)
					assert.Equal(t, wv.keyed, v.Keyed, v.Name)
					var got []rescale.KeyGroupRange
					for s, kg := range v.KeyGroups {
						assert.Equal(t, s, kg.Subtask)
						got = append(got, kg.Range)
					}
					assert.Equal(t, wv.ranges, got, "hand-computed ranges of %s", v.Name)
					if wv.ranges != nil {
						assert.Equal(t, rescale.KeyGroupRanges(wv.maxP, wv.parallelism), got,
							"ranges of %s equal rescale.KeyGroupRanges (what `statelab ranges` prints)", v.Name)
					}
				}
			}
		})
	}
}

func TestEdgesFromPlan(t *testing.T) {
	s, _ := snapshot(t, "flink-2.0", attach.Options{})
	assert.Equal(t, []attach.Edge{
		{Source: v20Source, Target: v20Window, Num: 0, ShipStrategy: "HASH", Keyed: true},
		{Source: v20Window, Target: v20Proc, Num: 0, ShipStrategy: "HASH", Keyed: true},
		{Source: v20Window, Target: v20Audit, Num: 0, ShipStrategy: "REBALANCE", Keyed: false},
	}, s.Jobs[0].Edges)
}

func TestMissingMaxParallelism(t *testing.T) {
	t.Run("no fallback names the field, both endpoints and what to do", func(t *testing.T) {
		s, srv := snapshot(t, "flink-1.12", attach.Options{})
		require.Len(t, s.Warnings, 1)
		w := s.Warnings[0]
		var mf *attach.MissingFieldError
		require.ErrorAs(t, w.Err, &mf)
		assert.Equal(t, "maxParallelism", mf.Field)
		assert.Equal(t, []string{"GET /jobs/" + v112Job, "GET /jobs/" + v112Job + "/vertices/" + v112Fraud}, mf.Endpoints)
		assert.Equal(t, v112Job, w.JobID)
		for _, part := range []string{`vertex "Fraud Detector"`, "has no maxParallelism", "1.13", "--max-parallelism N", "--max-parallelism default"} {
			assert.Contains(t, w.Message, part)
		}
		// The vertex endpoint is asked only for the keyed vertex.
		assert.Contains(t, srv.Requests(), "GET /jobs/"+v112Job+"/vertices/"+v112Fraud)
		assert.NotContains(t, srv.Requests(), "GET /jobs/"+v112Job+"/vertices/"+v112Source)
		assert.NotContains(t, srv.Requests(), "GET /jobs/"+v112Job+"/vertices/"+v112Sink)
		fraud := s.Jobs[0].Vertices[1]
		assert.True(t, fraud.Keyed)
		assert.Zero(t, fraud.MaxParallelism)
		assert.Nil(t, fraud.KeyGroups)
		_, err := fraud.RescalePlan(4)
		assert.ErrorIs(t, err, attach.ErrNotKeyed)
	})
	t.Run("a number from the user", func(t *testing.T) {
		s, _ := snapshot(t, "flink-1.12", attach.Options{MaxParallelism: attach.MaxParallelismFallback{Value: 256}})
		assert.Empty(t, s.Warnings)
		fraud := s.Jobs[0].Vertices[1]
		assert.Equal(t, 256, fraud.MaxParallelism)
		assert.Equal(t, attach.SourceFlag, fraud.MaxParallelismSource)
		// max 256, p 3: 255/3=85; (256+2)/3=86, 511/3=170; (512+2)/3=171, 767/3=255.
		assert.Equal(t, []attach.SubtaskKeyGroups{{0, r(0, 85)}, {1, r(86, 170)}, {2, r(171, 255)}}, fraud.KeyGroups)
	})
	t.Run("Flink's default, marked as assumed", func(t *testing.T) {
		s, _ := snapshot(t, "flink-1.12", attach.Options{MaxParallelism: attach.MaxParallelismFallback{FlinkDefault: true}})
		assert.Empty(t, s.Warnings)
		fraud := s.Jobs[0].Vertices[1]
		// p 3: roundUpToPowerOfTwo(3 + 1) = 4, raised to the lower bound 128.
		assert.Equal(t, 128, fraud.MaxParallelism)
		assert.Equal(t, attach.SourceFlinkDefault, fraud.MaxParallelismSource)
		assert.Equal(t, []attach.SubtaskKeyGroups{{0, r(0, 42)}, {1, r(43, 85)}, {2, r(86, 127)}}, fraud.KeyGroups)
	})
	t.Run("read from the vertex endpoint when only the job details lack it", func(t *testing.T) {
		srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.12"))
		srv.Override("/jobs/"+v112Job+"/vertices/"+v112Fraud, attachtest.Response{Status: 200, ContentType: "application/json",
			Body: `{"id":"` + v112Fraud + `","name":"Fraud Detector","parallelism":3,"maxParallelism":512,"subtasks":[]}`})
		c, err := attach.NewClient(srv.URL)
		require.NoError(t, err)
		s, err := c.Snapshot(context.Background(), attach.Options{MaxParallelism: attach.MaxParallelismFallback{Value: 256}})
		require.NoError(t, err)
		fraud := s.Jobs[0].Vertices[1]
		assert.Equal(t, 512, fraud.MaxParallelism, "Flink's own answer wins over the fallback")
		assert.Equal(t, attach.SourceVertexDetails, fraud.MaxParallelismSource)
		// max 512, p 3: 511/3=170; (512+2)/3=171, 1023/3=341; (1024+2)/3=342, 1535/3=511.
		assert.Equal(t, []attach.SubtaskKeyGroups{{0, r(0, 170)}, {1, r(171, 341)}, {2, r(342, 511)}}, fraud.KeyGroups)
	})
}

func TestParseMaxParallelismFallback(t *testing.T) {
	tests := []struct {
		in   string
		want attach.MaxParallelismFallback
		err  bool
	}{
		{in: "", want: attach.MaxParallelismFallback{}},
		{in: "default", want: attach.MaxParallelismFallback{FlinkDefault: true}},
		{in: "256", want: attach.MaxParallelismFallback{Value: 256}},
		{in: "32768", want: attach.MaxParallelismFallback{Value: 32768}},
		{in: "32769", err: true},
		{in: "0", err: true},
		{in: "lots", err: true},
	}
	for _, tt := range tests {
		got, err := attach.ParseMaxParallelismFallback(tt.in)
		if tt.err {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

func TestVanishedJobIsSkippedAndTheRestKept(t *testing.T) {
	s, _ := snapshot(t, "flink-1.13", attach.Options{})
	require.Len(t, s.Jobs, 1)
	assert.Equal(t, v113Job, s.Jobs[0].ID)
	require.Len(t, s.Warnings, 1)
	w := s.Warnings[0]
	assert.Equal(t, v113Gone, w.JobID)
	var nf *attach.JobNotFoundError
	require.ErrorAs(t, w.Err, &nf)
	assert.Equal(t, "GET /jobs/"+v113Gone, nf.Endpoint)
	assert.Equal(t, "Job "+v113Gone+" not found", nf.Message)
	assert.Contains(t, w.Message, "vanished")
}

func TestJobVanishingAfterItsDetails(t *testing.T) {
	// Gone by the time its checkpoints are read: same treatment.
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.17"))
	srv.Override("/jobs/"+v117Job+"/checkpoints", attachtest.Response{Status: 404, ContentType: "application/json",
		Body: `{"errors":["Job ` + v117Job + ` not found"]}`})
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	s, err := c.Snapshot(context.Background(), attach.Options{})
	require.NoError(t, err)
	require.Len(t, s.Jobs, 1)
	assert.Equal(t, v117NoCkpt, s.Jobs[0].ID)
	require.Len(t, s.Warnings, 1)
	assert.ErrorIs(t, s.Warnings[0].Err, attach.ErrJobNotFound)
}

func TestOnlyOneJob(t *testing.T) {
	s, srv := snapshot(t, "flink-1.17", attach.Options{JobID: v117NoCkpt})
	require.Len(t, s.Jobs, 1)
	assert.Equal(t, v117NoCkpt, s.Jobs[0].ID)
	for _, req := range srv.Requests() {
		assert.NotContains(t, req, v117Job, "the other job is not read")
	}

	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	_, err = c.Snapshot(context.Background(), attach.Options{JobID: "00000000000000000000000000000000"})
	var nf *attach.JobNotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, []string{v117Job, v117NoCkpt}, nf.Listed)
	assert.Contains(t, err.Error(), "is not listed by GET /jobs")
}

func TestCheckpointHistoryAcrossVersions(t *testing.T) {
	t.Run("1.13: one size, in progress, restore, first line of a failure", func(t *testing.T) {
		s, _ := snapshot(t, "flink-1.13", attach.Options{})
		cp := s.Jobs[0].Checkpoints
		var ids []int64
		for _, c := range cp.Timeline() {
			ids = append(ids, c.ID)
		}
		assert.Equal(t, []int64{10, 11, 12}, ids, "oldest first")
		assert.Equal(t, int64(12), cp.History[0].ID, "history keeps Flink's newest-first order")
		c11 := cp.History[1]
		assert.Equal(t, attach.StatusCompleted, c11.Status)
		assert.Equal(t, int64(9216), c11.CheckpointedSize, "before 1.15 state_size is the checkpointed size")
		assert.Equal(t, int64(-1), c11.FullSize)
		assert.Equal(t, int64(120), c11.EndToEndDuration)
		assert.Equal(t, "Checkpoint was declined (task is closing)", cp.History[2].FailureMessage)
		assert.Equal(t, attach.StatusInProgress, cp.History[0].Status)
		require.NotNil(t, cp.LatestRestored)
		assert.Equal(t, int64(7), cp.LatestRestored.ID)
		assert.Nil(t, cp.LatestSavepoint)
	})
	t.Run("1.17: checkpointed and full size, unaligned", func(t *testing.T) {
		s, _ := snapshot(t, "flink-1.17", attach.Options{})
		c42 := s.Jobs[0].Checkpoints.History[0]
		assert.Equal(t, int64(42), c42.ID)
		assert.Equal(t, int64(3145728), c42.CheckpointedSize)
		assert.Equal(t, int64(62914560), c42.FullSize)
		assert.Equal(t, "UNALIGNED_CHECKPOINT", c42.Type)
		assert.Equal(t, int64(65536), c42.ProcessedData)
		assert.Equal(t, int64(32768), c42.PersistedData)
		assert.Equal(t, 10, c42.NumAcknowledged)
	})
	t.Run("1.17: checkpointing disabled is not an error", func(t *testing.T) {
		s, _ := snapshot(t, "flink-1.17", attach.Options{})
		assert.False(t, s.Jobs[1].Checkpoints.Enabled)
		assert.Empty(t, s.Jobs[1].Checkpoints.History)
		assert.Empty(t, s.Warnings)
	})
	t.Run("2.0: savepoint and restore from a savepoint", func(t *testing.T) {
		s, _ := snapshot(t, "flink-2.0", attach.Options{})
		cp := s.Jobs[0].Checkpoints
		require.NotNil(t, cp.LatestSavepoint)
		assert.True(t, cp.LatestSavepoint.Savepoint)
		assert.Equal(t, "SAVEPOINT", cp.LatestSavepoint.Type)
		require.NotNil(t, cp.LatestRestored)
		assert.True(t, cp.LatestRestored.Savepoint)
		require.NotNil(t, cp.LatestFailed)
		assert.Equal(t, "Checkpoint expired before completing.", cp.LatestFailed.FailureMessage)
	})
}

func TestDocumentShape(t *testing.T) {
	s, _ := snapshot(t, "flink-2.0", attach.Options{})
	got, err := json.Marshal(s.Document())
	require.NoError(t, err)
	want := `{"jobs":[{"id":"` + v20Job + `","name":"Fraud Scoring","vertices":[
		{"id":"` + v20Source + `","name":"Source: Payments","parallelism":2,"maxParallelism":128,"keyed":false},
		{"id":"` + v20Window + `","name":"TumblingEventTimeWindows -> Timestamps/Watermarks","parallelism":4,"maxParallelism":256,"keyed":true,
		 "keyGroups":[{"subtask":0,"start":0,"end":63},{"subtask":1,"start":64,"end":127},{"subtask":2,"start":128,"end":191},{"subtask":3,"start":192,"end":255}]},
		{"id":"` + v20Proc + `","name":"KeyedProcess -> Sink: Alerts","parallelism":3,"maxParallelism":128,"keyed":true,
		 "keyGroups":[{"subtask":0,"start":0,"end":42},{"subtask":1,"start":43,"end":85},{"subtask":2,"start":86,"end":127}]},
		{"id":"` + v20Audit + `","name":"Sink: Audit","parallelism":1,"maxParallelism":1,"keyed":false}],
		"checkpoints":{"completed":7,"failed":1,"inProgress":0,"restored":1}}]}`
	assert.JSONEq(t, want, string(got))
}

func TestDocumentOfNoJobsIsAnEmptyList(t *testing.T) {
	got, err := json.Marshal(attach.Snapshot{}.Document())
	require.NoError(t, err)
	assert.JSONEq(t, `{"jobs":[]}`, string(got))
}

func TestSnapshotCancelled(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.17"))
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Snapshot(ctx, attach.Options{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, errors.Is(err, attach.ErrUnreachable), "a cancelled read is not the server's fault")
}
