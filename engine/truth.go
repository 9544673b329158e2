package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Comparison is a sink's committed output against the ground truth computed
// from the source topics (every record read exactly once, no failure).
type Comparison struct {
	Sink      string `json:"sink"`
	Semantics string `json:"semantics"`
	// Supported is false when the job has no well-defined ground truth (a
	// broadcast-filter's result depends on when rules arrive) or the input
	// or output is too large to keep (Reason says which).
	Supported bool   `json:"supported"`
	Reason    string `json:"reason,omitempty"`
	Mode      string `json:"mode"` // "exact": every output record counted; "final": last value per key
	Keys      int    `json:"keys"`
	// Records is the number of source records the truth was computed from.
	Records   int64 `json:"records"`
	Expected  int   `json:"expected"`
	Committed int   `json:"committed"`
	// Duplicates are output records committed more often than expected
	// (allowed for at-least-once sinks), Losses are expected ones missing,
	// Unexpected are committed records the truth does not contain.
	Duplicates       []Diff `json:"duplicates"`
	Losses           []Diff `json:"losses"`
	Unexpected       []Diff `json:"unexpected"`
	DuplicateRecords int    `json:"duplicateRecords"`
	LostRecords      int    `json:"lostRecords"`
	// Truncated is set when the lists above were cut (Snapshot keeps at
	// most snapshotDiffs of each; Compare returns them all).
	Truncated bool `json:"truncated,omitempty"`
	// ExactlyOnce: nothing lost, nothing duplicated, nothing unexpected.
	ExactlyOnce bool `json:"exactlyOnce"`
	// AtLeastOnce: nothing lost, nothing unexpected.
	AtLeastOnce bool `json:"atLeastOnce"`
	// IgnoresTTL is set when an operator upstream of the sink has state
	// TTL: the truth is computed as if no state ever expired. Flink's TTL
	// runs on processing time (StateTtlConfig supports no other), so what
	// expires depends on when each record is processed — the pace of the
	// run, and a crash's replay after the restore — not on the input alone;
	// an expired value shows as a difference.
	IgnoresTTL bool `json:"ignoresTTL,omitempty"`
}

// Diff is one output record whose count differs from the truth.
type Diff struct {
	Key       string `json:"key"`
	Window    string `json:"window,omitempty"`
	Value     int64  `json:"value"`
	Expected  int    `json:"expected"`
	Committed int    `json:"committed"`
}

func (d Diff) String() string {
	k := d.Key
	if d.Window != "" {
		k += " " + d.Window
	}
	return fmt.Sprintf("%s=%d (committed %d, expected %d)", k, d.Value, d.Committed, d.Expected)
}

type outKey struct {
	key    string
	window string
	value  int64
}

// truth is the expected output of one sink.
type truth struct {
	supported bool
	reason    string
	// ignoresTTL: an operator upstream of the sink has state TTL, which
	// the truth leaves out (Comparison.IgnoresTTL).
	ignoresTTL bool
	final      bool // compare the last value per key (sums)
	exact      map[outKey]int
	finals     map[string]int64
	records    int64
	// keys and expected are the distinct keys and the records of exact.
	keys, expected int
}

// compare checks every sink.
func (c *core) compare() ([]Comparison, error) {
	var out []Comparison
	for _, o := range c.spec.Operators {
		if o.Kind != KindSink {
			continue
		}
		out = append(out, c.compareFull(o.ID, c.groundTruth(o.ID)))
	}
	return out, nil
}

// compareFull compares one sink and lists every difference.
func (c *core) compareFull(id string, tr truth) Comparison {
	return c.compareKeep(id, tr, -1)
}

// compareKeep compares one sink, keeping the first keep entries of each
// list in order (every entry when keep < 0; the counts are always whole).
func (c *core) compareKeep(id string, tr truth, keep int) Comparison {
	var cmp Comparison
	c.sinks[id].multiset(func(total int, got map[outKey]int) { cmp = c.compareWith(id, tr, total, got, keep) })
	return cmp
}

// snapshotDiffs is how many entries of each list of a Comparison a
// Snapshot shows.
const snapshotDiffs = 50

// compareSink compares one sink for a Snapshot, with at most snapshotDiffs
// entries per list, reusing the last result while neither the topics nor
// the committed output changed. Only the first entries are ever listed:
// while a run is under way the expected output holds every record its
// sources will send, so the full list of losses is most of the truth (tens
// of thousands of entries, megabytes) — built at every snapshot of every
// watched session, and kept in the cache, which every fork and time-travel
// image copied, for 50 lines of a view.
func (c *core) compareSink(id string) (Comparison, error) {
	tr := c.groundTruth(id)
	store := c.sinks[id]
	key := [2]int64{tr.records, int64(store.committedCount())}
	if e, ok := c.cmpCache[id]; ok && e.key == key {
		return e.cmp, nil
	}
	cmp := c.compareKeep(id, tr, snapshotDiffs)
	if c.cmpCache == nil {
		c.cmpCache = map[string]cmpEntry{}
	}
	c.cmpCache[id] = cmpEntry{key: key, cmp: cmp}
	return cmp, nil
}

type cmpEntry struct {
	key [2]int64
	cmp Comparison
}

// truncated returns cmp with at most n entries per list.
func (cmp Comparison) truncated(n int) Comparison {
	cut := func(d []Diff) []Diff {
		if len(d) > n {
			cmp.Truncated = true
			return d[:n:n]
		}
		return d
	}
	cmp.Duplicates, cmp.Losses, cmp.Unexpected = cut(cmp.Duplicates), cut(cmp.Losses), cut(cmp.Unexpected)
	return cmp
}

func (c *core) compareWith(id string, tr truth, total int, got map[outKey]int, keep int) Comparison {
	o, _ := c.spec.Operator(id)
	opts, _ := parseOptions(o)
	store := c.sinks[id]
	cmp := Comparison{Sink: id, Semantics: opts.Semantics, Supported: tr.supported, Reason: tr.reason, Records: tr.records,
		IgnoresTTL: tr.ignoresTTL, Committed: total, Duplicates: []Diff{}, Losses: []Diff{}, Unexpected: []Diff{}}
	if tr.supported && store.overflow {
		cmp.Supported, cmp.Reason = false, fmt.Sprintf("the sink committed more than %d records; StateLab keeps that many for comparison", maxKeptOutput)
	}
	if !cmp.Supported {
		cmp.Mode = "none"
		return cmp
	}
	dups, losses, unexpected := diffList{keep: keep}, diffList{keep: keep}, diffList{keep: keep}
	if !tr.final {
		cmp.Mode = "exact"
		cmp.Keys, cmp.Expected = tr.keys, tr.expected
		for k, n := range tr.exact {
			if g := got[k]; g < n {
				losses.add(Diff{Key: k.key, Window: k.window, Value: k.value, Expected: n, Committed: g})
				cmp.LostRecords += n - g
			} else if g > n {
				dups.add(Diff{Key: k.key, Window: k.window, Value: k.value, Expected: n, Committed: g})
				cmp.DuplicateRecords += g - n
			}
		}
		for k, g := range got {
			if tr.exact[k] == 0 {
				unexpected.add(Diff{Key: k.key, Window: k.window, Value: k.value, Committed: g})
			}
		}
	} else {
		cmp.Mode = "final"
		cmp.Keys = len(tr.finals)
		cmp.Expected = len(tr.finals)
		best := map[string]int64{}
		for k, g := range got {
			if v, ok := best[k.key]; !ok || k.value > v {
				best[k.key] = k.value
			}
			if g > 1 {
				dups.add(Diff{Key: k.key, Value: k.value, Expected: 1, Committed: g})
				cmp.DuplicateRecords += g - 1
			}
		}
		for k, want := range tr.finals {
			v, ok := best[k]
			switch {
			case !ok || v < want:
				losses.add(Diff{Key: k, Value: want, Expected: 1})
				cmp.LostRecords++
			case v > want:
				unexpected.add(Diff{Key: k, Value: v, Committed: 1})
			}
		}
	}
	cmp.Duplicates, cmp.Losses, cmp.Unexpected = dups.list(), losses.list(), unexpected.list()
	cmp.Truncated = dups.cut || losses.cut || unexpected.cut
	cmp.AtLeastOnce = losses.n == 0 && unexpected.n == 0
	cmp.ExactlyOnce = cmp.AtLeastOnce && dups.n == 0
	return cmp
}

// diffList collects the differences of one kind in sortDiffs' order,
// keeping only the first keep of them when keep >= 0 (without building the
// whole list first), and counts them all.
type diffList struct {
	keep int
	d    []Diff
	n    int
	cut  bool
}

func (l *diffList) add(d Diff) {
	l.n++
	if l.keep < 0 {
		l.d = append(l.d, d)
		return
	}
	i, _ := slices.BinarySearchFunc(l.d, d, compareDiffs)
	if len(l.d) == l.keep {
		l.cut = true
		if i == len(l.d) {
			return // after every kept one
		}
		l.d = l.d[:len(l.d)-1]
	}
	l.d = slices.Insert(l.d, i, d)
}

// list is the kept differences in order (never nil).
func (l *diffList) list() []Diff {
	if l.keep < 0 {
		sortDiffs(l.d)
	}
	if l.d == nil {
		return []Diff{}
	}
	return l.d
}

func sortDiffs(d []Diff) { slices.SortFunc(d, compareDiffs) }

// compareDiffs orders differences by key, window and value.
func compareDiffs(a, b Diff) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := strings.Compare(a.Window, b.Window); c != 0 {
		return c
	}
	switch {
	case a.Value < b.Value:
		return -1
	case a.Value > b.Value:
		return 1
	}
	return 0
}

// maxTruthRecords bounds the source records the ground truth is computed from.
const maxTruthRecords = 5_000_000

// topicRecords is how many records the source topics hold.
func (c *core) topicRecords() int64 {
	var n int64
	for _, tp := range c.topics {
		for p := range tp.partitions {
			n += tp.end(p)
		}
	}
	return n
}

// groundTruth evaluates the job graph once, sequentially, over every record
// of every source topic: what the sink would receive if nothing failed.
func (c *core) groundTruth(sink string) truth {
	// The truth only changes when records are added to a topic.
	size := c.topicRecords()
	if cached, ok := c.truthCache[sink]; ok && cached.records == size {
		return cached
	}
	if size > maxTruthRecords {
		return truth{records: size, reason: fmt.Sprintf("the sources hold %d records; StateLab computes the ground truth for at most %d", size, maxTruthRecords)}
	}
	tr := c.evalTruth(sink)
	if c.truthCache == nil {
		c.truthCache = map[string]truth{}
	}
	c.truthCache[sink] = tr
	return tr
}

func (c *core) evalTruth(sink string) truth {
	tr := truth{supported: true}
	// Records flowing out of each operator, in topological order, and
	// whether an operator with state TTL lies on their way.
	outs := map[string][]Record{}
	ttl := map[string]bool{}
	for _, i := range c.spec.topoOrder() {
		o := &c.spec.Operators[i]
		opts, _ := parseOptions(o)
		var in []Record
		ttl[o.ID] = opts.TTL != nil
		for _, e := range c.spec.Edges {
			if e.To == o.ID {
				in = append(in, outs[e.From]...)
				ttl[o.ID] = ttl[o.ID] || ttl[e.From]
			}
		}
		var out []Record
		switch o.Kind {
		case KindSource:
			tp := c.topics[o.ID]
			for p := range tp.partitions {
				n := tp.end(p)
				tr.records += n
				out = tp.read(out, p, 0, int(n))
			}
		case KindTokenizer:
			for _, r := range in {
				tokenize(r.Text, func(w string) {
					out = append(out, Record{Key: w, Value: 1, Timestamp: r.Timestamp})
				})
			}
		case KindMap:
			for _, r := range in {
				switch opts.Fn {
				case "upper":
					r.Key = strings.ToUpper(r.Key)
				case "lower":
					r.Key = strings.ToLower(r.Key)
				case "length":
					r.Value = int64(len([]rune(r.Key)))
				}
				out = append(out, r)
			}
		case KindFilter:
			for _, r := range in {
				if len([]rune(r.Key)) >= opts.MinLength && !slices.Contains(opts.Exclude, r.Key) {
					out = append(out, r)
				}
			}
		case KindTally:
			out = in
		case KindCount:
			n := map[string]int64{}
			for _, r := range in {
				n[r.Key]++
				out = append(out, Record{Key: r.Key, Value: n[r.Key]})
			}
		case KindSum:
			sum := map[string]int64{}
			for _, r := range in {
				sum[r.Key] += r.Value
			}
			if o.ID != sink && !c.feedsOnly(o.ID, sink) {
				tr.supported = false
			}
			tr.final = true
			tr.finals = sum
			for k, v := range sum {
				out = append(out, Record{Key: k, Value: v})
			}
		case KindWindowCount:
			size := opts.WindowSize.Milliseconds()
			type wk struct {
				key   string
				start int64
			}
			n := map[wk]int64{}
			for _, r := range in {
				start := r.Timestamp - ((r.Timestamp%size)+size)%size
				n[wk{r.Key, start}]++
			}
			for k, v := range n {
				out = append(out, Record{Key: k.key, Value: v, Text: windowLabel(k.start, size), Timestamp: k.start + size - 1})
			}
		case KindAlerts:
			if opts.TimeDomain == TimeDomainProcessing {
				tr.supported = false
				tr.reason = "processing-time alerts depend on when the records arrive, not on their timestamps"
				break
			}
			// Event time: a key's events sorted by time form sessions
			// separated by gaps of at least the timeout; each session ends
			// in one alert at its last event plus the timeout. (Sources
			// read every partition in timestamp order, so the watermark
			// never passes an event still to come and no event is late.)
			timeout := opts.Timeout.Milliseconds()
			byKey := map[string][]int64{}
			for _, r := range in {
				byKey[r.Key] = append(byKey[r.Key], r.Timestamp)
			}
			for k, tss := range byKey {
				slices.Sort(tss)
				n := int64(0)
				for i, ts := range tss {
					n++
					if i+1 == len(tss) || tss[i+1] >= ts+timeout {
						out = append(out, Record{Key: k, Value: n, Text: alertText(ts, timeout), Timestamp: ts + timeout})
						n = 0
					}
				}
			}
		case KindBroadcastFilter:
			tr.supported = false
			tr.reason = "a broadcast-filter's output depends on when its rules arrive"
		case KindSink:
			if o.ID == sink {
				tr.ignoresTTL = ttl[o.ID]
				if !tr.final {
					tr.exact = map[outKey]int{}
					keys := map[string]bool{}
					for _, r := range in {
						tr.exact[outKey{r.Key, r.Text, r.Value}]++
						keys[r.Key] = true
					}
					tr.keys, tr.expected = len(keys), len(in)
				}
				return tr
			}
		}
		outs[o.ID] = out
	}
	return tr
}

// feedsOnly reports whether from reaches sink through stateless operators only.
func (c *core) feedsOnly(from, sink string) bool {
	for _, e := range c.spec.Edges {
		if e.From != from {
			continue
		}
		if e.To == sink {
			return true
		}
		o, _ := c.spec.Operator(e.To)
		switch o.Kind {
		case KindMap, KindFilter, KindTally:
			if c.feedsOnly(e.To, sink) {
				return true
			}
		}
	}
	return false
}
