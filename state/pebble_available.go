//go:build !js

package state

// PebbleAvailable reports whether this build has the pebble backend (the
// WebAssembly build does not; see pebble_js.go).
const PebbleAvailable = true
