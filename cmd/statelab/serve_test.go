package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeIsTheDefaultCommand(t *testing.T) {
	assert.Equal(t, "serve", defaultCommand)
}

func TestServeStartsAndStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--quiet"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	re := regexp.MustCompile(`running at (http://127\.0\.0\.1:\d+/)`)
	var url string
	deadline := time.Now().Add(time.Minute) // generous: decides only how long a failure takes
	for url == "" && time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NotEmpty(t, url, "the URL is printed; stdout: %q stderr: %q", out.String(), errb.String())
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "StateLab")

	cancel() // what Ctrl-C does
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop after its context was cancelled")
	}
	assert.Contains(t, out.String(), "stopped")
}

func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	code, _, errs := run(t, "", "serve", "--addr", ln.Addr().String(), "--data", t.TempDir())
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs, ln.Addr().String()+" is already in use")
	assert.Contains(t, errs, "--addr")
}

func TestServeBadFlags(t *testing.T) {
	code, _, errs := run(t, "", "serve", "--max-sessions", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--max-sessions 0 is below 1")
	code, _, errs = run(t, "", "serve", "--max-forks", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--max-forks 0 is below 1")
	code, _, errs = run(t, "", "serve", "--max-followers", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--max-followers 0 is below 1")
	code, _, errs = run(t, "", "serve", "--max-classrooms", "-2")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--max-classrooms -2 is below 1")
	code, _, errs = run(t, "", "serve", "extra")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `unexpected argument "extra"`)
	code, _, errs = run(t, "", "serve", "--allow-origin", "localhost:3000", "--data", t.TempDir())
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "scheme://host")
}
