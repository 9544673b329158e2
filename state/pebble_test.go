//go:build !js

package state

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/rescale"
)

func TestEscapedKeysRoundTripAndKeepOrder(t *testing.T) {
	keys := [][]byte{{}, {0}, {0, 0}, {0, 1}, {0, 0xFF}, {1}, []byte("a"), {'a', 0}, []byte("ab"), {0xFF}}
	var prev []byte
	for _, k := range keys {
		e := appendEscaped(nil, k)
		got, rest, ok := splitEscaped(append(e, 'u'))
		require.True(t, ok, "%x", k)
		assert.Equal(t, k, append([]byte{}, got...), "%x", k)
		assert.Equal(t, []byte("u"), rest)
		if prev != nil {
			assert.Negative(t, bytes.Compare(prev, e), "escaping keeps byte order: %x", k)
		}
		prev = e
	}
	_, _, ok := splitEscaped([]byte{'a', 0, 7})
	assert.False(t, ok)
}

type recordingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// TestPebbleLogsGoToTheCallersLogger: Pebble's default logger writes through
// the standard log package; nothing may reach it.
func TestPebbleLogsGoToTheCallersLogger(t *testing.T) {
	var std bytes.Buffer
	log.SetOutput(&std)
	defer log.SetOutput(os.Stderr)
	rec := &recordingHandler{}
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Logger = slog.New(rec)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	fill(t, []KeyedBackend{b}, 100)
	_, err = b.Snapshot(SnapshotTarget{CheckpointID: 1}, newTestStorage(t, JobManagerStorage))
	require.NoError(t, err)
	require.NoError(t, b.Close())
	quiet, err := NewKeyedBackend(testConfig(t, Pebble, 128, fullRange)) // default: discard
	require.NoError(t, err)
	require.NoError(t, quiet.Close())
	assert.Empty(t, std.String(), "nothing on the standard logger")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.NotEmpty(t, rec.msgs, "Pebble's lines (flush, checkpoint) reach the caller's logger")
}

func TestPebbleRefusesUsedDirectory(t *testing.T) {
	cfg := testConfig(t, Pebble, 128, fullRange)
	require.NoError(t, os.MkdirAll(cfg.Dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.Dir, "x"), nil, 0o644))
	_, err := NewKeyedBackend(cfg)
	assert.ErrorContains(t, err, "not empty")
	_, err = NewKeyedBackend(KeyedBackendConfig{Kind: Pebble, MaxParallelism: 128, KeyGroupRange: fullRange})
	assert.ErrorContains(t, err, "directory")
}

// TestPebbleSurvivesLostLocalDirectory: a TaskManager crash wipes the local
// disk under a live backend; the engine then closes it. Nothing may panic.
func TestPebbleSurvivesLostLocalDirectory(t *testing.T) {
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	fill(t, []KeyedBackend{b}, 2000)
	require.NoError(t, RemoveLocalDir(cfg.Dir))
	fill(t, []KeyedBackend{b}, 200) // into the memtable: still works
	_, err = b.Snapshot(SnapshotTarget{CheckpointID: 1}, newTestStorage(t, JobManagerStorage))
	assert.ErrorContains(t, err, "local directory", "a checkpoint cannot be taken without the directory")
	// More than one memtable, so Pebble tries (and fails) to flush in the
	// background. (Beyond two, writes would stall: the engine closes the
	// backend when its TaskManager crashes, before more records arrive.)
	v, _ := Value(b, "blob", BytesCodec)
	big := bytes.Repeat([]byte{1}, 1024)
	for i := range pebbleMemTableBytes * 3 / 2 / len(big) {
		setKey(t, b, fmt.Sprint(i))
		require.NoError(t, v.Update(big))
	}
	assert.NoError(t, b.Close())
	assert.ErrorIs(t, b.SetCurrentKey([]byte("k"), 1), ErrClosed)
	assert.Error(t, RemoveLocalDir("/"))
	assert.Error(t, RemoveLocalDir(""))
}

func TestPebbleIncrementalUploadsOnlyNewFiles(t *testing.T) {
	s := newTestStorage(t, FileSystemStorage)
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	defer b.Close()
	complete := func(id int64, h *KeyedStateHandle) {
		_, err := s.CompleteCheckpoint(&CheckpointMetadata{CheckpointID: id, Operators: []OperatorState{
			{OperatorID: "count", Parallelism: 1, MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}})
		require.NoError(t, err)
		b.NotifyCheckpointComplete(id)
	}
	fill(t, []KeyedBackend{b}, 5000)
	h1, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
	require.NoError(t, err)
	assert.Equal(t, FormatIncremental, h1.Format)
	assert.Equal(t, h1.StateSize, h1.CheckpointedSize, "the first checkpoint uploads everything")
	require.NotEmpty(t, h1.SharedFiles)
	complete(1, h1)

	changeKeys(t, b, 0, 50, -1)
	h2, err := b.Snapshot(SnapshotTarget{CheckpointID: 2}, s)
	require.NoError(t, err)
	reused := 0
	for _, f := range h2.SharedFiles {
		for _, g := range h1.SharedFiles {
			if f.File == g.File {
				reused++
			}
		}
	}
	assert.Equal(t, len(h1.SharedFiles), reused, "every SST of checkpoint 1 is referenced again")
	assert.Less(t, h2.CheckpointedSize, h2.StateSize/2)
	m, _ := b.Metrics()
	assert.True(t, m.LastCheckpointIncremental)
	assert.Equal(t, h2.CheckpointedSize, m.LastCheckpointUploaded)

	// Checkpoint 2 is aborted: checkpoint 3 may not build on its new files.
	require.NoError(t, s.AbortCheckpoint(2))
	b.NotifyCheckpointAborted(2)
	changeKeys(t, b, 50, 60, -2)
	h3, err := b.Snapshot(SnapshotTarget{CheckpointID: 3}, s)
	require.NoError(t, err)
	complete(3, h3)
	meta, err := s.Load(3)
	require.NoError(t, err)
	require.NoError(t, s.Verify(meta), "no reference to a file of the aborted checkpoint")

	// Restored, every change is there.
	r, err := RestoreKeyedBackend(testConfig(t, Pebble, 128, fullRange), s, []*KeyedStateHandle{h3})
	require.NoError(t, err)
	defer r.Close()
	cnt, _ := Value(r, "count", Int64Codec)
	for i, want := range map[int]int64{0: -1, 49: -1, 55: -2, 60: 60, 4999: 4999} {
		setKey(t, r, fmt.Sprintf("k%d", i))
		v, ok, err := cnt.Value()
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want, v, "k%d", i)
	}
}

// TestPebbleRestoreClipsForeignKeyGroups: a handle wider than the new range
// is downloaded whole, then the key groups outside are deleted (Flink's
// deleteRange clip), so not even a raw scan finds them.
func TestPebbleRestoreClipsForeignKeyGroups(t *testing.T) {
	s := newTestStorage(t, FileSystemStorage)
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	fill(t, []KeyedBackend{b}, 1000)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
	require.NoError(t, err)
	require.NoError(t, b.Close())

	r := rescale.KeyGroupRange{Start: 43, End: 85}
	nb, err := RestoreKeyedBackend(testConfig(t, Pebble, 128, r), s, []*KeyedStateHandle{h})
	require.NoError(t, err)
	defer nb.Close()
	it, err := nb.(*pebbleBackend).db.NewIter(&pebble.IterOptions{})
	require.NoError(t, err)
	n := 0
	for it.First(); it.Valid(); it.Next() {
		g := int(it.Key()[0])<<8 | int(it.Key()[1])
		require.True(t, r.Contains(g), "key group %d left after the clip", g)
		n++
	}
	require.NoError(t, it.Close())
	want := 0
	for i := range 1000 {
		if r.Contains(rescale.KeyGroupForString(fmt.Sprintf("k%d", i), 128)) {
			want += 2 // count and one map entry
		}
	}
	assert.Equal(t, want, n)
	m, _ := nb.Metrics()
	assert.Positive(t, m.RestoreBytesRead)
}

// TestRestoreNeverHalfApplies: the second handle is corrupt, so the restore
// fails as a whole and leaves no directory behind.
func TestRestoreNeverHalfApplies(t *testing.T) {
	for _, incremental := range []bool{false, true} {
		t.Run(fmt.Sprint("incremental=", incremental), func(t *testing.T) {
			s := newTestStorage(t, JobManagerStorage)
			var hs []*KeyedStateHandle
			for _, r := range rescale.KeyGroupRanges(128, 2) {
				cfg := testConfig(t, Pebble, 128, r)
				cfg.Incremental = incremental
				b, err := NewKeyedBackend(cfg)
				require.NoError(t, err)
				fill(t, []KeyedBackend{b}, 300)
				h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
				require.NoError(t, err)
				require.NoError(t, b.Close())
				hs = append(hs, h)
			}
			victim := hs[1].Files()[0]
			require.True(t, s.(*checkpointStorage).blobs.(*memBlobs).corruptForTest(victim.Path, int(victim.Size)-5))
			cfg := testConfig(t, Pebble, 128, fullRange)
			b, err := RestoreKeyedBackend(cfg, s, hs)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), victim.Path)
			assert.Nil(t, b)
			assert.NoDirExists(t, cfg.Dir)
			mb, err := RestoreKeyedBackend(testConfig(t, Memory, 128, fullRange), s, hs[:1])
			if incremental {
				assert.ErrorIs(t, err, ErrIncompatible, "incremental pebble checkpoints restore only into pebble")
			} else {
				require.NoError(t, err)
				mb.Close()
			}
		})
	}
}

func TestRestoreRejectsOtherMaxParallelism(t *testing.T) {
	s := newTestStorage(t, JobManagerStorage)
	b := newTestBackend(t, Memory, 128, fullRange)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 1}, s)
	require.NoError(t, err)
	_, err = RestoreKeyedBackend(testConfig(t, Memory, 256, rescale.KeyGroupRange{Start: 0, End: 255}), s, []*KeyedStateHandle{h})
	assert.ErrorIs(t, err, ErrIncompatible)
	assert.ErrorContains(t, err, "max parallelism 128")
}

// TestSavepointIsFullAndPortable: an incremental pebble backend still writes
// a self-contained full snapshot for a savepoint, into the savepoint's own
// directory, and the memory backend restores it.
func TestSavepointIsFullAndPortable(t *testing.T) {
	s := newTestStorage(t, FileSystemStorage)
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	defer b.Close()
	fill(t, []KeyedBackend{b}, 100)
	h, err := b.Snapshot(SnapshotTarget{CheckpointID: 7, Savepoint: true}, s)
	require.NoError(t, err)
	assert.Equal(t, FormatFull, h.Format)
	assert.Empty(t, h.SharedFiles)
	assert.Equal(t, "savepoint-job1-7/op-0-kg0-127.kgs", h.File.Path)
	r, err := RestoreKeyedBackend(testConfig(t, Memory, 128, fullRange), s, []*KeyedStateHandle{h})
	require.NoError(t, err)
	m, err := r.Metrics()
	require.NoError(t, err)
	assert.Equal(t, int64(200), m.Keys, "100 keys, each with a count and a map")
}

// After checkpoints the block cache still caches blocks. Pebble charges each
// memtable to the block cache; a memtable that fills up is followed by one
// twice as large, up to the backend's memtable size. With Pebble's default
// 8 MiB cache, once the memtables (the live one and one kept for reuse)
// reserved 8 MiB, the whole cache was reserved and every Get after a
// checkpoint's flush read its blocks from disk. Here each round
// writes 8 MiB (2,000 keys of 4 KiB) and checkpoints; then reading all keys
// twice, the second pass must hit the cache.
func TestPebbleBlockCacheSurvivesCheckpoints(t *testing.T) {
	s := newTestStorage(t, FileSystemStorage)
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	kb, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	defer kb.Close()
	val, err := Value(kb, "page", StringCodec)
	require.NoError(t, err)
	const keys = 2000
	page := func(id int64) string { return strings.Repeat(string(rune('a'+id)), 4096) }
	for id := int64(1); id <= 2; id++ {
		for i := range keys {
			setKey(t, kb, fmt.Sprintf("k%d", i))
			require.NoError(t, val.Update(page(id)))
		}
		h, err := kb.Snapshot(SnapshotTarget{CheckpointID: id}, s)
		require.NoError(t, err)
		_, err = s.CompleteCheckpoint(&CheckpointMetadata{CheckpointID: id, Operators: []OperatorState{
			{OperatorID: "count", Parallelism: 1, MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}})
		require.NoError(t, err)
		kb.NotifyCheckpointComplete(id)
	}
	db := kb.(*pebbleBackend).db
	// Each checkpoint's flush leaves SSTs in L0 that background
	// compactions rewrite later, and a rewritten SST's blocks are new to
	// the cache: if one lands between the two read passes, the second pass
	// misses for reasons that have nothing to do with the cache's size (it
	// did, 1-2 runs in 3 on a loaded machine). Compact everything into one
	// level and wait until no compaction runs, so both passes read the
	// same files.
	require.NoError(t, db.Compact(context.Background(), []byte{}, bytes.Repeat([]byte{0xff}, 16), false))
	settled := func() {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for m := db.Metrics(); m.Compact.NumInProgress > 0 || m.Flush.NumInProgress > 0; m = db.Metrics() {
			require.True(t, time.Now().Before(deadline), "compactions still running after a minute: %d", m.Compact.NumInProgress)
			time.Sleep(10 * time.Millisecond)
		}
	}
	settled()
	compactions := db.Metrics().Compact.Count
	readAll := func() {
		for i := range keys {
			setKey(t, kb, fmt.Sprintf("k%d", i))
			v, ok, err := val.Value()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, page(2), v)
		}
	}
	readAll() // the memtable is empty after the last flush: every key is in an SST
	before := db.Metrics().BlockCache
	readAll()
	after := db.Metrics().BlockCache
	settled()
	require.Equal(t, compactions, db.Metrics().Compact.Count, "no compaction rewrote the SSTs between the read passes")
	// The memtables reserve their share of the cache (a full memtable's
	// worth here); the blocks must still find room beside them.
	assert.GreaterOrEqual(t, db.Metrics().MemTable.Size, uint64(pebbleMemTableBytes), "memtables reserve at least one memtable's size in the cache")
	assert.Positive(t, after.Size, "blocks stay in the cache")
	assert.GreaterOrEqual(t, after.Hits-before.Hits, int64(keys), "the second pass reads from the cache")
	assert.Less(t, after.Misses-before.Misses, int64(keys/10), "and hardly misses")
}

// TestPebbleRepeatedClipsScanCleanly rescales a Pebble backend through
// several generations, each restored from the last one's incremental
// checkpoint into a narrower or shifted range (so range tombstones pile up
// in the SSTs), and scans sub-ranges of every generation. It guards the
// clip's start key: a tombstone starting at the empty key made Pebble's
// fragment iterator panic on such scans in invariant builds (-race), the
// panic a lesson run met in Stepper.Snapshot -> Metrics. Every scan must
// also find exactly the keys the model holds.
func TestPebbleRepeatedClipsScanCleanly(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	s := newTestStorage(t, FileSystemStorage)
	const maxP = 128
	r := fullRange
	cfg := testConfig(t, Pebble, maxP, r)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	model := map[string]int64{} // keys inside the current range -> last value
	for gen := 1; gen <= 8; gen++ {
		cnt, err := Value(b, "count", Int64Codec)
		require.NoError(t, err)
		for i := 0; i < 400; i++ {
			k := fmt.Sprintf("k%d", rng.Intn(2000))
			g := rescale.KeyGroupForString(k, maxP)
			if !r.Contains(g) {
				continue
			}
			setKey(t, b, k)
			require.NoError(t, cnt.Update(int64(gen)))
			model[k] = int64(gen)
		}
		h, err := b.Snapshot(SnapshotTarget{CheckpointID: int64(gen)}, s)
		require.NoError(t, err)
		require.NoError(t, b.Close())

		// A new range inside the old one, never empty.
		start := r.Start + rng.Intn(r.Len()/2+1)
		end := start + rng.Intn(r.End-start+1)
		r = rescale.KeyGroupRange{Start: start, End: end}
		for k := range model {
			if !r.Contains(rescale.KeyGroupForString(k, maxP)) {
				delete(model, k)
			}
		}
		ncfg := testConfig(t, Pebble, maxP, r)
		ncfg.Incremental = true
		b, err = RestoreKeyedBackend(ncfg, s, []*KeyedStateHandle{h})
		require.NoError(t, err, "generation %d restore into %v", gen, r)

		for q := 0; q < 30; q++ {
			x := r.Start + rng.Intn(r.Len())
			y := x + rng.Intn(r.End-x+1)
			sub := rescale.KeyGroupRange{Start: x, End: y}
			got, err := b.Entries(sub, 0)
			require.NoError(t, err)
			want := 0
			for k := range model {
				if sub.Contains(rescale.KeyGroupForString(k, maxP)) {
					want++
				}
			}
			assert.Len(t, got, want, "generation %d, scan of %v", gen, sub)
		}
		m, err := b.Metrics()
		require.NoError(t, err)
		assert.Equal(t, int64(len(model)), m.Keys, "generation %d keys in %v", gen, r)
	}
	require.NoError(t, b.Close())
}

// Incremental checkpoints after a 1 % change stay small on average, not
// only right after a flush: with Pebble's default base level (64 MiB) every
// L0 compaction rewrote the whole state and every second checkpoint
// uploaded all of it again (here 50 % of the SSTs' size, ~30 % of a full
// checkpoint, on average). Issue 8's target: at most 15 % of a full
// checkpoint of the same state.
func TestPebbleIncrementalCheckpointsStaySmallOnAverage(t *testing.T) {
	const keys, rounds = 20_000, 16
	s := newTestStorage(t, FileSystemStorage)
	cfg := testConfig(t, Pebble, 128, fullRange)
	cfg.Incremental = true
	b, err := NewKeyedBackend(cfg)
	require.NoError(t, err)
	defer b.Close()
	changeKeys(t, b, 0, keys, 0)
	var uploaded int64
	for id := int64(1); id <= rounds+1; id++ {
		if id > 1 {
			// 1 % of the keys, spread over the whole key space.
			cnt, _ := Value(b, "count", Int64Codec)
			for i := int(id) % 100; i < keys; i += 100 {
				setKey(t, b, fmt.Sprintf("k%d", i))
				require.NoError(t, cnt.Update(id))
			}
		}
		h, err := b.Snapshot(SnapshotTarget{CheckpointID: id}, s)
		require.NoError(t, err)
		_, err = s.CompleteCheckpoint(&CheckpointMetadata{CheckpointID: id, Operators: []OperatorState{
			{OperatorID: "count", Parallelism: 1, MaxParallelism: 128, Subtasks: []SubtaskState{{Keyed: h}}}}})
		require.NoError(t, err)
		b.NotifyCheckpointComplete(id)
		if id > 1 {
			uploaded += h.CheckpointedSize
		}
	}
	// A savepoint is the full snapshot of the same state.
	full, err := b.Snapshot(SnapshotTarget{CheckpointID: rounds + 2, Savepoint: true}, s)
	require.NoError(t, err)
	require.Equal(t, FormatFull, full.Format)
	share := float64(uploaded) / rounds / float64(full.CheckpointedSize)
	t.Logf("incremental checkpoints uploaded %.1f %% of a full checkpoint on average", 100*share)
	assert.Less(t, share, 0.15, "mean upload over %d checkpoints after 1 %% changes", rounds)
}
