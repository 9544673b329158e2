package web

import (
	"os"
	"testing"
)

// TestMain ends the browser the package's browser tests share
// (e2e_test.go) after the last test.
func TestMain(m *testing.M) {
	code := m.Run()
	closeBrowser()
	os.Exit(code)
}
