package web

import (
	"flag"
	"time"
)

// packageTimeout is the package's test timeout when go test is given no
// -timeout. go test's default, 10 minutes, is less than the web package's
// browser journeys need on a busy 2-core machine — the README's
// `go test ./...` beside other work (load 12-28) was cut off at 600 s with
// every test still passing — so a plain `go test ./...` on a busy machine
// failed for the clock alone. CI gives -timeout itself and keeps it.
const packageTimeout = 30 * time.Minute

// lengthenDefaultTimeout sets -test.timeout to packageTimeout unless the
// command line gave one; TestMain calls it after flag.Parse and before
// m.Run, which starts the timeout's clock.
func lengthenDefaultTimeout() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.timeout" })
	if !set {
		if err := flag.Set("test.timeout", packageTimeout.String()); err != nil {
			panic(err)
		}
	}
}
