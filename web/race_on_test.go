//go:build race

package web

// raceEnabled: the race detector slows everything about tenfold; timing
// bounds of load tests widen with it.
const raceEnabled = true
