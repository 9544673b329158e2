package web

import (
	"os"
	"testing"
)

// TestMain ends the browser the package's browser tests share
// (e2e_test.go) after the last test. go test's default -parallel (the
// cores, 2 here) stays: at 4 without -race and at load 14-25 a lesson
// journey's typed rescale was lost (TestJourneyLearner, lesson 06 step 3).
func TestMain(m *testing.M) {
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
