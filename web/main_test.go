package web

import (
	"flag"
	"os"
	"testing"
)

// TestMain ends the browser the package's browser tests share
// (e2e_test.go) after the last test, and gives the package a longer
// default timeout (lengthenDefaultTimeout).
func TestMain(m *testing.M) {
	flag.Parse()
	lengthenDefaultTimeout()
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
