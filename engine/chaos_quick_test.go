package engine

import (
	"context"
	"testing"
)

func TestChaosQuick(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		res, err := RunChaos(context.Background(), ChaosConfig{Seed: seed, Crashes: 3, Rescales: 2})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("%s steps=%d", res.Summary(), res.Steps)
		if !res.OK {
			for _, a := range res.Actions {
				t.Log(a)
			}
			for _, d := range res.Diff(10) {
				t.Log(d)
			}
			t.Fail()
		}
	}
}
