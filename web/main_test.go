package web

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// browserParallel is how many of the package's parallel tests run at once
// when go test is given no -parallel and the race detector is off. Most of
// them are browser tests that spend their time waiting for a run at the
// teaching pace, each on a server and a tab of its own (see sharedBrowser),
// so more of them than the machine's cores (go test's default, 2 here)
// overlap those waits. Not more: at 6 on a 2-core machine shared with other
// work (load 18-21) pages of lesson journeys at 64x fell 256 frames behind,
// were closed as too slow, and missed a click. Under -race the servers need
// several times the CPU, and go test's default stays.
const browserParallel = 4

// TestMain ends the browser the package's browser tests share
// (e2e_test.go) after the last test, and sets -parallel (see
// browserParallel).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && !raceEnabled {
		if err := flag.Set("test.parallel", strconv.Itoa(browserParallel)); err != nil {
			panic(err)
		}
	}
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
