package engine

import (
	"testing"

	"github.com/statelab/statelab/state"
)

// skipWithoutBackend skips a test whose job runs on a backend this build
// does not have: pebble under GOOS=js (state.PebbleAvailable), where the
// tests run in Node for the static site (cmd/statelab-wasm/node/test.sh).
func skipWithoutBackend(t *testing.T, b Backend) {
	t.Helper()
	if b == BackendPebble && !state.PebbleAvailable {
		t.Skip("no pebble backend in this build (GOOS=js)")
	}
}
