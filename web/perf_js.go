//go:build js

package web

import "net/http"

// PerfConfig is empty in the WebAssembly build: performance runs measure
// the machine StateLab runs on, so they need a server (statelab serve); the
// static site's Performance link says so.
type PerfConfig struct{}

func (srv *Server) perfRoutes(*http.ServeMux) {}
