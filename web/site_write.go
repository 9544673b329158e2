package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/statelab/statelab/static"
)

// The files of the static site beside its pages.
const (
	SiteWasmDir  = "wasm"
	SiteWasmFile = "statelab.wasm"
	SiteExecFile = "wasm_exec.js"
)

// SiteOptions says where and how WriteSite writes the static site.
type SiteOptions struct {
	Dir string
	// Wasm is a statelab.wasm built before; "" builds it with the go
	// command (which needs StateLab's source: the module of the working
	// directory).
	Wasm string
	// WasmExec is the wasm_exec.js of the Go that built Wasm; "" takes
	// $(go env GOROOT)/lib/wasm/wasm_exec.js.
	WasmExec string
	// LocalServer is where the server-only pages send a visitor.
	LocalServer string
}

// SiteReport is what WriteSite wrote.
type SiteReport struct {
	Pages, Assets int
	// WasmBytes and WasmGzip are the module's size and its size after gzip
	// -9, what a static host that compresses sends (the budget is 8 MB).
	WasmBytes, WasmGzip int64
}

// CheckSiteDir refuses a directory that holds something other than a site:
// writing pages into a project by mistake would be hard to undo.
func CheckSiteDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, SiteWasmDir, SiteWasmFile)); err == nil {
		return nil
	}
	return fmt.Errorf("%s is not empty and holds no site a previous statelab site wrote (no %s/%s); choose a new or empty directory", dir, SiteWasmDir, SiteWasmFile)
}

// WriteSite writes the static site into o.Dir: the pages (SitePages), the
// embedded assets under static/, and wasm/statelab.wasm with the
// wasm_exec.js loader of the Go that built it.
func WriteSite(ctx context.Context, o SiteOptions) (SiteReport, error) {
	var rep SiteReport
	data, err := os.MkdirTemp("", "statelab-site-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(data)
	logger := slog.New(slog.DiscardHandler)
	srv, err := New(Config{DataDir: data, Engines: NewEngine(logger), Logger: logger})
	if err != nil {
		return rep, err
	}
	pages, err := srv.SitePages(ctx, o.LocalServer)
	_ = srv.Close()
	if err != nil {
		return rep, err
	}
	for _, p := range pages {
		name := filepath.FromSlash(strings.TrimPrefix(p.Path, "/"))
		if !strings.HasSuffix(p.Path, ".html") {
			name = filepath.Join(name, "index.html")
		}
		if err := writeSiteFile(filepath.Join(o.Dir, name), p.HTML); err != nil {
			return rep, err
		}
		rep.Pages++
	}
	err = fs.WalkDir(static.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		b, err := fs.ReadFile(static.FS, p)
		if err != nil {
			return err
		}
		rep.Assets++
		return writeSiteFile(filepath.Join(o.Dir, "static", filepath.FromSlash(p)), b)
	})
	if err != nil {
		return rep, fmt.Errorf("write assets: %w", err)
	}
	wasmPath := filepath.Join(o.Dir, SiteWasmDir, SiteWasmFile)
	if err := os.MkdirAll(filepath.Dir(wasmPath), 0o755); err != nil {
		return rep, err
	}
	if o.Wasm != "" {
		b, err := os.ReadFile(o.Wasm)
		if err != nil {
			return rep, fmt.Errorf("read --wasm: %w", err)
		}
		if err := writeSiteFile(wasmPath, b); err != nil {
			return rep, err
		}
	} else if err := buildWasm(ctx, wasmPath); err != nil {
		return rep, err
	}
	execJS := o.WasmExec
	if execJS == "" {
		root, err := goEnv(ctx, "GOROOT")
		if err != nil {
			return rep, err
		}
		execJS = filepath.Join(root, "lib", "wasm", SiteExecFile)
	}
	b, err := os.ReadFile(execJS)
	if err != nil {
		return rep, fmt.Errorf("read the Go WebAssembly loader: %w; pass the wasm_exec.js of the Go that built the module with --wasm-exec", err)
	}
	if err := writeSiteFile(filepath.Join(o.Dir, SiteWasmDir, SiteExecFile), b); err != nil {
		return rep, err
	}
	rep.WasmBytes, rep.WasmGzip, err = wasmSizes(wasmPath)
	return rep, err
}

// buildWasm compiles cmd/statelab-wasm for GOOS=js GOARCH=wasm: it needs
// the go command and StateLab's source (the module this binary came from).
func buildWasm(ctx context.Context, out string) error {
	mod, err := goEnv(ctx, "GOMOD")
	if err != nil || mod == "" || mod == os.DevNull {
		return fmt.Errorf("building the WebAssembly module needs StateLab's source and the go command: run statelab site inside the repository (go run ./cmd/statelab site DIR), or pass a module built before with --wasm")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", abs, "./cmd/statelab-wasm")
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the WebAssembly module (GOOS=js GOARCH=wasm go build ./cmd/statelab-wasm): %w\n%s", err, stderr.String())
	}
	return nil
}

func goEnv(ctx context.Context, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", name)
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=")
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w (the site needs the go command on PATH, or --wasm and --wasm-exec)", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// wasmSizes returns the module's size and its gzip-compressed size (what a
// static host that compresses sends; the budget is 8 MB compressed).
func wasmSizes(p string) (raw, gz int64, err error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0, err
	}
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := w.Write(b); err != nil {
		return 0, 0, err
	}
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	return int64(len(b)), int64(buf.Len()), nil
}

func writeSiteFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
