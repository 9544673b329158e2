package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/statelab/statelab/state"
)

// operatorLogic is what one built-in operator does inside a subtask. Like
// the subtask it has no goroutine, clock or randomness; it emits through
// t.emit and reads and writes state through t.keyed and t.opBackend.
type operatorLogic interface {
	// open registers state (restored state is already in the backends) and
	// notes what was restored in info.
	open(t *subtask, r *restoreSpec, info *RestoreInfo) error
	// process handles records from input edge input (0 = first input edge).
	process(t *subtask, input int, recs []Record) error
	// watermark is called when the subtask's event time advances.
	watermark(t *subtask, wm int64) error
	// snapshot runs at the barrier, before state is snapshotted: it writes
	// what lives outside state backends into operator state.
	snapshot(t *subtask, b barrier) error
	// notifyComplete runs when checkpoint id has completed.
	notifyComplete(t *subtask, id int64) error
	close()
}

func newOperatorLogic(t *subtask) operatorLogic {
	o := t.op.opts
	switch t.op.spec.Kind {
	case KindSource:
		return &sourceLogic{topic: t.c.topics[t.op.spec.ID], opts: o}
	case KindTokenizer:
		return &tokenizer{}
	case KindMap:
		return &mapper{fn: o.Fn}
	case KindFilter:
		return &filter{exclude: o.Exclude, minLen: o.MinLength}
	case KindCount:
		return &keyedAggregate{name: "count", count: true}
	case KindSum:
		return &keyedAggregate{name: "sum"}
	case KindWindowCount:
		return &windowCount{size: o.WindowSize.Milliseconds()}
	case KindBroadcastFilter:
		return &broadcastFilter{}
	case KindTally:
		return &tally{}
	case KindAlerts:
		return &alerts{timeout: o.Timeout.Milliseconds()}
	case KindSink:
		return &sinkLogic{store: t.c.sinks[t.op.spec.ID], exactlyOnce: o.Semantics == SinkExactlyOnce}
	}
	panic("engine: no logic for operator kind " + t.op.spec.Kind)
}

// noState is embedded by operators without hooks of their own.
type noState struct{}

func (noState) open(*subtask, *restoreSpec, *RestoreInfo) error { return nil }
func (noState) watermark(*subtask, int64) error                 { return nil }
func (noState) snapshot(*subtask, barrier) error                { return nil }
func (noState) notifyComplete(*subtask, int64) error            { return nil }
func (noState) close()                                          {}

// --- source ----------------------------------------------------------------

// PartitionOffset is also the element of the source's offsets ListState.
type partitionCursor struct {
	partition int
	offset    int64
	lastTS    int64
	read      bool
}

// sourceLogic reads its partitions of a topic. The partitions and offsets it
// owns live in operator ListState "offsets" (split-distribute, or union when
// options.offsets is union), so a rescale redistributes them as Flink does.
type sourceLogic struct {
	noState
	topic   *topic
	opts    operatorOptions
	parts   []partitionCursor
	next    int
	offsets state.ListState[PartitionOffset]
	stopped bool
	// wmSent is the last watermark emitted.
	wmSent   int64
	nextPoll int64 // virtual time before which a rate-limited source waits (ns)
	// wmDue is when the Live driver's source emits its next periodic
	// watermark (virtual ns; watermarkDue).
	wmDue int64
}

func (s *sourceLogic) open(t *subtask, r *restoreSpec, info *RestoreInfo) error {
	var err error
	if s.opts.OffsetsMode == OffsetsUnion {
		s.offsets, err = state.UnionList(t.opBackend, "offsets", state.JSONCodec[PartitionOffset]())
	} else {
		s.offsets, err = state.OperatorList(t.opBackend, "offsets", state.JSONCodec[PartitionOffset]())
	}
	if err != nil {
		return fmt.Errorf("register offsets state: %w", err)
	}
	s.wmSent = MinWatermark
	p := t.op.parallelism
	if r == nil {
		// Fresh start: partition k goes to subtask k mod parallelism.
		for k := t.index; k < s.topic.partitions; k += p {
			s.parts = append(s.parts, partitionCursor{partition: k, lastTS: MinWatermark})
		}
	} else {
		restored, err := s.offsets.Get()
		if err != nil {
			return fmt.Errorf("read restored offsets: %w", err)
		}
		for _, po := range restored {
			if s.opts.OffsetsMode == OffsetsUnion && po.Partition%p != t.index {
				continue // union state: every subtask sees all offsets and keeps its own
			}
			s.parts = append(s.parts, partitionCursor{partition: po.Partition, offset: po.Offset, lastTS: MinWatermark})
		}
		slices.SortFunc(s.parts, func(a, b partitionCursor) int { return a.partition - b.partition })
	}
	for _, pc := range s.parts {
		info.Offsets = append(info.Offsets, PartitionOffset{Partition: pc.partition, Offset: pc.offset})
		s.topic.setProgress(pc.partition, t.index, pc.offset)
	}
	return s.storeOffsets()
}

// storeOffsets writes the current offsets into the operator ListState.
func (s *sourceLogic) storeOffsets() error {
	list := make([]PartitionOffset, len(s.parts))
	for i, pc := range s.parts {
		list[i] = PartitionOffset{Partition: pc.partition, Offset: pc.offset}
	}
	return s.offsets.Update(list)
}

func (s *sourceLogic) process(*subtask, int, []Record) error { return nil }

func (s *sourceLogic) snapshot(*subtask, barrier) error { return s.storeOffsets() }

// pollable reports whether a poll would read a record or emit a watermark.
func (s *sourceLogic) pollable() bool {
	if s.stopped {
		return false
	}
	for _, pc := range s.parts {
		if pc.offset < s.topic.end(pc.partition) {
			return true
		}
	}
	return s.watermarkNow() > s.wmSent
}

// watermarkNow is the source subtask's watermark: the lowest of its
// partitions' watermarks (Flink's per-partition watermarks). A partition's
// is that of WatermarkStrategy.forMonotonousTimestamps, Flink's
// BoundedOutOfOrdernessWatermarks with no delay: onPeriodicEmit emits the
// highest timestamp read minus 1, as a later record may carry that
// timestamp again, and Long.MIN_VALUE before any record. A partition read
// to its end no longer holds it back; when all are, it is MaxWatermark.
func (s *sourceLogic) watermarkNow() int64 {
	wm := MaxWatermark
	for _, pc := range s.parts {
		if pc.offset >= s.topic.end(pc.partition) {
			continue
		}
		if !pc.read || pc.lastTS == MinWatermark {
			return MinWatermark
		}
		wm = min(wm, pc.lastTS-1)
	}
	return wm
}

// poll reads up to batch records from the next partition that has data.
func (s *sourceLogic) poll(t *subtask, batch int) error {
	for range s.parts {
		pc := &s.parts[s.next]
		s.next = (s.next + 1) % len(s.parts)
		end := s.topic.end(pc.partition)
		if pc.offset >= end {
			continue
		}
		b := newBatch()
		b.fill(s.topic, pc.partition, pc.offset, batch)
		first := pc.offset
		pc.lastTS = max(pc.lastTS, b.latestTimestamp(s.topic, pc.partition))
		n := len(b.recs)
		if oe := t.soleForward(); oe != nil && oe.pending[0] == nil {
			// One forward output with nothing pending: the batch read is
			// the batch sent, without copying each record into another.
			oe.pending[0] = b
			t.emitted += int64(n)
			b = nil
		} else {
			for _, r := range b.recs {
				t.emit(r)
			}
		}
		pc.read = true
		pc.offset += int64(n)
		s.topic.setProgress(pc.partition, t.index, pc.offset)
		t.recordsIn.Add(int64(n))
		if t.verbose {
			t.event(Event{Kind: EvSourceRead, Partition: pc.partition, Offset: first, Records: n,
				Message: fmt.Sprintf("%s read %d records from partition %d at offsets %d..%d", t.name, n, pc.partition, first, pc.offset-1)})
		}
		if s.opts.Rate > 0 {
			s.nextPoll = int64(t.now) + int64(float64(n)/s.opts.Rate*1e9)
		}
		b.release()
		break
	}
	t.flush()
	if wm := s.watermarkNow(); wm > s.wmSent && s.watermarkDue(t, wm) {
		s.wmSent = wm
		t.wm.Store(wm)
		t.broadcastElement(element{kind: elemWatermark, watermark: wm})
		if t.verbose {
			t.event(Event{Kind: EvWatermark, Watermark: wm, Message: fmt.Sprintf("%s emitted watermark %s", t.name, fmtWatermark(wm))})
		}
	}
	return nil
}

// autoWatermarkInterval is how often a source on the Live driver emits a
// watermark: Flink's pipeline.auto-watermark-interval (PipelineOptions.
// AUTO_WATERMARK_INTERVAL, 200 ms by default), at which a periodic
// WatermarkGenerator's onPeriodicEmit runs.
const autoWatermarkInterval = 200 * time.Millisecond

// watermarkDue reports whether the source emits watermark wm now. The
// Stepper emits one after every poll that advances it, so each step shows
// event time moving; the Live driver emits one every autoWatermarkInterval
// of job time, as Flink does, and the end of input (MaxWatermark) at once.
// At full speed a watermark per poll was an element per 64 records on
// every channel of the job, broadcast to every downstream subtask (issue
// 22: 0.43x -> 0.53x the bare word count's records per CPU second at p = 2).
// A source with nothing left to read that holds a watermark back polls
// again when it is due.
func (s *sourceLogic) watermarkDue(t *subtask, wm int64) bool {
	now := int64(t.now)
	if !t.c.measure || wm == MaxWatermark || now >= s.wmDue {
		s.wmDue = now + int64(autoWatermarkInterval)
		return true
	}
	for _, pc := range s.parts {
		if pc.offset < s.topic.end(pc.partition) {
			return false
		}
	}
	s.nextPoll = max(s.nextPoll, s.wmDue)
	return false
}

// --- stateless ---------------------------------------------------------------

// tokenizer is Flink's word-count flatMap: a line becomes one record per
// word, lower-cased, with the line's timestamp.
type tokenizer struct{ noState }

func (tokenizer) process(t *subtask, _ int, recs []Record) error {
	for _, r := range recs {
		ts := r.Timestamp
		tokenize(r.Text, func(w string) { t.emit(Record{Key: w, Value: 1, Timestamp: ts}) })
	}
	return nil
}

// tokenize calls fn with every word of s, lower-cased; words are separated
// by ASCII white space.
func tokenize(s string, fn func(string)) {
	for i := 0; i < len(s); {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		if j > i {
			fn(lower(s[i:j]))
		}
		i = j
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

type mapper struct {
	noState
	fn string
}

func (m *mapper) process(t *subtask, _ int, recs []Record) error {
	for _, r := range recs {
		switch m.fn {
		case "upper":
			r.Key = strings.ToUpper(r.Key)
		case "lower":
			r.Key = strings.ToLower(r.Key)
		case "length":
			r.Value = int64(utf8.RuneCountInString(r.Key))
		}
		t.emit(r)
	}
	return nil
}

type filter struct {
	noState
	exclude []string
	minLen  int
}

func (f *filter) process(t *subtask, _ int, recs []Record) error {
	for _, r := range recs {
		if utf8.RuneCountInString(r.Key) < f.minLen || slices.Contains(f.exclude, r.Key) {
			continue
		}
		t.emit(r)
	}
	return nil
}

// --- keyed -------------------------------------------------------------------

// keyedAggregate is keyed count (one per record) or keyed sum (of Value),
// kept in ValueState[int64]; each record emits the key's new total.
type keyedAggregate struct {
	noState
	name  string
	count bool
	value state.ValueState[int64]
}

func (a *keyedAggregate) open(t *subtask, _ *restoreSpec, _ *RestoreInfo) error {
	v, err := state.Value(t.keyed, a.name, state.Int64Codec, t.stateOptions()...)
	if err != nil {
		return fmt.Errorf("register %s state: %w", a.name, err)
	}
	a.value = v
	return nil
}

func (a *keyedAggregate) process(t *subtask, _ int, recs []Record) error {
	var ups []StateUpdate
	for i, r := range recs {
		kg, err := t.setKeyOf(recs, i)
		if err != nil {
			return err
		}
		cur, _, err := a.value.Value()
		if err != nil {
			return err
		}
		if a.count {
			cur++
		} else {
			cur += r.Value
		}
		if err := a.value.Update(cur); err != nil {
			return err
		}
		t.updates++
		if t.verbose {
			ups = append(ups, StateUpdate{Key: r.Key, KeyGroup: kg, State: a.name, Value: cur})
		}
		t.emit(Record{Key: r.Key, Value: cur, Timestamp: r.Timestamp})
	}
	if t.verbose && len(ups) > 0 {
		t.event(Event{Kind: EvStateUpdated, Updates: ups, Records: len(ups),
			Message: fmt.Sprintf("%s updated %s for %d keys", t.name, a.name, len(ups))})
	}
	return nil
}

// windowCount counts records per key in tumbling event-time windows
// (MapState window start -> count) and emits each window's count when the
// watermark passes its end, as the Operations Playground's click event
// count does. Like Flink's WindowOperator it registers one event-time timer
// per (key, window) at the window's max timestamp in its timer service
// "window-timers", whose timers are keyed state: they are checkpointed,
// restored and rescaled with their key groups.
type windowCount struct {
	noState
	size    int64
	windows state.MapState[int64, int64]
	timers  *state.TimerService
	late    int64
	nsBuf   []byte
}

func (w *windowCount) open(t *subtask, _ *restoreSpec, _ *RestoreInfo) error {
	m, err := state.Map(t.keyed, "windows", state.Int64Codec, state.Int64Codec, t.stateOptions()...)
	if err != nil {
		return fmt.Errorf("register windows state: %w", err)
	}
	w.windows = m
	// A restored backend already holds the window timers: the service
	// rebuilds its queues from them.
	w.timers, err = state.NewTimerService(t.keyed, "window-timers")
	if err != nil {
		return fmt.Errorf("register window timers: %w", err)
	}
	return nil
}

func (w *windowCount) timerService() *state.TimerService { return w.timers }

// windowNamespace is a window's timer namespace: its start in decimal, so
// the inspector shows it as it is (Flink's namespace is the TimeWindow).
func (w *windowCount) windowNamespace(start int64) string {
	w.nsBuf = strconv.AppendInt(w.nsBuf[:0], start, 10)
	return string(w.nsBuf)
}

func (w *windowCount) process(t *subtask, _ int, recs []Record) error {
	var ups []StateUpdate
	wm := t.wm.Load()
	for _, r := range recs {
		start := r.Timestamp - ((r.Timestamp%w.size)+w.size)%w.size
		end := start + w.size - 1
		if end <= wm {
			w.late++ // the window has fired already: a late record is dropped
			continue
		}
		kg, err := t.setKey(r.Key)
		if err != nil {
			return err
		}
		n, _, err := w.windows.Get(start)
		if err != nil {
			return err
		}
		n++
		if err := w.windows.Put(start, n); err != nil {
			return err
		}
		t.updates++
		if err := w.timers.Register(state.EventTime, w.windowNamespace(start), end); err != nil {
			return err
		}
		if t.verbose {
			ups = append(ups, StateUpdate{Key: r.Key, KeyGroup: kg, State: "windows", Value: n, Window: windowLabel(start, w.size)})
		}
	}
	if t.verbose && len(ups) > 0 {
		t.event(Event{Kind: EvStateUpdated, Updates: ups, Records: len(ups),
			Message: fmt.Sprintf("%s counted %d records into their windows", t.name, len(ups))})
	}
	return nil
}

func (w *windowCount) watermark(t *subtask, wm int64) error {
	return w.timers.Advance(state.EventTime, wm, func(tm state.Timer) error {
		start, err := strconv.ParseInt(tm.Namespace, 10, 64)
		if err != nil {
			return fmt.Errorf("window timer of %q: %w", tm.Key, err)
		}
		n, ok, err := w.windows.Get(start)
		if err != nil || !ok {
			return err
		}
		if err := w.windows.Remove(start); err != nil {
			return err
		}
		label := windowLabel(start, w.size)
		t.emit(Record{Key: tm.Key, Value: n, Text: label, Timestamp: tm.Timestamp})
		if t.verbose {
			t.event(Event{Kind: EvWindowFired, Key: tm.Key, Window: label, Value: n,
				Message: fmt.Sprintf("%s fired window %s of %s: %d", t.name, label, tm.Key, n)})
		}
		return nil
	})
}

// --- broadcast state ----------------------------------------------------------

// broadcastFilter keeps rules from its broadcast input in BroadcastState
// ("block <word>" / "allow <word>") and drops main-input records whose key is
// blocked. Every subtask sees every rule, so every copy of the state is equal.
type broadcastFilter struct {
	noState
	rules state.MapState[string, string]
	bcast int // input index of the broadcast edge
}

func (f *broadcastFilter) open(t *subtask, _ *restoreSpec, _ *RestoreInfo) error {
	m, err := state.Broadcast(t.opBackend, "rules", state.StringCodec, state.StringCodec)
	if err != nil {
		return fmt.Errorf("register rules state: %w", err)
	}
	f.rules = m
	for i, e := range t.op.inEdges {
		if t.c.spec.Edges[e].Partitioner == Broadcast {
			f.bcast = i
		}
	}
	return nil
}

func (f *broadcastFilter) process(t *subtask, input int, recs []Record) error {
	for _, r := range recs {
		if input == f.bcast {
			verb, word, _ := strings.Cut(strings.TrimSpace(r.Text), " ")
			word = lower(strings.TrimSpace(word))
			if word == "" {
				word = r.Key
			}
			switch strings.ToLower(verb) {
			case "block":
				if err := f.rules.Put(word, "block"); err != nil {
					return err
				}
			case "allow":
				if err := f.rules.Remove(word); err != nil {
					return err
				}
			}
			continue
		}
		blocked, err := f.rules.Contains(r.Key)
		if err != nil {
			return err
		}
		if !blocked {
			t.emit(r)
		}
	}
	return nil
}

// --- union list state ---------------------------------------------------------

// tallyEntry is one subtask's share of the records a tally operator has seen.
type tallyEntry struct {
	Subtask int   `json:"subtask"`
	Count   int64 `json:"count"`
}

// tally forwards records and keeps how many it has seen in union ListState:
// after a restore every subtask receives every old subtask's entry, so each
// knows the job-wide total (the pattern Flink's Kafka consumer used for its
// offsets).
type tally struct {
	noState
	list     state.ListState[tallyEntry]
	baseline int64 // job-wide total at restore (kept by subtask 0)
	seen     int64
	restored int64 // what every subtask learned from the union
}

func (tl *tally) open(t *subtask, r *restoreSpec, _ *RestoreInfo) error {
	l, err := state.UnionList(t.opBackend, "tallies", state.JSONCodec[tallyEntry]())
	if err != nil {
		return fmt.Errorf("register tallies state: %w", err)
	}
	tl.list = l
	if r != nil {
		all, err := l.Get()
		if err != nil {
			return err
		}
		for _, e := range all {
			tl.restored += e.Count
		}
		if t.index == 0 {
			tl.baseline = tl.restored
		}
	}
	return tl.store(t)
}

func (tl *tally) store(t *subtask) error {
	return tl.list.Update([]tallyEntry{{Subtask: t.index, Count: tl.baseline + tl.seen}})
}

func (tl *tally) process(t *subtask, _ int, recs []Record) error {
	for _, r := range recs {
		tl.seen++
		t.emit(r)
	}
	return nil
}

func (tl *tally) snapshot(t *subtask, _ barrier) error { return tl.store(t) }
