package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keptRecords is every committed record a sink store keeps, in order.
func keptRecords(st *sinkStore) []Record {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]Record, 0, st.kept)
	for i := range st.kept {
		out = append(out, st.record(i))
	}
	return out
}

// TestForkSharesCommittedOutput: a fork does not copy the records a sink
// has committed (issue 17: most of a fork's memory); it shares them with
// its original, and yet each goes on appending its own: stepped alike,
// both hold the same records, and the comparison the fork counts afresh
// is the original's.
func TestForkSharesCommittedOutput(t *testing.T) {
	spec := ChaosSpec(5, 3000, BackendMemory, SinkAtLeastOnce)
	s, err := NewStepper(spec, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	s.Steps(1500)
	sink := ""
	for id, st := range s.c.sinks {
		if st.kept > 0 {
			sink = id
		}
	}
	require.NotEmpty(t, sink, "a sink committed records before the fork")
	before := keptRecords(s.c.sinks[sink])

	f, err := s.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	so, sf := s.c.sinks[sink], f.c.sinks[sink]
	assert.Same(t, &so.chunks[0][0], &sf.chunks[0][0], "the fork shares the committed records")

	s.Steps(2000)
	f.Steps(2000)
	got, want := keptRecords(sf), keptRecords(so)
	require.Greater(t, len(want), len(before), "both committed more after the fork")
	assert.Equal(t, want, got, "stepped alike, the fork committed what the original did")
	assert.Equal(t, before, want[:len(before)], "the original's records before the fork are untouched")

	// The fork diverges: what it commits from now on is its own.
	require.NoError(t, f.Do(Command{Name: CmdCrashSubtask, Task: "count#0"}))
	f.Steps(1500)
	s.Steps(1500)
	assert.Equal(t, want, keptRecords(so)[:len(want)], "the original's records are not overwritten by the fork")
	assert.Equal(t, want, keptRecords(sf)[:len(want)])

	sc, err := s.Compare()
	require.NoError(t, err)
	s2, err := s.Fork(Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer s2.Close()
	fc, err := s2.Compare()
	require.NoError(t, err)
	assert.Equal(t, sc, fc, "a fresh fork's comparison, counted again, is the original's")
}
