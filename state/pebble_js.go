//go:build js

package state

import (
	"errors"
	"fmt"
	"sync"
)

// The WebAssembly build has no Pebble backend: Pebble v2 does not compile
// for GOOS=js (its internal/rawalloc and vfs packages have no js files, and
// an LSM wants a disk the browser does not give). The browser build offers
// the two heap backends, memory and fs (HashMapStateBackend with
// JobManagerCheckpointStorage or FileSystemCheckpointStorage); a job spec
// that asks for pebble gets ErrPebbleUnavailable when its subtasks open
// their state.

// ErrPebbleUnavailable is returned for a pebble backend in the WebAssembly
// build.
var ErrPebbleUnavailable = errors.New("state: the pebble backend (EmbeddedRocksDBStateBackend) is not available in the browser build; choose memory or fs, or run statelab serve for pebble")

// PebbleAvailable reports whether this build has the pebble backend.
const PebbleAvailable = false

// pebbleBackend is never made in this build; it exists so that the code
// that switches on backend types compiles unchanged.
type pebbleBackend struct {
	rawBackend
	mu      sync.Mutex
	metrics BackendMetrics
	render  []entryRenderer
}

func openPebbleBackend(cfg KeyedBackendConfig) (KeyedBackend, error) {
	return nil, ErrPebbleUnavailable
}

func restorePebbleBackend(cfg KeyedBackendConfig, _ CheckpointStorage, _ []*KeyedStateHandle) (KeyedBackend, error) {
	return nil, ErrPebbleUnavailable
}

func clonePebble(*pebbleBackend, KeyedBackendConfig) (KeyedBackend, error) {
	return nil, fmt.Errorf("state: copy keyed backend: %w", ErrPebbleUnavailable)
}
