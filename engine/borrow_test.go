package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A source's batch borrows the topic's held records: releasing the batch
// must leave the topic's records as they were, and the batch gets a slice
// of its own back; a batch of generated records is filled by copying.
func TestBatchBorrowsHeldRecordsAndGivesThemBack(t *testing.T) {
	tp := newTopic("lines", 1, operatorOptions{Partitions: 2, Generator: GeneratorNone, Lines: []string{"a", "b", "c", "d", "e"}})
	b := newBatch()
	b.fill(tp, 0, 1, 64) // partition 0 holds a, c, e
	require.Len(t, b.recs, 2)
	assert.Equal(t, []string{"c", "e"}, []string{b.recs[0].Text, b.recs[1].Text})
	assert.NotNil(t, b.spare, "held records are borrowed, not copied")
	assert.Equal(t, int64(4), b.latestTimestamp(tp, 0), "lines are in order: the last one's timestamp")
	b.release()
	assert.Equal(t, "c", tp.extra[0][1].Text, "releasing the batch cleared the topic's record")
	assert.Equal(t, "e", tp.extra[0][2].Text)

	// A record typed in with an older timestamp: the partition is no
	// longer in order, and the batch's latest timestamp is found by a pass.
	tp.append(0, Record{Text: "late", Timestamp: 1})
	tp.append(0, Record{Text: "later", Timestamp: 0})
	b = newBatch()
	b.fill(tp, 0, 2, 64) // e (4), late (1), later (0)
	require.Len(t, b.recs, 3)
	assert.False(t, tp.inOrder(0))
	assert.Equal(t, int64(4), b.latestTimestamp(tp, 0))
	assert.True(t, tp.inOrder(1), "partition 1 is still in order")
	b.release()

	gen := newTopic("words", 1, operatorOptions{Partitions: 1, Generator: GeneratorWords, Records: 10, Keys: 5, WordsPerLine: 2})
	b = newBatch()
	b.fill(gen, 0, 0, 4)
	assert.Len(t, b.recs, 4)
	assert.Nil(t, b.spare, "generated records are copied into the batch's own slice")
	b.release()
}
