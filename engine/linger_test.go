package engine

import (
	"fmt"
	"testing"

	"github.com/statelab/statelab/rescale"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLingeringSubtaskSendsOnlyFullBatches checks output batching across
// inputs (subtask.linger, set by the Live driver): a tokenizer routing its
// words over a hash edge to four count subtasks sends a batch only once it
// holds the batch size of records, keeps the rest open across inputs, and
// sends it all, in order and with each record's key group, when flushed.
// Without linger (the Stepper) every input's outputs leave at once. A
// tokenizer that flushed after every input sent batches of about a quarter
// of its input each — four times the elements of a full batch, each
// costing a hand-off and a turn of the receiver's loop.
func TestLingeringSubtaskSendsOnlyFullBatches(t *testing.T) {
	s, _ := newTestStepper(t, wordCount(100, 1, 4, 128))
	settle(t, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.c.ex.byName["tokenizer#0"]
	require.NotNil(t, tok)
	require.Equal(t, TaskRunning, tok.getStatus())
	require.Len(t, tok.outs, 1)
	require.Len(t, tok.outs[0].chans, 4)
	tok.outbox = tok.outbox[:0]

	const size = 8
	var sent []string
	input := func(from, n int) {
		b := newBatch()
		for i := range n {
			b.recs = append(b.recs, Record{Text: fmt.Sprintf("w%d", from+i)})
		}
		require.NoError(t, tok.handleElement(0, element{kind: elemRecords, batch: b}))
	}
	take := func() {
		for _, it := range tok.outbox {
			require.Equal(t, elemRecords, it.e.kind)
			for i, r := range it.e.batch.recs {
				sent = append(sent, r.Key)
				require.Len(t, it.e.batch.kgs, len(it.e.batch.recs))
				kg := int(it.e.batch.kgs[i])
				assert.Equal(t, rescale.KeyGroupForString(r.Key, 128), kg, "key group of %q", r.Key)
				assert.Equal(t, it.ch.to.index, rescale.OperatorIndexForKeyGroup(128, 4, kg), "%q on %s", r.Key, it.ch.name)
			}
		}
		clear(tok.outbox)
		tok.outbox = tok.outbox[:0]
	}

	tok.linger = size
	for k := range 10 {
		input(k*6, 6)
		for _, it := range tok.outbox {
			assert.Len(t, it.e.batch.recs, size, "a lingering subtask sends full batches only (%s)", it.ch.name)
		}
		take()
	}
	assert.True(t, tok.hasPending(), "what does not fill a batch stays open")
	assert.Less(t, len(sent), 60)
	tok.linger = 0
	tok.flush()
	take()
	assert.False(t, tok.hasPending())
	require.Len(t, sent, 60, "every word sent once")
	seen := map[string]bool{}
	for _, w := range sent {
		assert.False(t, seen[w], "%q sent twice", w)
		seen[w] = true
	}

	// Not lingering (the Stepper, or the Live driver outside an input):
	// an input's outputs leave with it.
	input(100, 6)
	assert.False(t, tok.hasPending())
	n := 0
	for _, it := range tok.outbox {
		n += len(it.e.batch.recs)
	}
	assert.Equal(t, 6, n)
	take()
}
