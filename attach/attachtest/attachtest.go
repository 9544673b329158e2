// Package attachtest serves recorded Flink REST answers over HTTP for tests
// of attach mode (package attach, the statelab command, the web page).
package attachtest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// FixtureDir is the directory of a fixture set in attach/testdata, e.g.
// FixtureDir("flink-1.17").
func FixtureDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

// Response is a canned answer that replaces a fixture file.
type Response struct {
	Status      int
	ContentType string
	Body        string
}

// Server is an httptest server that answers GET <path> with the file
// <dir>/<path>.json (status 200) or <dir>/<path>.404.json (status 404), and
// with Flink's "Not found" error otherwise. It records every request.
type Server struct {
	*httptest.Server
	dir string

	mu        sync.Mutex
	requests  []string
	overrides map[string]Response
}

// NewServer starts a server for the fixture directory dir; it is closed when
// the test ends.
func NewServer(t testing.TB, dir string) *Server {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("attachtest: fixture directory: %v", err)
	}
	s := &Server{dir: dir, overrides: map[string]Response{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Override answers GET p with r instead of the fixture.
func (s *Server) Override(p string, r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overrides[p] = r
}

// Requests returns "METHOD path" for every request so far, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := path.Clean(r.URL.Path)
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+p)
	o, overridden := s.overrides[p]
	s.mu.Unlock()
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, `{"errors":["Not allowed: attach mode only reads"]}`)
		return
	}
	if overridden {
		if o.ContentType != "" {
			w.Header().Set("Content-Type", o.ContentType)
		}
		w.WriteHeader(o.Status)
		_, _ = w.Write([]byte(o.Body))
		return
	}
	base := filepath.Join(s.dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	if b, err := os.ReadFile(base + ".json"); err == nil {
		writeJSON(w, http.StatusOK, string(b))
		return
	}
	if b, err := os.ReadFile(base + ".404.json"); err == nil {
		writeJSON(w, http.StatusNotFound, string(b))
		return
	}
	// Flink's router answers an unknown path like this.
	writeJSON(w, http.StatusNotFound, `{"errors":["Not found: `+p+`"]}`)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
