package web

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packageTimeout is the package's test timeout in place of go test's
// default. go test's 10 minutes are less than the web package's browser
// journeys need on a busy 2-core machine — the README's `go test ./...`
// beside other work (load 15-21) was cut off at 600 s with every test
// still passing — so a plain `go test ./...` on a busy machine failed for
// the clock alone.
const packageTimeout = 30 * time.Minute

// goTestDefaultTimeout is the timeout go test gives a test binary when its
// command line names none: it passes -test.timeout=10m0s explicitly, so
// the flag looks set either way.
const goTestDefaultTimeout = 10 * time.Minute

// lengthenDefaultTimeout sets -test.timeout to packageTimeout when it is go
// test's default; any other -timeout (CI gives 30m, a developer 2m or 0)
// is kept. TestMain calls it after flag.Parse and before m.Run, which
// starts the timeout's clock.
func lengthenDefaultTimeout() {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return
	}
	if d, err := time.ParseDuration(f.Value.String()); err == nil && d == goTestDefaultTimeout {
		if err := flag.Set("test.timeout", packageTimeout.String()); err != nil {
			panic(err)
		}
	}
}

// TestLengthenDefaultTimeout: only go test's default timeout is raised; a
// mistake would otherwise show only on a busy machine, as a timeout.
func TestLengthenDefaultTimeout(t *testing.T) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		t.Skip("no -test.timeout flag")
	}
	old := f.Value.String()
	defer func() { _ = flag.Set("test.timeout", old) }()
	for _, c := range []struct{ given, want string }{{"10m0s", "30m0s"}, {"2m0s", "2m0s"}, {"0s", "0s"}, {"40m0s", "40m0s"}} {
		require.NoError(t, flag.Set("test.timeout", c.given))
		lengthenDefaultTimeout()
		assert.Equal(t, c.want, f.Value.String(), "-timeout %s", c.given)
	}
}
