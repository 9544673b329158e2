package main

import (
	"context"
	"fmt"
	"path"

	"github.com/statelab/statelab/web"
)

func init() {
	register(command{name: "site", summary: "write the static site: lessons and sandbox with the engine compiled to WebAssembly, for any static host", run: runSite})
}

// runSite writes the static site (issue 21): web.WriteSite does the work.
func runSite(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("site")
	wasm := fs.String("wasm", "", "a statelab.wasm built before (GOOS=js GOARCH=wasm go build ./cmd/statelab-wasm); default: build it now with the go command")
	wasmExec := fs.String("wasm-exec", "", "the wasm_exec.js of the Go that built --wasm (default: $(go env GOROOT)/lib/wasm/wasm_exec.js)")
	local := fs.String("local-server", "http://127.0.0.1:8080", "where the server-only pages (classroom, attach, performance) send a visitor: a local statelab serve")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() != 1 {
		code, _ := usageError(io, fs.Name(), "say where to write the site: statelab site DIR (a new or empty directory, or one a previous statelab site wrote)")
		return code
	}
	dir := fs.Arg(0)
	if err := web.CheckSiteDir(dir); err != nil {
		code, _ := usageError(io, fs.Name(), "%v", err)
		return code
	}
	rep, err := web.WriteSite(ctx, web.SiteOptions{Dir: dir, Wasm: *wasm, WasmExec: *wasmExec, LocalServer: *local})
	if err != nil {
		fmt.Fprintf(io.Err, "statelab site: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(io.Out, "Wrote the static site to %s: %d pages, %d assets, %s (%.1f MB, %.1f MB gzip-compressed).\n",
		dir, rep.Pages, rep.Assets, path.Join(web.SiteWasmDir, web.SiteWasmFile), float64(rep.WasmBytes)/1e6, float64(rep.WasmGzip)/1e6)
	fmt.Fprintf(io.Out, "Publish the directory's contents on any static host, at its root or under a path (e.g. a GitHub Pages project site), or try it locally with a static file server rooted at %s.\n", dir)
	return exitOK
}
