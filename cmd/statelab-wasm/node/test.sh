#!/usr/bin/env bash
# The GOOS=js GOARCH=wasm checks of issue 21, for CI (.ci/run) and by hand:
#
#   cmd/statelab-wasm/node/test.sh
#
# 1. rescale, state, engine, catalog, lessons, web and the wasm entry point
#    build for js/wasm (Pebble stays out: //go:build !js).
# 2. The tests of rescale, state (memory and fs backends), catalog, engine
#    (-short) and lessons (-short: every lesson's checks on the browser
#    build's engine) run in Node on StateLab's in-memory file system
#    (static/js/memfs.js), the one the static site uses: the fs backend's
#    checkpoint files never touch the disk.
#
# Needs Node (Debian: apt-get install -y --no-install-recommends nodejs).
# Tests whose job runs on pebble skip themselves (engine's newTestStepper
# and skipWithoutBackend, state's contract suite); subtests named
# "pebble…" are skipped by name, and so are lessons 03 and 10, whose jobs
# run on pebble (the site says they need a server).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
command -v node >/dev/null || { echo "test.sh: node not found; install Debian's nodejs (apt-get install -y --no-install-recommends nodejs)" >&2; exit 1; }
EXEC="$PWD/cmd/statelab-wasm/node/go_js_wasm_memfs_exec"
export GOOS=js GOARCH=wasm
PEBBLE_ONLY='/pebble'
go build ./rescale ./state ./engine ./catalog ./lessons ./web ./cmd/statelab-wasm
go test -count=1 -exec "$EXEC" ./rescale ./state ./catalog
go test -short -count=1 -timeout 20m -exec "$EXEC" -skip "$PEBBLE_ONLY" ./engine
go test -short -count=1 -timeout 20m -exec "$EXEC" -skip '/03-state-backends|/10-incremental-checkpoints' ./lessons
