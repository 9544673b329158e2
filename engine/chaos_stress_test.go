package engine

import (
	"context"
	"os"
	"strconv"
	"testing"
)

func TestChaosStress(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STRESS"))
	if n == 0 {
		t.Skip()
	}
	be := Backend(os.Getenv("BACKEND"))
	sink := os.Getenv("SINK")
	fails := 0
	for seed := int64(1); seed <= int64(n); seed++ {
		res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Records: 800, Crashes: 6, Rescales: 4, Backend: be, Sink: sink})
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		if !res.OK {
			fails++
			t.Errorf("seed %d: %s", seed, res.Summary())
			if fails < 3 {
				for _, a := range res.Actions {
					t.Log(a)
				}
				for _, d := range res.Diff(10) {
					t.Log(d)
				}
			}
		}
	}
}
