package engine

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// TestChaosStress runs many chaos seeds across backends and sinks, with more
// faults than the default. It runs only when STRESS is set to the number of
// seeds: STRESS=200 go test ./engine -run ChaosStress (add DRIVER=live and
// -race for the Live driver).
func TestChaosStress(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STRESS"))
	if n == 0 {
		t.Skip("set STRESS=<seeds> to run")
	}
	for seed := int64(1000); seed < int64(1000+n); seed++ {
		be := []Backend{BackendMemory, BackendMemory, BackendFS, BackendPebble}[seed%4]
		sink := []string{SinkExactlyOnce, SinkExactlyOnce, SinkAtLeastOnce}[seed%3]
		res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: 700, Crashes: 5, Rescales: 3,
			Backend: be, Sink: sink, Driver: os.Getenv("DRIVER"), Dir: t.TempDir()})
		if err != nil {
			t.Errorf("seed %d %s: %v", seed, be, err)
			continue
		}
		if !res.OK {
			t.Errorf("seed %d %s: %s %v", seed, be, res.Summary(), res.Diff(5))
		}
	}
}
