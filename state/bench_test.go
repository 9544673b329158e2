package state

// Benchmarks of the state backends, each beside a bare baseline measured in
// the same run (interleaved rounds), because these 2-core machines are too
// noisy for absolute numbers to mean much. Custom metrics carry the figures:
//
//	backend-ns/op, bare-ns/op  per record, and ratio = bare/backend time
//	                           (the backend's share of the bare throughput)
//	MB/s, bare-MB/s            snapshot and restore speed
//	read/groups                restore bytes read / bytes of the key groups restored
//	upload/full                incremental bytes uploaded / full checkpoint size
//
// Run: go test -run '^$' -bench . -benchtime 1x ./state/
// STATELAB_BENCH_KEYS overrides the 1M keys of the snapshot benchmarks.

import (
	"bufio"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/statelab/statelab/rescale"
)

const benchMaxP = 128

type benchKeySet struct {
	keys  [][]byte
	strs  []string
	kgs   []int
	order []int // a seeded permutation: the record order
}

func makeKeys(n int, seed uint64) benchKeySet {
	ks := benchKeySet{keys: make([][]byte, n), strs: make([]string, n), kgs: make([]int, n)}
	for i := range n {
		s := "user-" + strconv.Itoa(i)
		ks.strs[i], ks.keys[i], ks.kgs[i] = s, []byte(s), rescale.KeyGroupForString(s, benchMaxP)
	}
	ks.order = rand.New(rand.NewPCG(seed, 0)).Perm(n)
	return ks
}

// measure runs each loop for b.N records, in ten alternating rounds so that
// noise from other processes falls on all of them alike, and returns the
// time per record of each.
func measure(b *testing.B, loops ...func(i int)) []float64 {
	const rounds = 10
	per := b.N/rounds + 1
	took := make([]time.Duration, len(loops))
	b.ResetTimer()
	for r := range rounds {
		for l, loop := range loops {
			start := time.Now()
			for i := range per {
				loop(r*per + i)
			}
			took[l] += time.Since(start)
		}
	}
	b.StopTimer()
	out := make([]float64, len(loops))
	for l := range took {
		out[l] = float64(took[l].Nanoseconds()) / float64(rounds*per)
	}
	return out
}

// interleave measures backend against bare and reports both and the ratio
// bare/backend (the backend's share of the bare loop's throughput).
func interleave(b *testing.B, backend, bare func(i int)) {
	ns := measure(b, backend, bare)
	b.ReportMetric(ns[0], "backend-ns/op")
	b.ReportMetric(ns[1], "bare-ns/op")
	b.ReportMetric(ns[1]/ns[0], "ratio")
}

// BenchmarkValueStateMemory: per record, SetCurrentKey + ValueState Value +
// Update on the memory backend, against m[key]++ on a bare map[string]int64.
// The bare loop looks keys up from their bytes, as a record delivers them
// (string(keyBytes) costs no allocation in a map index). Also reported:
// the same loop with the very string objects that were inserted, which lets
// Go's map skip comparing key bytes (a pointer-equality shortcut no engine
// gets from records off the wire): interned-ns/op and ratio-interned.
func BenchmarkValueStateMemory(b *testing.B) {
	const nkeys = 100_000
	ks := makeKeys(nkeys, 1)
	kb, err := NewKeyedBackend(KeyedBackendConfig{Kind: Memory, MaxParallelism: benchMaxP, KeyGroupRange: rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}})
	if err != nil {
		b.Fatal(err)
	}
	defer kb.Close()
	vs, _ := Value(kb, "count", Int64Codec)
	bare := make(map[string]int64)
	for i := range nkeys {
		kb.SetCurrentKey(ks.keys[i], ks.kgs[i])
		vs.Update(0)
		bare[ks.strs[i]] = 0
	}
	ns := measure(b, func(i int) {
		k := ks.order[i%nkeys]
		kb.SetCurrentKey(ks.keys[k], ks.kgs[k])
		v, _, _ := vs.Value()
		vs.Update(v + 1)
	}, func(i int) {
		bare[string(ks.keys[ks.order[i%nkeys]])]++
	}, func(i int) {
		bare[ks.strs[ks.order[i%nkeys]]]++
	})
	b.ReportMetric(ns[0], "backend-ns/op")
	b.ReportMetric(ns[1], "bare-ns/op")
	b.ReportMetric(ns[1]/ns[0], "ratio")
	b.ReportMetric(ns[2], "interned-ns/op")
	b.ReportMetric(ns[2]/ns[0], "ratio-interned")
}

func benchKeyCount() int {
	if s := os.Getenv("STATELAB_BENCH_KEYS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// bigFixture is one backend per kind holding benchKeyCount keys (a ValueState
// count per key), built once per process.
type bigFixture struct {
	dir     string
	backend map[BackendKind]KeyedBackend
	keys    benchKeySet
}

var (
	bigOnce sync.Once
	big     *bigFixture
)

func fixture(b *testing.B) *bigFixture {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "statelab-bench-")
		if err != nil {
			b.Fatal(err)
		}
		f := &bigFixture{dir: dir, backend: map[BackendKind]KeyedBackend{}, keys: makeKeys(benchKeyCount(), 2)}
		for _, kind := range []BackendKind{Memory, Pebble} {
			kb, err := NewKeyedBackend(KeyedBackendConfig{Kind: kind, Dir: filepath.Join(dir, "fixture-"+string(kind)), MaxParallelism: benchMaxP,
				KeyGroupRange: rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}, Incremental: true})
			if err != nil {
				b.Fatal(err)
			}
			vs, _ := Value(kb, "count", Int64Codec)
			for i, k := range f.keys.keys {
				kb.SetCurrentKey(k, f.keys.kgs[i])
				vs.Update(int64(i))
			}
			f.backend[kind] = kb
		}
		big = f
	})
	if big == nil {
		b.Fatal("fixture failed")
	}
	return big
}

// fullSnapshot takes a full (canonical) snapshot of either backend.
func fullSnapshot(kb KeyedBackend, id int64, s CheckpointStorage) (*KeyedStateHandle, error) {
	if h, ok, err := fullSnapshotPebble(kb, id, s); ok {
		return h, err
	}
	return kb.Snapshot(SnapshotTarget{CheckpointID: id}, s)
}

// bareWrite writes n bytes to a temporary file, syncs and renames it: the
// floor of any snapshot of that size.
func bareWrite(dir string, n int64) error {
	tmp := filepath.Join(dir, ".bare.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	chunk := make([]byte, 4096)
	for left := n; left > 0; left -= int64(len(chunk)) {
		w.Write(chunk[:min(int64(len(chunk)), left)])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	f.Close()
	return os.Rename(tmp, filepath.Join(dir, "bare"))
}

func bareRead(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(io.Discard, bufio.NewReaderSize(f, 256<<10))
}

func mbps(bytes int64, d time.Duration) float64 { return float64(bytes) / (1 << 20) / d.Seconds() }

// BenchmarkFullSnapshot: a full snapshot of 1M keys to filesystem checkpoint
// storage (key-group ordered, CRC32C per block, fsync + rename), beside
// writing the same number of bytes to one file.
func BenchmarkFullSnapshot(b *testing.B) {
	f := fixture(b)
	for _, kind := range []BackendKind{Memory, Pebble} {
		b.Run(string(kind), func(b *testing.B) {
			s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "bench", Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			var tb, tr time.Duration
			var size int64
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				h, err := fullSnapshot(f.backend[kind], int64(i+1), s)
				if err != nil {
					b.Fatal(err)
				}
				tb += time.Since(start)
				size = h.File.Size
				start = time.Now()
				if err := bareWrite(b.TempDir(), size); err != nil {
					b.Fatal(err)
				}
				tr += time.Since(start)
				s.AbortCheckpoint(int64(i + 1))
			}
			b.StopTimer()
			b.SetBytes(size)
			n := int64(b.N)
			b.ReportMetric(mbps(size*n, tb), "MB/s")
			b.ReportMetric(mbps(size*n, tr), "bare-MB/s")
			b.ReportMetric(float64(tr)/float64(tb), "ratio")
			b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
		})
	}
}

// BenchmarkFullRestore: restoring all key groups of a 1M-key full snapshot
// into a new backend, beside reading the same file; and the bytes one third
// of the key groups reads against the bytes of those groups.
func BenchmarkFullRestore(b *testing.B) {
	f := fixture(b)
	for _, kind := range []BackendKind{Memory, Pebble} {
		b.Run(string(kind), func(b *testing.B) {
			s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "bench", Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			h, err := fullSnapshot(f.backend[kind], 1, s)
			if err != nil {
				b.Fatal(err)
			}
			file := filepath.Join(s.Dir(), filepath.FromSlash(h.File.Path))
			all := rescale.KeyGroupRange{Start: 0, End: benchMaxP - 1}
			third := rescale.KeyGroupRangeForOperator(benchMaxP, 3, 1)
			var tb, tr time.Duration
			b.ResetTimer()
			for range b.N {
				cfg := KeyedBackendConfig{Kind: kind, Dir: filepath.Join(b.TempDir(), "r"), MaxParallelism: benchMaxP, KeyGroupRange: all}
				start := time.Now()
				r, err := RestoreKeyedBackend(cfg, s, []*KeyedStateHandle{h})
				if err != nil {
					b.Fatal(err)
				}
				tb += time.Since(start)
				b.StopTimer()
				r.Close()
				b.StartTimer()
				start = time.Now()
				if _, err := bareRead(file); err != nil {
					b.Fatal(err)
				}
				tr += time.Since(start)
			}
			b.StopTimer()
			n := int64(b.N)
			b.SetBytes(h.File.Size)
			b.ReportMetric(mbps(h.File.Size*n, tb), "MB/s")
			b.ReportMetric(mbps(h.File.Size*n, tr), "bare-MB/s")
			b.ReportMetric(float64(tr)/float64(tb), "ratio")

			cfg := KeyedBackendConfig{Kind: kind, Dir: filepath.Join(b.TempDir(), "third"), MaxParallelism: benchMaxP, KeyGroupRange: third}
			r, err := RestoreKeyedBackend(cfg, s, []*KeyedStateHandle{h})
			if err != nil {
				b.Fatal(err)
			}
			m, _ := r.Metrics()
			r.Close()
			groups := h.Offsets[third.End+1-all.Start] - h.Offsets[third.Start-all.Start]
			b.ReportMetric(float64(m.RestoreBytesRead)/float64(groups), "read/groups")
			b.ReportMetric(float64(m.RestoreBytesRead)/float64(h.File.Size), "read/file")
		})
	}
}

// BenchmarkIncrementalCheckpoint: after an incremental checkpoint of 1M keys
// completes, 1% of the keys change; the next incremental checkpoint's upload
// is reported as a share of a full checkpoint (the median over b.N rounds,
// each changing another 1%). "full" is the size of the first incremental
// checkpoint (all SSTs); upload/canonical compares with the full format.
func BenchmarkIncrementalCheckpoint(b *testing.B) {
	f := fixture(b)
	kb := f.backend[Pebble]
	s, err := NewCheckpointStorage(StorageConfig{Kind: FileSystemStorage, JobID: "bench", Dir: b.TempDir(), Retained: 1})
	if err != nil {
		b.Fatal(err)
	}
	complete := func(id int64, h *KeyedStateHandle) {
		if _, err := s.CompleteCheckpoint(&CheckpointMetadata{CheckpointID: id, Operators: []OperatorState{{OperatorID: "count",
			Parallelism: 1, MaxParallelism: benchMaxP, Subtasks: []SubtaskState{{Keyed: h}}}}}); err != nil {
			b.Fatal(err)
		}
		kb.NotifyCheckpointComplete(id)
	}
	base := int64(1000) // ids apart from other benchmarks' runs
	h0, err := kb.Snapshot(SnapshotTarget{CheckpointID: base}, s)
	if err != nil {
		b.Fatal(err)
	}
	complete(base, h0)
	canon, err := fullSnapshot(kb, base+1, s)
	if err != nil {
		b.Fatal(err)
	}
	s.AbortCheckpoint(base + 1)
	rng := rand.New(rand.NewPCG(3, 0))
	vs, _ := Value(kb, "count", Int64Codec)
	n := len(f.keys.keys)
	var shares, canonShares []float64
	var took time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for range n / 100 {
			k := rng.IntN(n)
			kb.SetCurrentKey(f.keys.keys[k], f.keys.kgs[k])
			vs.Update(-int64(i))
		}
		b.StartTimer()
		id := base + 2 + int64(i)
		start := time.Now()
		h, err := kb.Snapshot(SnapshotTarget{CheckpointID: id}, s)
		if err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		complete(id, h)
		shares = append(shares, float64(h.CheckpointedSize)/float64(h.StateSize))
		canonShares = append(canonShares, float64(h.CheckpointedSize)/float64(canon.File.Size))
	}
	b.StopTimer()
	slices.Sort(shares)
	slices.Sort(canonShares)
	b.ReportMetric(shares[len(shares)/2], "upload/full")
	b.ReportMetric(canonShares[len(canonShares)/2], "upload/canonical")
	b.ReportMetric(float64(h0.StateSize)/(1<<20), "full-MiB")
	b.ReportMetric(float64(took.Milliseconds())/float64(b.N), "ms/checkpoint")
}

// TestMain removes the benchmark fixture.
func TestMain(m *testing.M) {
	code := m.Run()
	if big != nil {
		for _, kb := range big.backend {
			kb.Close()
		}
		os.RemoveAll(big.dir)
	}
	os.Exit(code)
}
