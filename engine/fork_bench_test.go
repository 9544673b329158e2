package engine

import (
	"testing"
)

// BenchmarkFork copies a word count of 20000 records at step 4000.
func BenchmarkFork(b *testing.B) {
	spec := ChaosSpec(2, 20000, BackendMemory, SinkExactlyOnce)
	s, err := NewStepper(spec, Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Steps(4000)
	_ = s.Snapshot() // the views compute the ground truth once
	b.ResetTimer()
	for range b.N {
		f, err := s.Fork(Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = f.Close()
		b.StartTimer()
	}
}
