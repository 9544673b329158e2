package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metadataName is the file that makes a checkpoint directory a completed
// checkpoint, Flink's _metadata.
const metadataName = "_metadata"

// blobStore is the byte layer under a checkpoint storage: memory or a
// directory. Paths are slash-separated and relative to the job's directory.
type blobStore interface {
	newTemp(dir string) (tempBlob, error)
	open(p string) (blobReader, error)
	remove(p string) error
	removeDir(dir string) error
	exists(p string) bool
	// list returns every committed file and its size.
	list() (map[string]int64, error)
}

type tempBlob interface {
	io.Writer
	commit(p string) error
	abort()
}

type blobReader interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// checkpointStorage implements CheckpointStorage over a blobStore: the
// naming of files, the registry of shared files, retention and metadata are
// the same whether bytes live in memory or on disk.
type checkpointStorage struct {
	cfg   StorageConfig
	blobs blobStore

	mu         sync.Mutex
	completed  []CheckpointInfo // retained, ascending id
	savepoints []CheckpointInfo
	shared     map[int64][]string        // completed id -> shared files it refers to
	sharedRefs map[string]int            // shared file -> retained checkpoints referring to it
	pending    map[int64]map[string]bool // pending id -> shared files written or reused
	names      map[string]bool           // paths taken by committed or open files
	sizes      map[string]int64          // committed files
	written    int64
	read       atomic.Int64
}

func newStorage(cfg StorageConfig) (CheckpointStorage, error) {
	if cfg.JobID == "" {
		return nil, errors.New("state: checkpoint storage needs a job id")
	}
	if !ValidDirName(cfg.JobID) {
		// The id names the job's directory: a space or a slash would break
		// it, and "../x" would leave the checkpoint directory.
		return nil, fmt.Errorf("state: job id %q cannot name the job's checkpoint directory: use 1 to %d %s, or map a display name with SafeDirName",
			cfg.JobID, maxDirName, AllowedNameChars)
	}
	if cfg.Retained <= 0 {
		cfg.Retained = 1
	}
	s := &checkpointStorage{cfg: cfg, shared: map[int64][]string{}, sharedRefs: map[string]int{},
		pending: map[int64]map[string]bool{}, names: map[string]bool{}, sizes: map[string]int64{}}
	switch cfg.Kind {
	case JobManagerStorage:
		if cfg.MaxStateSize <= 0 {
			s.cfg.MaxStateSize = DefaultMaxStateSize
		}
		s.blobs = &memBlobs{files: map[string][]byte{}}
		return s, nil
	case FileSystemStorage:
		if cfg.Dir == "" {
			return nil, errors.New("state: filesystem checkpoint storage needs a directory")
		}
		s.cfg.MaxStateSize = 0
		fsb, err := newFSBlobs(cfg.FS, path.Join(cfg.Dir, cfg.JobID))
		if err != nil {
			return nil, err
		}
		s.blobs = fsb
		if err := s.recover(); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("state: unknown checkpoint storage %q (want jobmanager or filesystem)", cfg.Kind)
}

// recover rebuilds the registry from the metadata files on disk, so a new
// job manager process sees the checkpoints of the last one.
func (s *checkpointStorage) recover() error {
	files, err := s.blobs.list()
	if err != nil {
		return fmt.Errorf("state: scan checkpoint directory: %w", err)
	}
	s.sizes = files
	for p := range files {
		s.names[p] = true
	}
	var metas []*CheckpointMetadata
	for p := range files {
		dir, base := path.Split(p)
		if base != metadataName || strings.Count(p, "/") != 1 {
			continue
		}
		m, err := s.readMetadata(strings.TrimSuffix(dir, "/"), true)
		if err != nil {
			continue // a corrupt checkpoint is not restorable; Load reports it by name
		}
		metas = append(metas, m)
	}
	slices.SortFunc(metas, func(a, b *CheckpointMetadata) int { return int(a.CheckpointID - b.CheckpointID) })
	for _, m := range metas {
		s.register(m)
	}
	for len(s.completed) > s.cfg.Retained {
		s.subsume(s.completed[0].ID)
	}
	return nil
}

func (s *checkpointStorage) Kind() StorageKind { return s.cfg.Kind }
func (s *checkpointStorage) JobID() string     { return s.cfg.JobID }
func (s *checkpointStorage) Dir() string {
	if fsb, ok := s.blobs.(*fsBlobs); ok {
		return fsb.root
	}
	return ""
}

// checkpointDir is chk-<n> or, for a savepoint, savepoint-<job prefix>-<n>
// (Flink names savepoints savepoint-<first 6 of the job id>-<random>; the id
// keeps ours deterministic).
func (s *checkpointStorage) checkpointDir(t SnapshotTarget) string {
	if t.Savepoint {
		job := s.cfg.JobID
		if len(job) > 6 {
			job = job[:6]
		}
		return fmt.Sprintf("savepoint-%s-%d", job, t.CheckpointID)
	}
	return fmt.Sprintf("chk-%d", t.CheckpointID)
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, name)
}

// unique returns dir/name, or dir/name-2, -3… if taken. Caller holds mu.
func (s *checkpointStorage) unique(dir, name string) string {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	p := path.Join(dir, name)
	for i := 2; s.names[p] || s.blobs.exists(p); i++ {
		p = path.Join(dir, stem+"-"+strconv.Itoa(i)+ext)
	}
	return p
}

func (s *checkpointStorage) CreateFile(target SnapshotTarget, scope Scope, name string) (FileWriter, error) {
	// Safe characters only, and no leading dot: "." or ".." would name a
	// directory, ".inprogress-…" a temporary file.
	name = strings.TrimLeft(sanitize(name), ".")
	if name == "" {
		name = "state"
	}
	w := &fileWriter{s: s, target: target, scope: scope, name: name}
	var dir string
	s.mu.Lock()
	switch scope {
	case Exclusive:
		dir = s.checkpointDir(target)
		w.path = s.unique(dir, name)
		s.names[w.path] = true
	case TaskOwned:
		dir = "taskowned"
		w.path = s.unique(dir, name)
		s.names[w.path] = true
	case Shared:
		if target.Savepoint {
			s.mu.Unlock()
			return nil, errors.New("state: a savepoint is self-contained and cannot write shared files")
		}
		dir = "shared"
		w.hash = sha256.New()
	default:
		s.mu.Unlock()
		return nil, fmt.Errorf("state: unknown file scope %d", scope)
	}
	s.mu.Unlock()
	tmp, err := s.blobs.newTemp(dir)
	if err != nil {
		w.release()
		return nil, fmt.Errorf("state: create checkpoint file in %s: %w", dir, err)
	}
	w.tmp = tmp
	return w, nil
}

type fileWriter struct {
	s      *checkpointStorage
	target SnapshotTarget
	scope  Scope
	name   string
	path   string // final path; for shared files known at Commit
	tmp    tempBlob
	hash   hash.Hash
	crc    uint32
	size   int64
	err    error
	done   bool
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.done {
		return 0, errors.New("state: write to a committed checkpoint file")
	}
	if max := w.s.cfg.MaxStateSize; max > 0 && w.size+int64(len(p)) > max {
		w.err = fmt.Errorf("%w: checkpoint %d: state file %s exceeds the jobmanager checkpoint storage cap of %s per state (Flink's MemoryStateBackend limit); use the filesystem checkpoint storage (backend fs) for larger state",
			ErrStateTooLarge, w.target.CheckpointID, w.name, formatBytes(max))
		return 0, w.err
	}
	n, err := w.tmp.Write(p)
	w.crc = crc32.Update(w.crc, castagnoli, p[:n])
	if w.hash != nil {
		w.hash.Write(p[:n])
	}
	w.size += int64(n)
	if err != nil {
		w.err = fmt.Errorf("state: write checkpoint file %s: %w", w.name, err)
	}
	return n, w.err
}

func (w *fileWriter) Commit() (FileRef, error) {
	if w.done {
		return FileRef{}, errors.New("state: checkpoint file committed twice")
	}
	if w.err != nil {
		w.Abort()
		return FileRef{}, w.err
	}
	w.done = true
	if w.hash != nil {
		sum := w.hash.Sum(nil)
		w.path = "shared/" + hex.EncodeToString(sum[:16]) + "-" + w.name
	}
	if err := w.tmp.commit(w.path); err != nil {
		w.release()
		return FileRef{}, fmt.Errorf("state: commit checkpoint file %s: %w", w.path, err)
	}
	ref := FileRef{Path: w.path, Size: w.size, CRC32C: w.crc}
	s := w.s
	s.mu.Lock()
	s.names[w.path] = true
	s.sizes[w.path] = w.size
	s.written += w.size
	if w.scope == Shared {
		s.addPending(w.target.CheckpointID, w.path)
	}
	s.mu.Unlock()
	return ref, nil
}

func (w *fileWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.tmp != nil {
		w.tmp.abort()
	}
	w.release()
}

func (w *fileWriter) release() {
	if w.path != "" && w.scope != Shared {
		w.s.mu.Lock()
		if _, committed := w.s.sizes[w.path]; !committed {
			delete(w.s.names, w.path)
		}
		w.s.mu.Unlock()
	}
}

func (s *checkpointStorage) addPending(id int64, p string) {
	if s.pending[id] == nil {
		s.pending[id] = map[string]bool{}
	}
	s.pending[id][p] = true
}

func (s *checkpointStorage) ReferenceShared(checkpointID int64, ref FileRef) error {
	if err := checkRelPath(ref.Path); err != nil {
		return fmt.Errorf("checkpoint %d: %w", checkpointID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !strings.HasPrefix(ref.Path, "shared/") {
		return fmt.Errorf("state: checkpoint %d: %s is not a shared file", checkpointID, ref.Path)
	}
	if _, ok := s.sizes[ref.Path]; !ok {
		return fmt.Errorf("%w: checkpoint %d: shared file %s is gone; take a full snapshot", ErrMissing, checkpointID, ref.Path)
	}
	s.addPending(checkpointID, ref.Path)
	return nil
}

func (s *checkpointStorage) OpenFile(ref FileRef) (FileReader, error) {
	// A path comes from checkpoint metadata, which lives on a shared disk:
	// it must not reach outside the job's directory.
	if err := checkRelPath(ref.Path); err != nil {
		return nil, err
	}
	r, err := s.blobs.open(ref.Path)
	if err != nil {
		return nil, err
	}
	return &fileReader{r: r, total: &s.read}, nil
}

type fileReader struct {
	r     blobReader
	n     atomic.Int64
	total *atomic.Int64
}

func (f *fileReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.r.ReadAt(p, off)
	f.n.Add(int64(n))
	f.total.Add(int64(n))
	return n, err
}
func (f *fileReader) Size() int64      { return f.r.Size() }
func (f *fileReader) BytesRead() int64 { return f.n.Load() }
func (f *fileReader) Close() error     { return f.r.Close() }

// metadata file: one header line with the CRC32C and length of the JSON body
// that follows, so a person can read it and a flipped byte is caught.
const metadataMagic = "STATELAB-CHECKPOINT-METADATA v1"

func encodeMetadata(m *CheckpointMetadata) ([]byte, error) {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("state: encode checkpoint metadata: %w", err)
	}
	body = append(body, '\n')
	head := fmt.Sprintf("%s crc32c=%08x length=%d\n", metadataMagic, crc32.Checksum(body, castagnoli), len(body))
	return append([]byte(head), body...), nil
}

func (s *checkpointStorage) readMetadata(dir string, count bool) (*CheckpointMetadata, error) {
	p := dir + "/" + metadataName
	r, err := s.blobs.open(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, r.Size())
	if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("state: read %s: %w", p, err)
	}
	if count {
		s.read.Add(int64(len(buf)))
	}
	nl := bytes.IndexByte(buf, '\n')
	var crc uint32
	var length int
	if nl < 0 {
		return nil, fmt.Errorf("%w: %s has no header line", ErrCorrupt, p)
	}
	if _, err := fmt.Sscanf(string(buf[:nl]), metadataMagic+" crc32c=%x length=%d", &crc, &length); err != nil {
		return nil, fmt.Errorf("%w: %s header %q is not %s", ErrCorrupt, p, buf[:nl], metadataMagic)
	}
	body := buf[nl+1:]
	if len(body) != length || crc32.Checksum(body, castagnoli) != crc {
		return nil, fmt.Errorf("%w: %s fails its CRC32C check (a byte changed or the file was cut)", ErrCorrupt, p)
	}
	m := &CheckpointMetadata{}
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, p, err)
	}
	return m, nil
}

func sharedPaths(m *CheckpointMetadata) []string {
	var out []string
	for _, f := range m.Files() {
		if strings.HasPrefix(f.Path, "shared/") && !slices.Contains(out, f.Path) {
			out = append(out, f.Path)
		}
	}
	return out
}

// register adds a completed checkpoint to the retained list and counts its
// shared files. Caller holds mu.
func (s *checkpointStorage) register(m *CheckpointMetadata) {
	t := SnapshotTarget{CheckpointID: m.CheckpointID, Savepoint: m.Savepoint}
	info := CheckpointInfo{ID: m.CheckpointID, Savepoint: m.Savepoint, Path: s.checkpointDir(t),
		StateSize: m.StateSize(), CheckpointedSize: m.CheckpointedSize()}
	sp := sharedPaths(m)
	s.shared[m.CheckpointID] = sp
	for _, p := range sp {
		s.sharedRefs[p]++
	}
	if m.Savepoint {
		s.savepoints = append(s.savepoints, info)
		slices.SortFunc(s.savepoints, func(a, b CheckpointInfo) int { return int(a.ID - b.ID) })
		return
	}
	s.completed = append(s.completed, info)
	slices.SortFunc(s.completed, func(a, b CheckpointInfo) int { return int(a.ID - b.ID) })
}

func (s *checkpointStorage) CompleteCheckpoint(meta *CheckpointMetadata) ([]int64, error) {
	if meta.JobID == "" {
		meta.JobID = s.cfg.JobID
	}
	if meta.JobID != s.cfg.JobID {
		return nil, fmt.Errorf("state: checkpoint %d is of job %q, this storage holds job %q", meta.CheckpointID, meta.JobID, s.cfg.JobID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := SnapshotTarget{CheckpointID: meta.CheckpointID, Savepoint: meta.Savepoint}
	dir := s.checkpointDir(t)
	if _, ok := s.sizes[dir+"/"+metadataName]; ok {
		return nil, fmt.Errorf("state: checkpoint %d is already complete", meta.CheckpointID)
	}
	for _, f := range meta.Files() {
		if err := checkRelPath(f.Path); err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", meta.CheckpointID, err)
		}
		if _, ok := s.sizes[f.Path]; !ok {
			return nil, fmt.Errorf("%w: checkpoint %d: file %s was never written or is gone", ErrMissing, meta.CheckpointID, f.Path)
		}
	}
	data, err := encodeMetadata(meta)
	if err != nil {
		return nil, err
	}
	tmp, err := s.blobs.newTemp(dir)
	if err == nil {
		if _, err = tmp.Write(data); err == nil {
			err = tmp.commit(dir + "/" + metadataName)
		} else {
			tmp.abort()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("state: write metadata of checkpoint %d: %w", meta.CheckpointID, err)
	}
	s.sizes[dir+"/"+metadataName] = int64(len(data))
	s.names[dir+"/"+metadataName] = true
	s.written += int64(len(data))
	s.register(meta)
	pend := s.pending[meta.CheckpointID]
	delete(s.pending, meta.CheckpointID)
	for p := range pend {
		s.dropIfUnused(p)
	}
	var subsumed []int64
	for len(s.completed) > s.cfg.Retained {
		id := s.completed[0].ID
		s.subsume(id)
		subsumed = append(subsumed, id)
	}
	return subsumed, nil
}

// subsume deletes the oldest retained checkpoint id and the shared files
// only it used. Caller holds mu.
func (s *checkpointStorage) subsume(id int64) {
	i := slices.IndexFunc(s.completed, func(c CheckpointInfo) bool { return c.ID == id })
	info := s.completed[i]
	s.completed = slices.Delete(s.completed, i, i+1)
	s.deleteDir(info.Path)
	for _, p := range s.shared[id] {
		s.sharedRefs[p]--
		s.dropIfUnused(p)
	}
	delete(s.shared, id)
}

// dropIfUnused deletes a shared file no retained checkpoint and no pending
// one refers to. Caller holds mu.
func (s *checkpointStorage) dropIfUnused(p string) {
	if s.sharedRefs[p] > 0 {
		return
	}
	for _, pend := range s.pending {
		if pend[p] {
			return
		}
	}
	delete(s.sharedRefs, p)
	_ = s.blobs.remove(p)
	delete(s.sizes, p)
	delete(s.names, p)
}

func (s *checkpointStorage) deleteDir(dir string) {
	_ = s.blobs.removeDir(dir)
	for p := range s.sizes {
		if strings.HasPrefix(p, dir+"/") {
			delete(s.sizes, p)
			delete(s.names, p)
		}
	}
}

func (s *checkpointStorage) AbortCheckpoint(checkpointID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range []SnapshotTarget{{CheckpointID: checkpointID}, {CheckpointID: checkpointID, Savepoint: true}} {
		dir := s.checkpointDir(t)
		if _, done := s.sizes[dir+"/"+metadataName]; !done {
			s.deleteDir(dir)
		}
	}
	pend := s.pending[checkpointID]
	delete(s.pending, checkpointID)
	for p := range pend {
		s.dropIfUnused(p)
	}
	return nil
}

func (s *checkpointStorage) Checkpoints() []CheckpointInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append(append([]CheckpointInfo{}, s.completed...), s.savepoints...)
	slices.SortFunc(out, func(a, b CheckpointInfo) int { return int(a.ID - b.ID) })
	return out
}

func (s *checkpointStorage) find(id int64) (CheckpointInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range append(append([]CheckpointInfo{}, s.completed...), s.savepoints...) {
		if c.ID == id {
			return c, true
		}
	}
	return CheckpointInfo{}, false
}

func (s *checkpointStorage) Load(checkpointID int64) (*CheckpointMetadata, error) {
	return s.load(checkpointID, true)
}

func (s *checkpointStorage) Peek(checkpointID int64) (*CheckpointMetadata, error) {
	return s.load(checkpointID, false)
}

func (s *checkpointStorage) load(checkpointID int64, count bool) (*CheckpointMetadata, error) {
	info, ok := s.find(checkpointID)
	if !ok {
		return nil, fmt.Errorf("%w: checkpoint %d is not retained by %s storage of job %s", ErrNotFound, checkpointID, s.cfg.Kind, s.cfg.JobID)
	}
	m, err := s.readMetadata(info.Path, count)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %d: %w", checkpointID, err)
	}
	return m, nil
}

func (s *checkpointStorage) Verify(meta *CheckpointMetadata) error {
	buf := make([]byte, 256<<10)
	for _, f := range meta.Files() {
		if err := s.verifyFile(f, buf); err != nil {
			return fmt.Errorf("checkpoint %d: %w", meta.CheckpointID, err)
		}
	}
	return nil
}

func (s *checkpointStorage) verifyFile(f FileRef, buf []byte) error {
	r, err := s.OpenFile(f)
	if err != nil {
		return err
	}
	defer r.Close()
	if r.Size() != f.Size {
		return fmt.Errorf("%w: %s is %d bytes, its checkpoint says %d", ErrCorrupt, f.Path, r.Size(), f.Size)
	}
	var crc uint32
	for off := int64(0); off < f.Size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), f.Size-off)], off)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		off += int64(n)
		if err != nil && !(errors.Is(err, io.EOF) && off == f.Size) {
			return fmt.Errorf("state: read %s: %w", f.Path, err)
		}
	}
	if crc != f.CRC32C {
		return fmt.Errorf("%w: %s fails its CRC32C check (a byte changed)", ErrCorrupt, f.Path)
	}
	return nil
}

func (s *checkpointStorage) DiscardSavepoint(checkpointID int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.savepoints, func(c CheckpointInfo) bool { return c.ID == checkpointID })
	if i < 0 {
		return fmt.Errorf("%w: no savepoint %d", ErrNotFound, checkpointID)
	}
	info := s.savepoints[i]
	s.savepoints = slices.Delete(s.savepoints, i, i+1)
	s.deleteDir(info.Path)
	for _, p := range s.shared[checkpointID] {
		s.sharedRefs[p]--
		s.dropIfUnused(p)
	}
	delete(s.shared, checkpointID)
	return nil
}

func (s *checkpointStorage) DiscardCheckpoint(checkpointID int64) error {
	s.mu.Lock()
	if slices.ContainsFunc(s.completed, func(c CheckpointInfo) bool { return c.ID == checkpointID }) {
		s.subsume(checkpointID)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.DiscardSavepoint(checkpointID)
}

func (s *checkpointStorage) Metrics() StorageMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := StorageMetrics{Kind: s.cfg.Kind, Retained: len(s.completed), Savepoints: len(s.savepoints),
		BytesWritten: s.written, BytesRead: s.read.Load()}
	for p, n := range s.sizes {
		m.TotalBytes += n
		if strings.HasPrefix(p, "shared/") {
			m.SharedFiles++
			m.SharedBytes += n
		}
	}
	return m
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// memBlobs keeps files in memory: the job manager's heap.
type memBlobs struct {
	mu    sync.Mutex
	files map[string][]byte
}

type memTemp struct {
	m   *memBlobs
	buf bytes.Buffer
}

func (m *memBlobs) newTemp(string) (tempBlob, error) { return &memTemp{m: m}, nil }
func (t *memTemp) Write(p []byte) (int, error)       { return t.buf.Write(p) }
func (t *memTemp) abort()                            {}
func (t *memTemp) commit(p string) error {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	t.m.files[p] = t.buf.Bytes()
	return nil
}

func (m *memBlobs) open(p string) (blobReader, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[p]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrMissing, p)
	}
	return memReader{bytes.NewReader(b)}, nil
}

type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }

func (m *memBlobs) remove(p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, p)
	return nil
}

func (m *memBlobs) removeDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.files {
		if strings.HasPrefix(p, dir+"/") {
			delete(m.files, p)
		}
	}
	return nil
}

func (m *memBlobs) exists(p string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.files[p]
	return ok
}

func (m *memBlobs) list() (map[string]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for p, b := range m.files {
		out[p] = int64(len(b))
	}
	return out, nil
}
