package engine

import (
	"fmt"
	"sync"

	"github.com/statelab/statelab/state"
)

// Transaction statuses in the sink's external system.
const (
	TxnOpen      = "OPEN"
	TxnPrepared  = "PREPARED"
	TxnCommitted = "COMMITTED"
	TxnAborted   = "ABORTED"
)

// sinkStore is the external system a sink writes to (a Kafka topic with
// transactions, a database): it lives outside the job and survives crashes.
// Only committed records are visible to readers. Commit is idempotent, as
// Kafka's commit of a transactional id is, so a transaction restored from a
// checkpoint can be committed again safely.
type sinkStore struct {
	mu sync.Mutex
	// chunks hold the committed records in order, sinkChunk records each:
	// appending never copies what is already there, as one growing slice
	// of a million records would at every doubling.
	chunks [][]Record
	kept   int
	// total counts committed records; chunks keep at most maxKeptOutput of
	// them (a long Live run would otherwise grow without bound), and
	// overflow records that some were not kept.
	total    int
	overflow bool
	// counts is the committed output as a multiset. It is brought up to
	// date when someone asks for it (multiset), from the records after
	// counted, so the sink's write path only appends: a comparison pays
	// for the records committed since the last one.
	counts  map[outKey]int
	counted int
	txns    map[string]*txn
	order   []string
	seq     int
}

// maxKeptOutput bounds the committed records a sink store keeps for the
// ground-truth comparison and views (about 48 MiB).
const maxKeptOutput = 1 << 20

// sinkChunk is how many records one chunk of a sink store holds.
const sinkChunk = 8192

// maxKeptTxns bounds the finished transactions kept for views.
const maxKeptTxns = 256

func (s *sinkStore) keep(recs []Record) {
	s.total += len(recs)
	if room := maxKeptOutput - s.kept; room < len(recs) {
		s.overflow = true
		recs = recs[:max(0, room)]
	}
	s.kept += len(recs)
	for len(recs) > 0 {
		if n := len(s.chunks); n == 0 || len(s.chunks[n-1]) == sinkChunk {
			s.chunks = append(s.chunks, make([]Record, 0, sinkChunk))
		}
		last := &s.chunks[len(s.chunks)-1]
		k := min(len(recs), sinkChunk-len(*last))
		*last = append(*last, recs[:k]...)
		recs = recs[k:]
	}
}

// record returns kept record i.
func (s *sinkStore) record(i int) Record { return s.chunks[i/sinkChunk][i%sinkChunk] }

// multiset calls fn with the committed output counts, under the lock.
func (s *sinkStore) multiset(fn func(total int, counts map[outKey]int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ; s.counted < s.kept; s.counted++ {
		r := s.record(s.counted)
		s.counts[outKey{r.Key, r.Text, r.Value}]++
	}
	fn(s.total, s.counts)
}

// prune forgets the oldest finished transactions beyond maxKeptTxns.
func (s *sinkStore) prune() {
	if len(s.order) <= 2*maxKeptTxns {
		return
	}
	keep := s.order[:0]
	finished := 0
	for i := len(s.order) - 1; i >= 0; i-- {
		if t := s.txns[s.order[i]]; t.status == TxnCommitted || t.status == TxnAborted {
			finished++
		}
	}
	drop := finished - maxKeptTxns
	for _, id := range s.order {
		t := s.txns[id]
		if drop > 0 && (t.status == TxnCommitted || t.status == TxnAborted) {
			delete(s.txns, id)
			drop--
			continue
		}
		keep = append(keep, id)
	}
	s.order = keep
}

type txn struct {
	id         string
	task       string
	checkpoint int64
	status     string
	recs       []Record // dropped once the transaction is finished
	n          int
}

func newSinkStore() *sinkStore { return &sinkStore{txns: map[string]*txn{}, counts: map[outKey]int{}} }

// writeCommitted is the at-least-once path: visible at once.
func (s *sinkStore) writeCommitted(recs []Record) {
	s.mu.Lock()
	s.keep(recs)
	s.mu.Unlock()
}

func (s *sinkStore) begin(task string, attempt int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("%s@%d-%d", task, attempt, s.seq)
	s.txns[id] = &txn{id: id, task: task, status: TxnOpen}
	s.order = append(s.order, id)
	s.prune()
	return id
}

func (s *sinkStore) write(id string, recs []Record) {
	s.mu.Lock()
	if t := s.txns[id]; t != nil && t.status == TxnOpen {
		t.recs = append(t.recs, recs...)
		t.n += len(recs)
	}
	s.mu.Unlock()
}

func (s *sinkStore) prepare(id string, checkpoint int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.txns[id]
	if t == nil || t.status != TxnOpen {
		return 0
	}
	t.status, t.checkpoint = TxnPrepared, checkpoint
	return t.n
}

// commit makes a prepared transaction's records visible; committing twice
// does nothing. It reports the records made visible.
func (s *sinkStore) commit(id string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.txns[id]
	if t == nil || t.status != TxnPrepared {
		return 0, false
	}
	t.status = TxnCommitted
	s.keep(t.recs)
	t.recs = nil
	return t.n, true
}

// abortAfterRestore aborts every open transaction and every prepared one
// that the restored checkpoint does not hold (keep): nobody will ever commit
// them, as Kafka fences the transactional ids of a failed attempt. only, when
// set, limits it to the transactions of those sink subtasks.
func (s *sinkStore) abortAfterRestore(keep map[string]bool, only map[string]bool) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []Event
	for _, id := range s.order {
		t := s.txns[id]
		if only != nil && !only[t.task] {
			continue // a region restart: another region's sink subtask keeps its transactions
		}
		if t.status == TxnOpen || (t.status == TxnPrepared && !keep[id]) {
			t.status = TxnAborted
			t.recs = nil
			evs = append(evs, Event{Kind: EvTxnAborted, Transaction: id, Task: t.task, Records: t.n,
				Message: fmt.Sprintf("transaction %s was aborted; its %d records will be written again after the restore", id, t.n)})
		}
	}
	return evs
}

// view returns committed records and transactions for the snapshot.
func (s *sinkStore) view(withRecords bool) (committed []Record, txns []TransactionView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if withRecords {
		committed = make([]Record, 0, s.kept)
		for _, c := range s.chunks {
			committed = append(committed, c...)
		}
	}
	for _, id := range s.order {
		t := s.txns[id]
		if t.status == TxnCommitted {
			continue
		}
		txns = append(txns, TransactionView{ID: t.id, Task: t.task, Checkpoint: t.checkpoint, Status: t.status, Records: t.n})
	}
	return committed, txns
}

func (s *sinkStore) committedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// openOrPrepared reports whether any transaction still waits for a commit.
func (s *sinkStore) pendingTxns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.txns {
		if t.status == TxnPrepared || (t.status == TxnOpen && t.n > 0) {
			n++
		}
	}
	return n
}

// pendingTxn is one pre-committed transaction in the sink's operator state.
type pendingTxn struct {
	ID         string `json:"id"`
	Checkpoint int64  `json:"checkpoint"`
}

// sinkLogic writes to a sinkStore. At-least-once writes each record at
// once. Exactly-once is Flink's TwoPhaseCommitSinkFunction: records go into
// an open transaction; at the barrier of checkpoint n the transaction is
// pre-committed and its id kept in operator ListState; when n completes,
// every pending transaction up to n is committed; on restore the pending
// transactions of the restored checkpoint are committed (they belong to a
// completed checkpoint), and everything else of the failed attempt is aborted.
type sinkLogic struct {
	noState
	store       *sinkStore
	exactlyOnce bool
	current     string
	currentN    int
	pending     []pendingTxn
	list        state.ListState[pendingTxn]
}

func (s *sinkLogic) open(t *subtask, r *restoreSpec, info *RestoreInfo) error {
	if !s.exactlyOnce {
		return nil
	}
	l, err := state.OperatorList(t.opBackend, "pending-transactions", state.JSONCodec[pendingTxn]())
	if err != nil {
		return fmt.Errorf("register pending transactions state: %w", err)
	}
	s.list = l
	if r != nil {
		restored, err := l.Get()
		if err != nil {
			return fmt.Errorf("read pending transactions: %w", err)
		}
		for _, p := range restored {
			n, ok := s.store.commit(p.ID)
			info.Transactions = append(info.Transactions, p.ID)
			if ok {
				t.event(Event{Kind: EvTxnCommitted, Transaction: p.ID, Checkpoint: p.Checkpoint, Records: n,
					Message: fmt.Sprintf("%s committed transaction %s of checkpoint %d on restore (%d records)", t.name, p.ID, p.Checkpoint, n)})
			}
		}
		if err := l.Clear(); err != nil {
			return err
		}
	}
	s.current = s.store.begin(t.name, t.ex.attempt)
	return nil
}

func (s *sinkLogic) process(t *subtask, _ int, recs []Record) error {
	if !s.exactlyOnce {
		s.store.writeCommitted(recs)
	} else {
		s.store.write(s.current, recs)
		s.currentN += len(recs)
	}
	if t.verbose {
		t.event(Event{Kind: EvSinkWrite, Records: len(recs), Transaction: s.current,
			Message: sinkWriteMessage(t.name, len(recs), s.current)})
	}
	return nil
}

func sinkWriteMessage(task string, n int, txn string) string {
	if txn == "" {
		return fmt.Sprintf("%s wrote %d records, visible at once", task, n)
	}
	return fmt.Sprintf("%s wrote %d records into transaction %s", task, n, txn)
}

func (s *sinkLogic) snapshot(t *subtask, b barrier) error {
	if !s.exactlyOnce {
		return nil
	}
	if s.currentN > 0 {
		n := s.store.prepare(s.current, b.ID)
		s.pending = append(s.pending, pendingTxn{ID: s.current, Checkpoint: b.ID})
		t.event(Event{Kind: EvTxnPreCommitted, Transaction: s.current, Checkpoint: b.ID, Records: n,
			Message: fmt.Sprintf("%s pre-committed transaction %s with %d records for checkpoint %d", t.name, s.current, n, b.ID)})
		s.current = s.store.begin(t.name, t.ex.attempt)
		s.currentN = 0
	}
	return s.list.Update(s.pending)
}

func (s *sinkLogic) notifyComplete(t *subtask, id int64) error {
	if !s.exactlyOnce {
		return nil
	}
	keep := s.pending[:0]
	for _, p := range s.pending {
		if p.Checkpoint > id {
			keep = append(keep, p)
			continue
		}
		if n, ok := s.store.commit(p.ID); ok {
			t.event(Event{Kind: EvTxnCommitted, Transaction: p.ID, Checkpoint: p.Checkpoint, Records: n,
				Message: fmt.Sprintf("%s committed transaction %s (%d records) after checkpoint %d completed", t.name, p.ID, n, id)})
		}
	}
	s.pending = keep
	return nil
}
