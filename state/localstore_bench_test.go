package state

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/statelab/statelab/rescale"
)

// BenchmarkLocalVsRemoteRestore: a subtask's full snapshot of 200k keys is
// written to filesystem checkpoint storage and, as local recovery does, a
// task-local copy; then restored from each, alternately, into a new backend.
// StateLab's checkpoint storage is a directory on the same disk (it stands
// for HDFS or S3), so the figure is what reading through the local store
// costs beside reading storage — on a real cluster the remote side adds the
// network, which is what local recovery saves.
//
//	go test -run '^$' -bench BenchmarkLocalVsRemoteRestore -benchtime 20x ./state/
func BenchmarkLocalVsRemoteRestore(b *testing.B) {
	for _, kind := range []BackendKind{Memory, Pebble} {
		b.Run(string(kind), func(b *testing.B) {
			dir := b.TempDir()
			all := rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}
			src, err := NewKeyedBackend(KeyedBackendConfig{Kind: kind, Dir: filepath.Join(dir, "src"), MaxParallelism: benchMaxP, KeyGroupRange: all})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			v, err := Value(src, "count", Int64Codec)
			if err != nil {
				b.Fatal(err)
			}
			ks := makeKeys(200_000, 1)
			for i := range ks.keys {
				if err := src.SetCurrentKey(ks.keys[i], ks.kgs[i]); err != nil {
					b.Fatal(err)
				}
				if err := v.Update(int64(i)); err != nil {
					b.Fatal(err)
				}
			}
			st, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "bench", Dir: filepath.Join(dir, "remote")})
			if err != nil {
				b.Fatal(err)
			}
			local := NewTaskLocalStore(nil, filepath.Join(dir, "tm-1"))
			h, err := fullSnapshot(src, 1, local.Duplicating(st))
			if err != nil {
				b.Fatal(err)
			}
			restore := func(from CheckpointStorage, i int, side string) time.Duration {
				cfg := KeyedBackendConfig{Kind: kind, Dir: filepath.Join(dir, "r", side+strconv.Itoa(i)), MaxParallelism: benchMaxP, KeyGroupRange: all}
				start := time.Now()
				r, err := RestoreKeyedBackend(cfg, from, []*KeyedStateHandle{h})
				if err != nil {
					b.Fatal(err)
				}
				d := time.Since(start)
				r.Close()
				return d
			}
			var stats RecoveryStats
			var tl, tr time.Duration
			b.ResetTimer()
			for i := range b.N {
				tl += restore(local.Prioritized(st, &stats), i, "local")
				tr += restore(st, i, "remote")
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(tl.Microseconds())/n/1000, "local-ms")
			b.ReportMetric(float64(tr.Microseconds())/n/1000, "remote-ms")
			b.ReportMetric(float64(tr)/float64(tl), "remote/local")
			b.ReportMetric(float64(stats.Local.Load())/n/(1<<20), "local-MiB")
			b.ReportMetric(float64(stats.Remote.Load())/n/(1<<20), "fallback-MiB")
		})
	}
}
