package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statelab site: usage errors say what to do; with a module built before
// (--wasm, --wasm-exec) it writes the site without the go command.
func TestSiteCLI(t *testing.T) {
	code, _, errOut := run(t, "", "site")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "statelab site DIR")

	busy := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("mine"), 0o644))
	code, _, errOut = run(t, "", "site", busy)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "choose a new or empty directory")

	fake := filepath.Join(t.TempDir(), "module")
	require.NoError(t, os.WriteFile(fake, []byte("not a real module"), 0o644))
	dir := filepath.Join(t.TempDir(), "public")
	code, out, errOut := run(t, "", "site", "--wasm", fake, "--wasm-exec", fake, dir)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "Wrote the static site to "+dir)
	assert.FileExists(t, filepath.Join(dir, "lessons", "08-key-groups", "index.html"))
	assert.FileExists(t, filepath.Join(dir, "wasm", "statelab.wasm"))
	// Writing again over its own site is fine.
	code, _, errOut = run(t, "", "site", "--wasm", fake, "--wasm-exec", fake, dir)
	assert.Equal(t, exitOK, code, errOut)
}
