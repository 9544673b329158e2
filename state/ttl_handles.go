package state

// The TTL decorators (Flink's TtlValueState, TtlListState, TtlMapState,
// TtlReducingState over AbstractTtlDecorator): each wraps the plain handle
// of the same kind whose codec adds the last-access timestamp (ttlCodec),
// checks expiry on read, refreshes the timestamp on write (and on read with
// OnReadAndWrite), and after every access runs one step of cleanup.

// ttlValue is a user value with its last-access timestamp (Flink's TtlValue).
type ttlValue[T any] struct {
	ts int64
	v  T
}

type ttlCodec[T any] struct{ inner Codec[T] }

func (c ttlCodec[T]) Append(dst []byte, v ttlValue[T]) []byte {
	return c.inner.Append(wrapTS(dst, v.ts), v.v)
}

func (c ttlCodec[T]) Decode(src []byte) (ttlValue[T], error) {
	ts, raw, ok := unwrapTS(src)
	if !ok {
		var zero ttlValue[T]
		return zero, errShortTTL
	}
	v, err := c.inner.Decode(raw)
	return ttlValue[T]{ts: ts, v: v}, err
}

var errShortTTL = wrapState(ErrCorrupt, "decode", "a TTL value shorter than its timestamp")

// --- ValueState ----------------------------------------------------------------

type ttlValueState[T any] struct {
	inner *valueState[ttlValue[T]]
	s     *ttlState
}

func newTTLValue[T any](rb rawBackend, id stateID, name string, c Codec[T], s *ttlState) *ttlValueState[T] {
	return &ttlValueState[T]{inner: &valueState[ttlValue[T]]{b: rb, id: id, c: ttlCodec[T]{c}, name: name}, s: s}
}

func (v *ttlValueState[T]) now() int64 { return v.s.cfg.Clock.NowMillis() }

func (v *ttlValueState[T]) done(now int64, err error) error {
	if err != nil {
		return err
	}
	return wrapState(v.s.afterAccess(v.inner.b, v.inner.id, now), "clean up", v.inner.name)
}

func (v *ttlValueState[T]) Value() (T, bool, error) {
	var zero T
	now := v.now()
	tv, ok, err := v.inner.Value()
	if err != nil || !ok {
		return zero, false, v.done(now, err)
	}
	if v.s.expired(tv.ts, now) {
		if err := v.inner.Clear(); err != nil {
			return zero, false, err
		}
		if !v.s.returnExpired() {
			return zero, false, v.done(now, nil)
		}
		return tv.v, true, v.done(now, nil)
	}
	if v.s.updateOnRead() {
		tv.ts = now
		if err := v.inner.Update(tv); err != nil {
			return zero, false, err
		}
	}
	return tv.v, true, v.done(now, nil)
}

func (v *ttlValueState[T]) Update(x T) error {
	now := v.now()
	return v.done(now, v.inner.Update(ttlValue[T]{ts: now, v: x}))
}

func (v *ttlValueState[T]) Clear() error { return v.inner.Clear() }

// --- ReducingState ----------------------------------------------------------------

type ttlReducingState[T any] struct {
	v      *ttlValueState[T]
	reduce func(acc, v T) T
}

func (r *ttlReducingState[T]) Get() (T, bool, error) { return r.v.Value() }

// Add folds x into the unexpired accumulator (an expired one is dropped, as
// TtlReducingState.add reads it through getWithTtlCheckAndUpdate).
func (r *ttlReducingState[T]) Add(x T) error {
	now := r.v.now()
	tv, ok, err := r.v.inner.Value()
	if err != nil {
		return err
	}
	if ok && !r.v.s.expired(tv.ts, now) {
		x = r.reduce(tv.v, x)
	}
	return r.v.done(now, r.v.inner.Update(ttlValue[T]{ts: now, v: x}))
}

func (r *ttlReducingState[T]) Clear() error { return r.v.Clear() }

// --- ListState ----------------------------------------------------------------

type ttlListState[T any] struct {
	inner *listState[ttlValue[T]]
	s     *ttlState
}

func (l *ttlListState[T]) done(now int64, err error) error {
	if err != nil {
		return err
	}
	return wrapState(l.s.afterAccess(l.inner.b, l.inner.id, now), "clean up", l.inner.name)
}

// Get returns the unexpired elements (all of them with
// ReturnExpiredIfNotCleanedUp) and writes back the unexpired ones when some
// expired, or all with a new timestamp with OnReadAndWrite.
func (l *ttlListState[T]) Get() ([]T, error) {
	now := l.s.cfg.Clock.NowMillis()
	all, err := l.inner.Get()
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(all))
	kept := all[:0:0]
	for _, e := range all {
		expired := l.s.expired(e.ts, now)
		if !expired || l.s.returnExpired() {
			out = append(out, e.v)
		}
		if !expired {
			if l.s.updateOnRead() {
				e.ts = now
			}
			kept = append(kept, e)
		}
	}
	if len(kept) != len(all) || (l.s.updateOnRead() && len(kept) > 0) {
		if err := l.inner.Update(kept); err != nil {
			return nil, err
		}
	}
	return out, l.done(now, nil)
}

func (l *ttlListState[T]) Add(v T) error { return l.AddAll([]T{v}) }

func (l *ttlListState[T]) AddAll(vs []T) error {
	now := l.s.cfg.Clock.NowMillis()
	return l.done(now, l.inner.AddAll(l.wrap(vs, now)))
}

func (l *ttlListState[T]) Update(vs []T) error {
	now := l.s.cfg.Clock.NowMillis()
	return l.done(now, l.inner.Update(l.wrap(vs, now)))
}

func (l *ttlListState[T]) wrap(vs []T, now int64) []ttlValue[T] {
	w := make([]ttlValue[T], len(vs))
	for i, v := range vs {
		w[i] = ttlValue[T]{ts: now, v: v}
	}
	return w
}

func (l *ttlListState[T]) Clear() error { return l.inner.Clear() }

// --- MapState ----------------------------------------------------------------

type ttlMapState[K, V any] struct {
	inner *mapState[K, ttlValue[V]]
	s     *ttlState
}

func (m *ttlMapState[K, V]) done(now int64, err error) error {
	if err != nil {
		return err
	}
	return wrapState(m.s.afterAccess(m.inner.b, m.inner.id, now), "clean up", m.inner.name)
}

func (m *ttlMapState[K, V]) Get(k K) (V, bool, error) {
	var zero V
	now := m.s.cfg.Clock.NowMillis()
	tv, ok, err := m.inner.Get(k)
	if err != nil || !ok {
		return zero, false, m.done(now, err)
	}
	if m.s.expired(tv.ts, now) {
		if err := m.inner.Remove(k); err != nil {
			return zero, false, err
		}
		if !m.s.returnExpired() {
			return zero, false, m.done(now, nil)
		}
		return tv.v, true, m.done(now, nil)
	}
	if m.s.updateOnRead() {
		tv.ts = now
		if err := m.inner.Put(k, tv); err != nil {
			return zero, false, err
		}
	}
	return tv.v, true, m.done(now, nil)
}

func (m *ttlMapState[K, V]) Put(k K, v V) error {
	now := m.s.cfg.Clock.NowMillis()
	return m.done(now, m.inner.Put(k, ttlValue[V]{ts: now, v: v}))
}

func (m *ttlMapState[K, V]) Remove(k K) error { return m.inner.Remove(k) }

func (m *ttlMapState[K, V]) Contains(k K) (bool, error) {
	_, ok, err := m.Get(k)
	return ok, err
}

// Iterate visits the unexpired entries (all with
// ReturnExpiredIfNotCleanedUp), then removes the expired ones it saw and,
// with OnReadAndWrite, refreshes the timestamps of the ones it visited.
func (m *ttlMapState[K, V]) Iterate(fn func(k K, v V) bool) error {
	now := m.s.cfg.Clock.NowMillis()
	var expired []K
	var touched []K
	var touchedV []V
	err := m.inner.Iterate(func(k K, tv ttlValue[V]) bool {
		exp := m.s.expired(tv.ts, now)
		if exp {
			expired = append(expired, k)
			if !m.s.returnExpired() {
				return true
			}
		} else if m.s.updateOnRead() {
			touched, touchedV = append(touched, k), append(touchedV, tv.v)
		}
		return fn(k, tv.v)
	})
	if err != nil {
		return err
	}
	for _, k := range expired {
		if err := m.inner.Remove(k); err != nil {
			return err
		}
	}
	for i, k := range touched {
		if err := m.inner.Put(k, ttlValue[V]{ts: now, v: touchedV[i]}); err != nil {
			return err
		}
	}
	return m.done(now, nil)
}

func (m *ttlMapState[K, V]) IsEmpty() (bool, error) {
	empty := true
	err := m.Iterate(func(K, V) bool { empty = false; return false })
	return empty, err
}

func (m *ttlMapState[K, V]) Clear() error { return m.inner.Clear() }
