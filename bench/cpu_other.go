//go:build !unix

package bench

import "time"

// processCPU is not measured on this platform; the per-CPU-second ratios are
// then left out.
func processCPU() time.Duration { return 0 }
