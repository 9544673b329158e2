//go:build !race

package web

// raceEnabled says the test binary was built with -race.
const raceEnabled = false
