package engine

import (
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/statelab/statelab/state"
)

// copier deep-copies the plain data of a job (the core, its execution, its
// subtasks, their operators' in-memory fields and state handles) by
// reflection, so a field added to any of them is copied without anyone
// remembering to. It keeps sharing as it was: two pointers to one object in
// the original point to one object in the copy (memo), so subtasks, channels
// and state handles stay wired to each other. What is not plain data is
// decided by hooks and rules:
//
//   - pointers and interfaces found in memo map to their copy (the caller
//     seeds it with the new core, bus, storage and keyed backends);
//   - keyed state backends and checkpoint storage not seeded are dropped
//     (nil): they belong to closed subtasks, which never use them again;
//   - a type that implements selfCopier copies itself (sharing what never
//     changes in place);
//   - mutexes and wait groups start unlocked; channels are nil (the new
//     driver makes its own); functions are shared (codecs and renderers are
//     pure; the caller resets the few closures that are not); loggers are
//     shared.
type copier struct {
	memo map[memoKey]reflect.Value
	err  error
}

// memoKey names one object of the original: its address and type (a
// struct and its first field share an address).
type memoKey struct {
	p uintptr
	t reflect.Type
}

var (
	typKeyedBackend = reflect.TypeFor[state.KeyedBackend]()
	typStorage      = reflect.TypeFor[state.CheckpointStorage]()
	typAsync        = reflect.TypeFor[state.AsyncSnapshot]()
	typLogger       = reflect.TypeFor[*slog.Logger]()
	typMutex        = reflect.TypeFor[sync.Mutex]()
	typRWMutex      = reflect.TypeFor[sync.RWMutex]()
	typWaitGroup    = reflect.TypeFor[sync.WaitGroup]()
	typOnce         = reflect.TypeFor[sync.Once]()
	typSelfCopier   = reflect.TypeFor[selfCopier]()
)

// selfCopier is a type whose copy shares what it never changes in place
// (a *sinkStore's committed records); copyTo fills dst, a new zero value
// of the same type the copier has already put in its memo.
type selfCopier interface {
	copyTo(cp *copier, dst any)
}

// fieldsExcept deep-copies the fields of the struct *src into *dst (both
// pointers to one struct type), all but those named.
func (cp *copier) fieldsExcept(dst, src any, skip ...string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range s.NumField() {
		if slices.Contains(skip, s.Type().Field(i).Name) {
			continue
		}
		cp.into(settable(d.Field(i)), s.Field(i))
	}
}

func newCopier() *copier { return &copier{memo: map[memoKey]reflect.Value{}} }

// share makes the copy share x (a map or pointer the original never
// changes in place) instead of copying it.
func (cp *copier) share(x any) {
	v := reflect.ValueOf(x)
	if v.IsNil() {
		return
	}
	cp.memo[memoKey{v.Pointer(), v.Type()}] = v
}

// seed makes every reference to old (a pointer) point to nu in the copy.
func (cp *copier) seed(old, nu any) {
	v := reflect.ValueOf(old)
	cp.memo[memoKey{v.Pointer(), v.Type()}] = reflect.ValueOf(nu)
}

// copyInto deep-copies *src into *dst (pointers to values of one type).
func (cp *copier) copyInto(dst, src any) error {
	cp.into(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
	return cp.err
}

// settable returns v as a settable value even for unexported fields.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// readable returns v readable even for an unexported field.
func readable(v reflect.Value) reflect.Value {
	if v.CanInterface() || !v.CanAddr() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// addressable returns v, or a copy of it that is addressable (an interface's
// value, a map's key or value), so that its unexported fields can be read
// through readable. v itself must not come from an unexported field of a
// value that is not addressable: every value into reaches is addressable or
// comes from one.
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	tmp := reflect.New(v.Type()).Elem()
	tmp.Set(v)
	return tmp
}

// into copies src into dst (a settable value of the same type).
func (cp *copier) into(dst, src reflect.Value) {
	if cp.err != nil {
		return
	}
	src = readable(src)
	t := src.Type()
	switch t {
	case typMutex, typRWMutex, typWaitGroup, typOnce:
		return // zero: unlocked, nobody waiting
	case typLogger:
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if m, ok := cp.memo[memoKey{src.Pointer(), t}]; ok {
			dst.Set(m)
			return
		}
		if t.Implements(typKeyedBackend) || t.Implements(typStorage) || t.Implements(typAsync) {
			return // of a closed subtask, or in flight: not carried over
		}
		n := reflect.New(t.Elem())
		cp.memo[memoKey{src.Pointer(), t}] = n
		if t.Implements(typSelfCopier) {
			orig := reflect.NewAt(t.Elem(), unsafe.Pointer(src.Pointer())).Interface().(selfCopier)
			orig.copyTo(cp, n.Interface())
		} else {
			cp.into(n.Elem(), src.Elem())
		}
		dst.Set(n)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := addressable(src.Elem())
		if e.Kind() == reflect.Pointer {
			if m, ok := cp.memo[memoKey{e.Pointer(), e.Type()}]; ok {
				dst.Set(m)
				return
			}
		}
		n := reflect.New(e.Type()).Elem()
		cp.into(n, e)
		if n.Kind() == reflect.Pointer && n.IsNil() && !e.IsNil() {
			return // a dropped backend or storage: leave the interface nil
		}
		dst.Set(n)
	case reflect.Struct:
		for i := range src.NumField() {
			cp.into(settable(dst.Field(i)), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		n := reflect.MakeSlice(t, src.Len(), src.Cap())
		if isPlain(t.Elem()) {
			reflect.Copy(n, src)
		} else {
			for i := range src.Len() {
				cp.into(n.Index(i), src.Index(i))
			}
		}
		dst.Set(n)
	case reflect.Array:
		for i := range src.Len() {
			cp.into(settable(dst.Index(i)), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		if m, ok := cp.memo[memoKey{src.Pointer(), t}]; ok {
			dst.Set(m)
			return
		}
		n := reflect.MakeMapWithSize(t, src.Len())
		cp.memo[memoKey{src.Pointer(), t}] = n
		it := src.MapRange()
		if isPlain(t.Key()) && isPlain(t.Elem()) {
			for it.Next() {
				n.SetMapIndex(it.Key(), it.Value())
			}
			dst.Set(n)
			return
		}
		for it.Next() {
			k := reflect.New(t.Key()).Elem()
			cp.into(k, addressable(it.Key()))
			v := reflect.New(t.Elem()).Elem()
			cp.into(v, addressable(it.Value()))
			n.SetMapIndex(k, v)
		}
		dst.Set(n)
	case reflect.Chan:
		return // nil: drivers make their own
	case reflect.Func:
		dst.Set(src)
	default:
		// Numbers, strings (immutable), and unsafe pointers, which only
		// sync/atomic.Pointer holds here, to values never changed in place.
		dst.Set(src)
	}
}

// isPlain reports whether values of t hold no pointers but to immutable
// strings, so a slice of them copies with one copy (records: sink output).
func isPlain(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true // strings are immutable: sharing their bytes is a copy
	case reflect.Array:
		return isPlain(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !isPlain(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// memoKeyOf is the memo key of an interface's dynamic pointer.
func memoKeyOf(x any) memoKey {
	v := reflect.ValueOf(x)
	return memoKey{v.Pointer(), v.Type()}
}
