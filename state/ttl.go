package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// State time-to-live, Flink's StateTtlConfig. A state registered with a TTL
// stores each value (each list element, each map entry) with the
// processing time of its last access, as Flink's TtlValue does: the stored
// bytes are [last access, ms, int64 BE][user value]. The timestamp travels
// with the value through snapshots, restores and rescales. A value whose
// last access plus the TTL is at or before now is expired (Flink's
// TtlUtils.expired).
//
// Expired values are removed
//   - on read: a read that finds one clears it (AbstractTtlDecorator), and
//     returns it only with ReturnExpiredIfNotCleanedUp;
//   - in full snapshots, when CleanupFullSnapshot is set: the snapshot
//     leaves them out (Flink's cleanupFullSnapshot; an incremental pebble
//     checkpoint copies SST files as they are, so, as with RocksDB, it
//     cannot);
//   - incrementally on the memory backends (Flink's TtlIncrementalCleanup):
//     every access of the state also checks the next CleanupSize entries of
//     a cursor that walks the whole state, key group by key group (default
//     5, Flink's default cleanupIncrementally(5, false));
//   - in the background on pebble: every CleanupSize-th access of the state
//     scans the next CleanupSize entries of the state in key order and
//     deletes the expired ones (default 1000, the number of entries after
//     which Flink's RocksDB compaction filter queries the current time).
//     Flink's RocksDB backend does this inside compaction: its
//     FlinkCompactionFilter drops expired values while RocksDB rewrites
//     SST files anyway, so the cleanup costs no extra reads but happens
//     only where and when compaction runs (periodic compaction forces it
//     for cold files). Pebble has no compaction filter, so StateLab scans
//     with an iterator and writes tombstones, which compaction then drops.

// TTLUpdateType is when the last-access timestamp is refreshed.
type TTLUpdateType string

// Flink's StateTtlConfig.UpdateType (Disabled is a state without TTL).
const (
	OnCreateAndWrite TTLUpdateType = "OnCreateAndWrite"
	OnReadAndWrite   TTLUpdateType = "OnReadAndWrite"
)

// TTLVisibility is whether a read may return an expired value.
type TTLVisibility string

// Flink's StateTtlConfig.StateVisibility.
const (
	NeverReturnExpired          TTLVisibility = "NeverReturnExpired"
	ReturnExpiredIfNotCleanedUp TTLVisibility = "ReturnExpiredIfNotCleanedUp"
)

// Default cleanup sizes (see the comment above).
const (
	DefaultIncrementalCleanupSize = 5
	DefaultBackgroundCleanupSize  = 1000
)

// TTLConfig is a state's time-to-live, Flink's StateTtlConfig with
// processing time (Flink's only TtlTimeCharacteristic).
type TTLConfig struct {
	TTL        time.Duration
	UpdateType TTLUpdateType // default OnCreateAndWrite
	Visibility TTLVisibility // default NeverReturnExpired
	// CleanupFullSnapshot leaves expired entries out of full snapshots.
	CleanupFullSnapshot bool
	// CleanupSize is how many entries incremental (memory) or background
	// (pebble) cleanup checks at a time; 0 takes the default, a negative
	// value turns it off.
	CleanupSize int
	// Clock gives the processing time in milliseconds (Flink's
	// TtlTimeProvider). It is an interface, not a func, so that a deep copy
	// of a job (a fork) reaches the copy's clock, not the original's.
	Clock Clock
}

// Clock is a processing-time clock in milliseconds.
type Clock interface{ NowMillis() int64 }

// ClockFunc adapts a function to Clock.
type ClockFunc func() int64

// NowMillis calls f.
func (f ClockFunc) NowMillis() int64 { return f() }

// ErrTTL reports a TTL configuration or a TTL mismatch on restore.
var ErrTTL = errors.New("state: state TTL")

func (c *TTLConfig) validate() error {
	if c.TTL < time.Millisecond {
		return fmt.Errorf("%w: the TTL must be at least 1ms (Flink: TTL is expected to be positive), got %v", ErrTTL, c.TTL)
	}
	switch c.UpdateType {
	case "":
		c.UpdateType = OnCreateAndWrite
	case OnCreateAndWrite, OnReadAndWrite:
	default:
		return fmt.Errorf("%w: update type %q (want OnCreateAndWrite or OnReadAndWrite)", ErrTTL, c.UpdateType)
	}
	switch c.Visibility {
	case "":
		c.Visibility = NeverReturnExpired
	case NeverReturnExpired, ReturnExpiredIfNotCleanedUp:
	default:
		return fmt.Errorf("%w: visibility %q (want NeverReturnExpired or ReturnExpiredIfNotCleanedUp)", ErrTTL, c.Visibility)
	}
	if c.Clock == nil {
		return fmt.Errorf("%w: a TTL needs a processing-time clock (TTLConfig.Clock)", ErrTTL)
	}
	return nil
}

// Option configures a state at registration.
type Option func(*stateOptions) error

type stateOptions struct{ ttl *TTLConfig }

// WithTTL gives the state a time-to-live (Flink's
// StateDescriptor.enableTimeToLive).
func WithTTL(c TTLConfig) Option {
	return func(o *stateOptions) error {
		if err := c.validate(); err != nil {
			return err
		}
		o.ttl = &c
		return nil
	}
}

func applyOptions(opts []Option) (stateOptions, error) {
	var o stateOptions
	for _, f := range opts {
		if err := f(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// ttlState is a registered state's TTL, kept with its renderer so that the
// backend can show, snapshot and clean its values.
type ttlState struct {
	cfg      TTLConfig
	ttl      int64 // ms
	list     bool  // values are lists of elements
	accesses int
}

func newTTLState(c *TTLConfig, list bool) *ttlState {
	if c == nil {
		return nil
	}
	return &ttlState{cfg: *c, ttl: c.TTL.Milliseconds(), list: list}
}

// expired is Flink's TtlUtils.expired: last access + ttl <= now, without
// overflow.
func (s *ttlState) expired(ts, now int64) bool {
	exp := ts + s.ttl
	if ts > 0 && exp < ts {
		exp = math.MaxInt64
	}
	return exp <= now
}

func (s *ttlState) returnExpired() bool { return s.cfg.Visibility == ReturnExpiredIfNotCleanedUp }
func (s *ttlState) updateOnRead() bool  { return s.cfg.UpdateType == OnReadAndWrite }

// wrapTS and unwrapTS add and take off the timestamp of a stored value.
func wrapTS(dst []byte, ts int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(ts)) }

func unwrapTS(raw []byte) (int64, []byte, bool) {
	if len(raw) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(raw)), raw[8:], true
}

// transform is what cleanup does to one stored value at now: keep it,
// drop it (keep false), or, for a list, keep its unexpired elements (out).
func (s *ttlState) transform(raw []byte, now int64) (out []byte, keep bool) {
	if !s.list {
		ts, _, ok := unwrapTS(raw)
		return raw, !ok || !s.expired(ts, now)
	}
	var kept []byte
	dropped := false
	err := forEachElement(raw, func(e []byte) error {
		if ts, _, ok := unwrapTS(e); ok && s.expired(ts, now) {
			dropped = true
			return nil
		}
		kept = binary.AppendUvarint(kept, uint64(len(e)))
		kept = append(kept, e...)
		return nil
	})
	if err != nil || !dropped {
		return raw, true
	}
	return kept, len(kept) > 0
}

// renderTTL shows a TTL value in the inspector: the user value rendered by
// inner, and when it was last accessed and whether it has expired.
func (s *ttlState) render(inner renderer, raw []byte, now int64) (string, int64, bool) {
	inner = orRaw(inner)
	if !s.list {
		ts, v, ok := unwrapTS(raw)
		if !ok {
			return RenderBytes(raw), 0, false
		}
		return inner(v), ts, s.expired(ts, now)
	}
	out := "["
	var newest int64
	all := true
	err := forEachElement(raw, func(e []byte) error {
		ts, v, ok := unwrapTS(e)
		if !ok {
			return errors.New("short")
		}
		if len(out) > 1 {
			out += " "
		}
		out += inner(v)
		if s.expired(ts, now) {
			out += "†"
		} else {
			all = false
		}
		newest = max(newest, ts)
		return nil
	})
	if err != nil {
		return RenderBytes(raw), 0, false
	}
	return out + "]", newest, all
}

// ttlCleaner is what the TTL handles need from a backend beyond rawBackend:
// one step of incremental or background cleanup of state id.
type ttlCleaner interface {
	ttlCleanup(id stateID, s *ttlState, n int, now int64) error
	bindTTL(id stateID, s *ttlState)
}

// cleanupSize is the configured size for this backend kind.
func (s *ttlState) cleanupSize(kind BackendKind) int {
	n := s.cfg.CleanupSize
	if n == 0 {
		if kind == Pebble {
			return DefaultBackgroundCleanupSize
		}
		return DefaultIncrementalCleanupSize
	}
	return n
}

// afterAccess runs the cleanup step an access triggers. It also makes s
// the backend's TTL of the state: a fork's copied backend got the
// original's renderers, and its handles' TTL (with the copy's clock) takes
// over at the first access.
func (s *ttlState) afterAccess(b rawBackend, id stateID, now int64) error {
	c, ok := b.(ttlCleaner)
	if !ok {
		return nil
	}
	c.bindTTL(id, s)
	n := s.cleanupSize(b.Kind())
	if n <= 0 {
		return nil
	}
	if b.Kind() == Pebble {
		s.accesses++
		if s.accesses < n {
			return nil
		}
		s.accesses = 0
	}
	return c.ttlCleanup(id, s, n, now)
}

// checkTTL refuses to register a state with a TTL over a restored state
// without one, or the other way round: the stored bytes differ (Flink
// refuses the same with a StateMigrationException).
func checkTTL(info *StateInfo, restored bool, ttl bool) error {
	if restored && info.TTL != ttl {
		have, want := "without", "with"
		if info.TTL {
			have, want = "with", "without"
		}
		return fmt.Errorf("%w: state %q was checkpointed %s a TTL and is now registered %s one; Flink cannot migrate between TTL and non-TTL state either (keep the TTL setting, or start without the old state)",
			ErrTTL, info.Name, have, want)
	}
	info.TTL = ttl
	return nil
}

// snapshotFilter is the full-snapshot cleanup of a backend's TTL states
// (Flink's TtlStateSnapshotTransformer): nil when no state asks for it.
// The time is read once, at the barrier, so the asynchronous part of a
// snapshot does not read the task's clock.
type snapshotFilter func(id stateID, value []byte) ([]byte, bool)

func newSnapshotFilter(render []entryRenderer) snapshotFilter {
	type f struct {
		s   *ttlState
		now int64
	}
	var fs []f
	for id, r := range render {
		if r.ttl == nil || !r.ttl.cfg.CleanupFullSnapshot {
			continue
		}
		for len(fs) <= id {
			fs = append(fs, f{})
		}
		fs[id] = f{r.ttl, r.ttl.cfg.Clock.NowMillis()}
	}
	if fs == nil {
		return nil
	}
	return func(id stateID, v []byte) ([]byte, bool) {
		if int(id) >= len(fs) || fs[id].s == nil {
			return v, true
		}
		return fs[id].s.transform(v, fs[id].now)
	}
}

// filtered wraps an entry writer with the filter.
func (sf snapshotFilter) filtered(w func(id stateID, key, userKey, value []byte) error) func(id stateID, key, userKey, value []byte) error {
	if sf == nil {
		return w
	}
	return func(id stateID, key, userKey, value []byte) error {
		v, keep := sf(id, value)
		if !keep {
			return nil
		}
		return w(id, key, userKey, v)
	}
}
