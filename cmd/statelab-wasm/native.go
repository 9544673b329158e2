//go:build !js

package main

import (
	"fmt"
	"os"
)

// main outside the browser says how to build the module: the package is
// meant for GOOS=js GOARCH=wasm (main.go), and statelab site builds it.
func main() {
	fmt.Fprintln(os.Stderr, "statelab-wasm runs inside a web page: build it with GOOS=js GOARCH=wasm go build ./cmd/statelab-wasm, or let statelab site DIR build it and write the static site")
	os.Exit(2)
}
