package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/statelab/statelab/rescale"
)

// The full snapshot file, the same whichever backend writes it (Flink's
// canonical savepoint format plays this role):
//
//	header: "SLKS" | version 1 | uvarint n | n bytes of JSON fullHeader | CRC32C (u32 BE) of all before
//	then for each key group g of the range, ascending — its offset goes to KeyedStateHandle.Offsets:
//	  u16 BE g | entries | 0x00 | CRC32C (u32 BE) of the block from g through 0x00
//	entry: uvarint(state id + 1) | uvarint len | key | uvarint (len(user key) + 1, or 0 if none) | user key | uvarint len | value
//
// A block carries its own checksum so that restoring a sub-range reads and
// checks only that sub-range's bytes, plus the header.
const (
	fullMagic   = "SLKS"
	fullVersion = 1
)

type fullHeader struct {
	MaxParallelism int                   `json:"maxParallelism"`
	KeyGroupRange  rescale.KeyGroupRange `json:"keyGroupRange"`
	States         []StateInfo           `json:"states"`
}

// fullWriteBuffer is how many bytes a full snapshot gathers before it
// writes them to its file.
const fullWriteBuffer = 256 << 10

// fullWriteBufs are the write buffers of full snapshots, passed from one
// checkpoint to the next. A buffer grows with the snapshots it gathers, up
// to fullWriteBuffer: a small state, checkpointed every few milliseconds (a
// sandbox, a replayed share link), needs a few KiB per checkpoint, not a
// fresh 256 KiB buffer per stateful subtask that was nearly all of such a
// job's allocation and garbage collection; a large one reuses its 256 KiB
// (issue 17). A buffer the pool drops (a garbage collection, or at random
// under the race detector) only costs its regrowth.
var fullWriteBufs = sync.Pool{New: func() any { return new([]byte) }}

// fullWriter writes a full snapshot into a FileWriter.
type fullWriter struct {
	fw      FileWriter
	pooled  *[]byte // buf's home in fullWriteBufs
	buf     []byte
	err     error // the first error writing fw
	off     int64
	crc     uint32
	scratch []byte
	offsets []int64
	r       rescale.KeyGroupRange
	next    int // next key group to begin
	inBlock bool
}

func newFullWriter(fw FileWriter, maxP int, r rescale.KeyGroupRange, states []StateInfo) (*fullWriter, error) {
	pooled := fullWriteBufs.Get().(*[]byte)
	w := &fullWriter{fw: fw, pooled: pooled, buf: (*pooled)[:0], r: r, next: r.Start}
	hj, err := json.Marshal(fullHeader{MaxParallelism: maxP, KeyGroupRange: r, States: states})
	if err != nil {
		return nil, err
	}
	h := append([]byte(fullMagic), fullVersion)
	h = binary.AppendUvarint(h, uint64(len(hj)))
	h = append(h, hj...)
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	if err := w.raw(h); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *fullWriter) raw(p []byte) error {
	w.off += int64(len(p))
	if len(w.buf)+len(p) > fullWriteBuffer {
		w.flush()
	}
	if len(p) >= fullWriteBuffer && w.err == nil {
		_, w.err = w.fw.Write(p)
	} else {
		w.buf = append(w.buf, p...)
	}
	return w.err
}

// flush writes the buffered bytes to the file.
func (w *fullWriter) flush() {
	if len(w.buf) > 0 && w.err == nil {
		_, w.err = w.fw.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

func (w *fullWriter) write(p []byte) error {
	w.crc = crc32.Update(w.crc, castagnoli, p)
	return w.raw(p)
}

// beginKeyGroup starts key group g's block, closing earlier (empty) ones.
func (w *fullWriter) beginKeyGroup(g int) error {
	for w.next <= g {
		if err := w.endBlock(); err != nil {
			return err
		}
		w.offsets = append(w.offsets, w.off)
		w.crc = 0
		if err := w.write(binary.BigEndian.AppendUint16(w.scratch[:0], uint16(w.next))); err != nil {
			return err
		}
		w.inBlock = true
		w.next++
	}
	return nil
}

func (w *fullWriter) endBlock() error {
	if !w.inBlock {
		return nil
	}
	w.inBlock = false
	if err := w.write([]byte{0}); err != nil {
		return err
	}
	return w.raw(binary.BigEndian.AppendUint32(w.scratch[:0], w.crc))
}

// entry writes one entry of the current key group; userKey nil = none.
func (w *fullWriter) entry(id stateID, key, userKey, value []byte) error {
	b := binary.AppendUvarint(w.scratch[:0], uint64(id)+1)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	if userKey == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(userKey))+1)
		b = append(b, userKey...)
	}
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, value...)
	w.scratch = b[:0]
	return w.write(b)
}

// finish closes the remaining key groups and commits the file.
func (w *fullWriter) finish() (FileRef, []int64, error) {
	if err := w.beginKeyGroup(w.r.End); err != nil {
		return FileRef{}, nil, err
	}
	if err := w.endBlock(); err != nil {
		return FileRef{}, nil, err
	}
	w.flush()
	*w.pooled = w.buf
	fullWriteBufs.Put(w.pooled)
	w.pooled, w.buf = nil, nil
	if w.err != nil {
		return FileRef{}, nil, w.err
	}
	ref, err := w.fw.Commit()
	return ref, w.offsets, err
}

// fullEntry is one entry read back from a full snapshot.
type fullEntry struct {
	keyGroup int
	state    StateInfo
	key      []byte
	userKey  []byte // nil = none
	value    []byte
}

// readFull calls fn for every entry of h in the key groups of want, reading
// only the header and those key groups' blocks. Each block is read into a
// buffer of its own that readFull never touches again, so fn may keep the
// slices it is given (the memory backend does). It returns the bytes read.
func readFull(storage CheckpointStorage, h *KeyedStateHandle, want rescale.KeyGroupRange, fn func(e *fullEntry) error) (int64, error) {
	x := h.KeyGroupRange.Intersection(want)
	if x.Empty() {
		return 0, nil
	}
	if h.File == nil || len(h.Offsets) != h.KeyGroupRange.Len() {
		return 0, fmt.Errorf("%w: checkpoint %d: the keyed state handle of key groups %v has no file or a wrong offset index", ErrCorrupt, h.CheckpointID, h.KeyGroupRange)
	}
	f, err := storage.OpenFile(*h.File)
	if err != nil {
		return 0, fmt.Errorf("checkpoint %d: %w", h.CheckpointID, err)
	}
	defer f.Close()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: checkpoint %d: %s: %s", ErrCorrupt, h.CheckpointID, h.File.Path, fmt.Sprintf(format, args...))
	}
	if f.Size() != h.File.Size {
		return f.BytesRead(), bad("%d bytes, the checkpoint says %d (cut or replaced)", f.Size(), h.File.Size)
	}
	readAt := func(off, end int64) ([]byte, error) {
		if off < 0 || end > f.Size() || end < off {
			return nil, bad("offset index points outside the file")
		}
		buf := make([]byte, end-off)
		if _, err := f.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && off+int64(len(buf)) == f.Size()) {
			return nil, fmt.Errorf("checkpoint %d: read %s: %w", h.CheckpointID, h.File.Path, err)
		}
		return buf, nil
	}
	head, err := readAt(0, h.Offsets[0])
	if err != nil {
		return f.BytesRead(), err
	}
	if len(head) < 9 || string(head[:4]) != fullMagic || head[4] != fullVersion {
		return f.BytesRead(), bad("not a StateLab full snapshot (bad magic or version)")
	}
	if crc32.Checksum(head[:len(head)-4], castagnoli) != binary.BigEndian.Uint32(head[len(head)-4:]) {
		return f.BytesRead(), bad("header fails its CRC32C check")
	}
	n, w := binary.Uvarint(head[5:])
	if w <= 0 || uint64(len(head)-5-w-4) != n {
		return f.BytesRead(), bad("malformed header")
	}
	var hdr fullHeader
	if err := json.Unmarshal(head[5+w:5+w+int(n)], &hdr); err != nil {
		return f.BytesRead(), bad("header: %v", err)
	}
	if hdr.KeyGroupRange != h.KeyGroupRange {
		return f.BytesRead(), bad("file holds key groups %v, its handle says %v", hdr.KeyGroupRange, h.KeyGroupRange)
	}
	states := map[uint16]StateInfo{}
	for _, s := range hdr.States {
		states[s.ID] = s
	}
	e := &fullEntry{}
	for g := x.Start; g <= x.End; g++ {
		i := g - h.KeyGroupRange.Start
		end := h.File.Size
		if i+1 < len(h.Offsets) {
			end = h.Offsets[i+1]
		}
		blk, err := readAt(h.Offsets[i], end)
		if err != nil {
			return f.BytesRead(), err
		}
		if len(blk) < 7 || crc32.Checksum(blk[:len(blk)-4], castagnoli) != binary.BigEndian.Uint32(blk[len(blk)-4:]) {
			return f.BytesRead(), bad("key group %d fails its CRC32C check (a byte changed)", g)
		}
		if int(binary.BigEndian.Uint16(blk)) != g {
			return f.BytesRead(), bad("block at key group %d's offset belongs to key group %d", g, binary.BigEndian.Uint16(blk))
		}
		p := blk[2 : len(blk)-4]
		e.keyGroup = g
		for {
			sid, ok := uvar(&p)
			if !ok {
				return f.BytesRead(), bad("key group %d: malformed entry", g)
			}
			if sid == 0 {
				break
			}
			st, known := states[uint16(sid-1)]
			if !known {
				return f.BytesRead(), bad("key group %d: entry of unknown state id %d", g, sid-1)
			}
			e.state = st
			if e.key, ok = bytesField(&p); !ok {
				return f.BytesRead(), bad("key group %d: malformed key", g)
			}
			uk, ok := uvar(&p)
			if !ok || uint64(len(p)) < max(uk, 1)-1 {
				return f.BytesRead(), bad("key group %d: malformed user key", g)
			}
			e.userKey = nil
			if uk > 0 {
				e.userKey = p[:uk-1]
				p = p[uk-1:]
			}
			if e.value, ok = bytesField(&p); !ok {
				return f.BytesRead(), bad("key group %d: malformed value", g)
			}
			if err := fn(e); err != nil {
				return f.BytesRead(), err
			}
		}
	}
	return f.BytesRead(), nil
}

func uvar(p *[]byte) (uint64, bool) {
	v, w := binary.Uvarint(*p)
	if w <= 0 {
		return 0, false
	}
	*p = (*p)[w:]
	return v, true
}

func bytesField(p *[]byte) ([]byte, bool) {
	n, ok := uvar(p)
	if !ok || uint64(len(*p)) < n {
		return nil, false
	}
	b := (*p)[:n]
	*p = (*p)[n:]
	return b, true
}

// checkHandles validates handles against the backend being restored.
func checkHandles(cfg KeyedBackendConfig, handles []*KeyedStateHandle) error {
	for _, h := range handles {
		if h == nil {
			continue
		}
		if h.MaxParallelism != cfg.MaxParallelism {
			return fmt.Errorf("%w: checkpoint %d was taken with max parallelism %d, this backend has %d; Flink cannot change max parallelism of a keyed operator after its first checkpoint",
				ErrIncompatible, h.CheckpointID, h.MaxParallelism, cfg.MaxParallelism)
		}
		if h.Format == FormatIncremental && cfg.Kind != Pebble {
			return fmt.Errorf("%w: checkpoint %d is an incremental pebble checkpoint; only the pebble backend restores it (take a savepoint to switch backends)",
				ErrIncompatible, h.CheckpointID)
		}
		if h.Format != FormatFull && h.Format != FormatIncremental {
			return fmt.Errorf("%w: checkpoint %d: unknown snapshot format %q", ErrIncompatible, h.CheckpointID, h.Format)
		}
	}
	return nil
}

// snapshotFileName is the base name of a subtask's keyed snapshot file.
func snapshotFileName(name string, r rescale.KeyGroupRange) string {
	if name == "" {
		name = "keyed"
	}
	return fmt.Sprintf("%s-kg%d-%d.kgs", name, r.Start, r.End)
}
