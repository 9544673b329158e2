package engine

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/statelab/statelab/state"
)

// Source generators.
const (
	GeneratorWords  = "words"  // lines of words from a fixed vocabulary, skewed towards a few hot words
	GeneratorClicks = "clicks" // click events: pages with event-time timestamps, exactly N per page and window
	GeneratorNone   = "none"   // only the lines given in options.lines and records typed in later
	GeneratorKeys   = "keys"   // one key per record (Key set, Value 1), uniform over keys: for benchmarks
)

// Operator-state modes of the source's offsets.
const (
	OffsetsSplit = "split" // split-distribute ListState: Flink's getListState
	OffsetsUnion = "union" // union ListState: every subtask gets all offsets and keeps partition % p == index
)

// Sink semantics.
const (
	SinkExactlyOnce = "exactly-once"  // two-phase commit: pre-commit on barrier, commit on checkpoint complete
	SinkAtLeastOnce = "at-least-once" // writes each record as it arrives
)

// operatorOptions are the parsed options of one operator. Only the fields of
// its kind are set.
type operatorOptions struct {
	// source
	Partitions      int
	Generator       string
	Records         int
	Keys            int
	WordsPerLine    int
	Lines           []string
	Pages           int
	WindowSize      time.Duration
	ClicksPerWindow int
	OffsetsMode     string
	Rate            float64 // records per second of virtual time per subtask; 0 = unlimited

	// map / filter / tokenizer
	Fn        string
	Exclude   []string
	MinLength int

	// sink
	Semantics string

	// alerts
	Timeout    time.Duration
	TimeDomain string // TimeDomainEvent or TimeDomainProcessing

	// keyed operators: state time-to-live (nil: none)
	TTL *state.TTLConfig
}

// The time domains of the alerts operator's timeout (Flink's TimeDomain).
const (
	TimeDomainEvent      = "event"
	TimeDomainProcessing = "processing"
)

// ttlOptions are the state TTL options every keyed operator takes (Flink's
// StateTtlConfig builder: newBuilder(ttl), setUpdateType,
// setStateVisibility, cleanupFullSnapshot, cleanupIncrementally /
// cleanupInRocksdbCompactFilter).
var ttlOptions = []string{"ttl", "ttlUpdateType", "ttlStateVisibility", "ttlCleanupFullSnapshot", "ttlCleanupSize"}

var knownOptions = map[string][]string{
	KindSource:          {"partitions", "generator", "records", "keys", "wordsPerLine", "lines", "pages", "windowSize", "clicksPerWindow", "offsets", "rate"},
	KindTokenizer:       {},
	KindMap:             {"fn"},
	KindFilter:          {"exclude", "minLength"},
	KindCount:           ttlOptions,
	KindSum:             ttlOptions,
	KindWindowCount:     append([]string{"size"}, ttlOptions...),
	KindBroadcastFilter: {},
	KindTally:           {},
	KindSink:            {"semantics"},
	KindAlerts:          append([]string{"timeout", "timeDomain"}, ttlOptions...),
}

// parseOptions reads o.Options for o.Kind, with defaults.
func parseOptions(o *OperatorSpec) (operatorOptions, error) {
	var opt operatorOptions
	allowed := knownOptions[o.Kind]
	keys := make([]string, 0, len(o.Options))
	for k := range o.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return opt, fmt.Errorf("operator %q (%s) takes no options, but has %q", o.ID, o.Kind, k)
			}
			return opt, fmt.Errorf("operator %q (%s) has unknown option %q (known: %s)", o.ID, o.Kind, k, strings.Join(allowed, ", "))
		}
	}
	g := optGetter{op: o}
	switch o.Kind {
	case KindSource:
		opt.Partitions = g.int("partitions", o.Parallelism)
		opt.Generator = g.str("generator", GeneratorWords)
		opt.Records = g.int("records", 0)
		opt.Keys = g.int("keys", 100)
		opt.WordsPerLine = g.int("wordsPerLine", 4)
		opt.Lines = g.strs("lines")
		opt.Pages = g.int("pages", 6)
		opt.WindowSize = g.dur("windowSize", 15*time.Second)
		opt.ClicksPerWindow = g.int("clicksPerWindow", 10)
		opt.OffsetsMode = g.str("offsets", OffsetsSplit)
		opt.Rate = g.float("rate", 0)
		switch {
		case g.err != nil:
		case opt.Partitions < 1 || opt.Partitions > 1024:
			g.fail("partitions", "want 1..1024")
		case !slices.Contains([]string{GeneratorWords, GeneratorClicks, GeneratorNone, GeneratorKeys}, opt.Generator):
			g.fail("generator", "want words, clicks, keys or none")
		case opt.Records < 0:
			g.fail("records", "cannot be negative")
		case opt.Keys < 1:
			g.fail("keys", "want at least 1")
		case opt.WordsPerLine < 1:
			g.fail("wordsPerLine", "want at least 1")
		case opt.Pages < 1 || opt.Pages > len(clickPages)*100:
			g.fail("pages", "want 1..600")
		case opt.WindowSize <= 0:
			g.fail("windowSize", "must be positive")
		case opt.ClicksPerWindow < 1:
			g.fail("clicksPerWindow", "want at least 1")
		case opt.OffsetsMode != OffsetsSplit && opt.OffsetsMode != OffsetsUnion:
			g.fail("offsets", "want split or union")
		case opt.Rate < 0:
			g.fail("rate", "cannot be negative")
		}
	case KindMap:
		opt.Fn = g.str("fn", "identity")
		if g.err == nil && !slices.Contains([]string{"identity", "upper", "lower", "length"}, opt.Fn) {
			g.fail("fn", "want identity, upper, lower or length")
		}
	case KindFilter:
		opt.Exclude = g.strs("exclude")
		opt.MinLength = g.int("minLength", 0)
	case KindWindowCount:
		opt.WindowSize = g.dur("size", 15*time.Second)
		if g.err == nil && opt.WindowSize < time.Millisecond {
			g.fail("size", "want at least 1ms")
		}
	case KindAlerts:
		opt.Timeout = g.dur("timeout", 10*time.Second)
		if g.err == nil && opt.Timeout < time.Millisecond {
			g.fail("timeout", "want at least 1ms (event time is in milliseconds)")
		}
		opt.TimeDomain = g.str("timeDomain", TimeDomainEvent)
		if g.err == nil && opt.TimeDomain != TimeDomainEvent && opt.TimeDomain != TimeDomainProcessing {
			g.fail("timeDomain", "want event (time out on event time, the default) or processing (time out on the subtask's processing time)")
		}
	case KindSink:
		opt.Semantics = g.str("semantics", SinkExactlyOnce)
		if g.err == nil && opt.Semantics != SinkExactlyOnce && opt.Semantics != SinkAtLeastOnce {
			g.fail("semantics", "want exactly-once or at-least-once")
		}
	}
	if isKeyedKind(o.Kind) && g.err == nil {
		opt.TTL = g.ttl()
	}
	return opt, g.err
}

// ttl reads the state TTL options; without "ttl" the others are an error.
func (g *optGetter) ttl() *state.TTLConfig {
	d := g.dur("ttl", 0)
	if _, ok := g.op.Options["ttl"]; !ok {
		for _, k := range ttlOptions[1:] {
			if _, ok := g.op.Options[k]; ok {
				g.fail(k, "needs option \"ttl\" (the time-to-live) as well")
				return nil
			}
		}
		return nil
	}
	c := &state.TTLConfig{TTL: d,
		UpdateType:          state.TTLUpdateType(g.str("ttlUpdateType", string(state.OnCreateAndWrite))),
		Visibility:          state.TTLVisibility(g.str("ttlStateVisibility", string(state.NeverReturnExpired))),
		CleanupFullSnapshot: g.bool("ttlCleanupFullSnapshot", false),
		CleanupSize:         g.int("ttlCleanupSize", 0),
	}
	switch {
	case g.err != nil:
	case d < time.Millisecond:
		g.fail("ttl", "want a time-to-live of at least 1ms, like 10s (Flink: TTL is expected to be positive)")
	case c.UpdateType != state.OnCreateAndWrite && c.UpdateType != state.OnReadAndWrite:
		g.fail("ttlUpdateType", "want OnCreateAndWrite or OnReadAndWrite")
	case c.Visibility != state.NeverReturnExpired && c.Visibility != state.ReturnExpiredIfNotCleanedUp:
		g.fail("ttlStateVisibility", "want NeverReturnExpired or ReturnExpiredIfNotCleanedUp")
	case c.CleanupSize < -1:
		g.fail("ttlCleanupSize", "want entries per cleanup step, 0 for the default or -1 for none")
	}
	return c
}

func (g *optGetter) bool(name string, def bool) bool {
	v, ok := g.op.Options[name]
	if !ok {
		return def
	}
	if b, ok := v.(bool); ok {
		return b
	}
	g.fail(name, fmt.Sprintf("want true or false, got %v", v))
	return def
}

// optGetter reads typed options, remembering the first error. Numbers come
// as int from YAML and float64 from JSON; both are accepted.
type optGetter struct {
	op  *OperatorSpec
	err error
}

func (g *optGetter) fail(name, why string) {
	if g.err == nil {
		g.err = fmt.Errorf("operator %q option %q: %s", g.op.ID, name, why)
	}
}

func (g *optGetter) int(name string, def int) int {
	v, ok := g.op.Options[name]
	if !ok {
		return def
	}
	switch t := v.(type) {
	case int:
		return t
	case int64:
		return int(t)
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t)
		}
	}
	g.fail(name, fmt.Sprintf("want an integer, got %v", v))
	return def
}

func (g *optGetter) float(name string, def float64) float64 {
	v, ok := g.op.Options[name]
	if !ok {
		return def
	}
	switch t := v.(type) {
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case float64:
		return t
	}
	g.fail(name, fmt.Sprintf("want a number, got %v", v))
	return def
}

func (g *optGetter) str(name, def string) string {
	v, ok := g.op.Options[name]
	if !ok {
		return def
	}
	if s, ok := v.(string); ok {
		return s
	}
	g.fail(name, fmt.Sprintf("want text, got %v", v))
	return def
}

func (g *optGetter) strs(name string) []string {
	v, ok := g.op.Options[name]
	if !ok {
		return nil
	}
	switch t := v.(type) {
	case []string:
		// Shared, not cloned: the list belongs to the engine's own copy of
		// the spec (JobSpec.Clone) and every option is only read. A
		// bench-sized "lines" list is a million strings, and a clone of it
		// for every parse (NewLive, then each deploy) cost 16 MB and a
		// garbage collection in the middle of the job.
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				g.fail(name, fmt.Sprintf("want a list of text, got element %v", e))
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	g.fail(name, fmt.Sprintf("want a list of text, got %v", v))
	return nil
}

func (g *optGetter) dur(name string, def time.Duration) time.Duration {
	v, ok := g.op.Options[name]
	if !ok {
		return def
	}
	switch t := v.(type) {
	case string:
		var d Duration
		if err := d.UnmarshalText([]byte(t)); err != nil {
			g.fail(name, err.Error())
			return def
		}
		return d.D()
	case int, int64, float64:
		return time.Duration(g.int(name, 0)) * time.Millisecond
	}
	g.fail(name, fmt.Sprintf("want a duration like 15s, got %v", v))
	return def
}
