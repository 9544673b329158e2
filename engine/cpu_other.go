//go:build !unix

package engine

import "time"

// processCPU is not measured on this platform; throughput per CPU second
// is then left out.
func processCPU() time.Duration { return 0 }
