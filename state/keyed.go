package state

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ValueState is one value per key, Flink's ValueState.
type ValueState[T any] interface {
	// Value returns the current key's value and whether it has one.
	Value() (T, bool, error)
	Update(v T) error
	Clear() error
}

// ListState is a list per key, Flink's ListState (also the operator ListState).
type ListState[T any] interface {
	// Get returns the elements in insertion order (empty, not an error, if none).
	Get() ([]T, error)
	Add(v T) error
	AddAll(vs []T) error
	// Update replaces the list.
	Update(vs []T) error
	Clear() error
}

// MapState is a map per key, Flink's MapState (also BroadcastState).
type MapState[K, V any] interface {
	Get(k K) (V, bool, error)
	Put(k K, v V) error
	Remove(k K) error
	Contains(k K) (bool, error)
	// Iterate calls fn for each entry in user-key byte order until fn
	// returns false. fn must not modify the state.
	Iterate(fn func(k K, v V) bool) error
	IsEmpty() (bool, error)
	Clear() error
}

// ReducingState folds added values into one with a reduce function, Flink's
// ReducingState.
type ReducingState[T any] interface {
	Get() (T, bool, error)
	Add(v T) error
	Clear() error
}

// entryRenderer shows a state's stored bytes in the inspector; a nil
// renderer falls back to RenderBytes.
type entryRenderer struct {
	userKey, value renderer
	// ttl is set for a state with a time-to-live: its values carry their
	// last-access timestamp (ttl.go).
	ttl *ttlState
}

// stateID is a state's number inside one backend; it is part of every Pebble
// key and of every entry of a full snapshot.
type stateID = uint16

// rawBackend is what the typed handles need from a backend. Every method acts
// on the current key. A nil userKey addresses the value of a value, list or
// reducing state; MapState entries always pass a non-nil userKey. Slices the
// backend returns are valid until its next call.
type rawBackend interface {
	KeyedBackend
	register(name string, kind StateKind, r entryRenderer) (stateID, error)
	get(id stateID, userKey []byte) ([]byte, bool, error)
	put(id stateID, userKey, value []byte) error
	// appendValue appends value's bytes to the current value (list add).
	appendValue(id stateID, value []byte) error
	remove(id stateID, userKey []byte) error
	// iterate visits the current key's MapState entries in user-key order.
	iterate(id stateID, fn func(userKey, value []byte) bool) error
	// clear removes the current key's entry (or all its map entries).
	clear(id stateID) error
}

func rawOf(b KeyedBackend) (rawBackend, error) {
	rb, ok := b.(rawBackend)
	if !ok {
		return nil, fmt.Errorf("state: %T is not a backend made by this package", b)
	}
	return rb, nil
}

// Value returns the ValueState called name. WithTTL gives it a
// time-to-live.
func Value[T any](b KeyedBackend, name string, c Codec[T], opts ...Option) (ValueState[T], error) {
	rb, o, err := rawAndOptions(b, opts)
	if err != nil {
		return nil, err
	}
	ts := newTTLState(o.ttl, false)
	id, err := rb.register(name, KindValue, entryRenderer{value: rendererFor(c), ttl: ts})
	if err != nil {
		return nil, err
	}
	if ts != nil {
		return newTTLValue(rb, id, name, c, ts), nil
	}
	return &valueState[T]{b: rb, id: id, c: c, name: name}, nil
}

func rawAndOptions(b KeyedBackend, opts []Option) (rawBackend, stateOptions, error) {
	rb, err := rawOf(b)
	if err != nil {
		return nil, stateOptions{}, err
	}
	o, err := applyOptions(opts)
	return rb, o, err
}

type valueState[T any] struct {
	b    rawBackend
	id   stateID
	c    Codec[T]
	name string
	buf  []byte
}

func (s *valueState[T]) Value() (T, bool, error) {
	var zero T
	raw, ok, err := s.b.get(s.id, nil)
	if err != nil || !ok {
		return zero, false, wrapState(err, "get", s.name)
	}
	v, err := s.c.Decode(raw)
	if err != nil {
		return zero, false, wrapState(err, "decode", s.name)
	}
	return v, true, nil
}

func (s *valueState[T]) Update(v T) error {
	s.buf = s.c.Append(s.buf[:0], v)
	return wrapState(s.b.put(s.id, nil, s.buf), "update", s.name)
}

func (s *valueState[T]) Clear() error { return wrapState(s.b.clear(s.id), "clear", s.name) }

// List returns the ListState called name. Elements are stored in one value,
// each uvarint-length-prefixed, so Add appends without reading (Pebble's
// concatenating merge, as Flink's RocksDB backend uses its append operator).
// With a TTL each element carries its own timestamp, as in Flink's
// TtlListState.
func List[T any](b KeyedBackend, name string, c Codec[T], opts ...Option) (ListState[T], error) {
	rb, o, err := rawAndOptions(b, opts)
	if err != nil {
		return nil, err
	}
	ts := newTTLState(o.ttl, true)
	r := entryRenderer{value: listRenderer(rendererFor(c)), ttl: ts}
	if ts != nil {
		r.value = rendererFor(c) // ttlState.render frames the elements
	}
	id, err := rb.register(name, KindList, r)
	if err != nil {
		return nil, err
	}
	if ts != nil {
		return &ttlListState[T]{inner: &listState[ttlValue[T]]{b: rb, id: id, c: ttlCodec[T]{c}, name: name}, s: ts}, nil
	}
	return &listState[T]{b: rb, id: id, c: c, name: name}, nil
}

type listState[T any] struct {
	b    rawBackend
	id   stateID
	c    Codec[T]
	name string
	buf  []byte
}

func (s *listState[T]) Get() ([]T, error) {
	raw, ok, err := s.b.get(s.id, nil)
	if err != nil {
		return nil, wrapState(err, "get", s.name)
	}
	out := []T{}
	if !ok {
		return out, nil
	}
	err = forEachElement(raw, func(e []byte) error {
		v, err := s.c.Decode(e)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	return out, wrapState(err, "decode", s.name)
}

func (s *listState[T]) Add(v T) error { return s.AddAll([]T{v}) }

func (s *listState[T]) AddAll(vs []T) error {
	if len(vs) == 0 {
		return nil
	}
	s.buf = appendElements(s.buf[:0], s.c, vs)
	return wrapState(s.b.appendValue(s.id, s.buf), "add", s.name)
}

func (s *listState[T]) Update(vs []T) error {
	if len(vs) == 0 {
		return s.Clear()
	}
	s.buf = appendElements(s.buf[:0], s.c, vs)
	return wrapState(s.b.put(s.id, nil, s.buf), "update", s.name)
}

func (s *listState[T]) Clear() error { return wrapState(s.b.clear(s.id), "clear", s.name) }

func appendElements[T any](dst []byte, c Codec[T], vs []T) []byte {
	for _, v := range vs {
		// Reserve the longest uvarint, encode, then close the gap: one pass,
		// no scratch buffer.
		at := len(dst)
		dst = append(dst, make([]byte, binary.MaxVarintLen64)...)
		dst = c.Append(dst, v)
		n := len(dst) - at - binary.MaxVarintLen64
		w := binary.PutUvarint(dst[at:], uint64(n))
		copy(dst[at+w:], dst[at+binary.MaxVarintLen64:])
		dst = dst[:at+w+n]
	}
	return dst
}

func forEachElement(raw []byte, fn func([]byte) error) error {
	for len(raw) > 0 {
		n, w := binary.Uvarint(raw)
		if w <= 0 || uint64(len(raw)-w) < n {
			return errors.New("state: malformed list value")
		}
		if err := fn(raw[w : w+int(n)]); err != nil {
			return err
		}
		raw = raw[w+int(n):]
	}
	return nil
}

func listRenderer(elem renderer) renderer {
	return func(raw []byte) string {
		out := "["
		err := forEachElement(raw, func(e []byte) error {
			if len(out) > 1 {
				out += " "
			}
			out += elem(e)
			return nil
		})
		if err != nil {
			return RenderBytes(raw)
		}
		return out + "]"
	}
}

// Map returns the MapState called name. With a TTL each entry carries its
// own timestamp (Flink's TtlMapState).
func Map[K, V any](b KeyedBackend, name string, kc Codec[K], vc Codec[V], opts ...Option) (MapState[K, V], error) {
	rb, o, err := rawAndOptions(b, opts)
	if err != nil {
		return nil, err
	}
	ts := newTTLState(o.ttl, false)
	id, err := rb.register(name, KindMap, entryRenderer{userKey: rendererFor(kc), value: rendererFor(vc), ttl: ts})
	if err != nil {
		return nil, err
	}
	if ts != nil {
		return &ttlMapState[K, V]{inner: &mapState[K, ttlValue[V]]{b: rb, id: id, kc: kc, vc: ttlCodec[V]{vc}, name: name}, s: ts}, nil
	}
	return &mapState[K, V]{b: rb, id: id, kc: kc, vc: vc, name: name}, nil
}

type mapState[K, V any] struct {
	b    rawBackend
	id   stateID
	kc   Codec[K]
	vc   Codec[V]
	name string
	kbuf []byte
	vbuf []byte
}

func (s *mapState[K, V]) key(k K) []byte {
	s.kbuf = s.kc.Append(s.kbuf[:0], k)
	if s.kbuf == nil {
		s.kbuf = []byte{} // non-nil marks a map entry
	}
	return s.kbuf
}

func (s *mapState[K, V]) Get(k K) (V, bool, error) {
	var zero V
	raw, ok, err := s.b.get(s.id, s.key(k))
	if err != nil || !ok {
		return zero, false, wrapState(err, "get", s.name)
	}
	v, err := s.vc.Decode(raw)
	if err != nil {
		return zero, false, wrapState(err, "decode", s.name)
	}
	return v, true, nil
}

func (s *mapState[K, V]) Put(k K, v V) error {
	s.vbuf = s.vc.Append(s.vbuf[:0], v)
	return wrapState(s.b.put(s.id, s.key(k), s.vbuf), "put", s.name)
}

func (s *mapState[K, V]) Remove(k K) error {
	return wrapState(s.b.remove(s.id, s.key(k)), "remove", s.name)
}

func (s *mapState[K, V]) Contains(k K) (bool, error) {
	_, ok, err := s.b.get(s.id, s.key(k))
	return ok, wrapState(err, "get", s.name)
}

func (s *mapState[K, V]) Iterate(fn func(k K, v V) bool) error {
	var derr error
	err := s.b.iterate(s.id, func(uk, uv []byte) bool {
		k, err := s.kc.Decode(uk)
		if err != nil {
			derr = err
			return false
		}
		v, err := s.vc.Decode(uv)
		if err != nil {
			derr = err
			return false
		}
		return fn(k, v)
	})
	if err == nil {
		err = derr
	}
	return wrapState(err, "iterate", s.name)
}

func (s *mapState[K, V]) IsEmpty() (bool, error) {
	empty := true
	err := s.b.iterate(s.id, func(_, _ []byte) bool { empty = false; return false })
	return empty, wrapState(err, "iterate", s.name)
}

func (s *mapState[K, V]) Clear() error { return wrapState(s.b.clear(s.id), "clear", s.name) }

// Reducing returns the ReducingState called name; reduce(acc, v) folds v in.
func Reducing[T any](b KeyedBackend, name string, c Codec[T], reduce func(acc, v T) T, opts ...Option) (ReducingState[T], error) {
	if reduce == nil {
		return nil, fmt.Errorf("state: reducing state %q needs a reduce function", name)
	}
	rb, o, err := rawAndOptions(b, opts)
	if err != nil {
		return nil, err
	}
	ts := newTTLState(o.ttl, false)
	id, err := rb.register(name, KindReducing, entryRenderer{value: rendererFor(c), ttl: ts})
	if err != nil {
		return nil, err
	}
	if ts != nil {
		return &ttlReducingState[T]{v: newTTLValue(rb, id, name, c, ts), reduce: reduce}, nil
	}
	return &reducingState[T]{v: valueState[T]{b: rb, id: id, c: c, name: name}, reduce: reduce}, nil
}

type reducingState[T any] struct {
	v      valueState[T]
	reduce func(acc, v T) T
}

func (s *reducingState[T]) Get() (T, bool, error) { return s.v.Value() }

func (s *reducingState[T]) Add(x T) error {
	acc, ok, err := s.v.Value()
	if err != nil {
		return err
	}
	if ok {
		x = s.reduce(acc, x)
	}
	return s.v.Update(x)
}

func (s *reducingState[T]) Clear() error { return s.v.Clear() }

func wrapState(err error, action, name string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s state %q: %w", action, name, err)
}
