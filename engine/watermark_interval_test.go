package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// On the Live driver a source emits a watermark every
// pipeline.auto-watermark-interval (200 ms) of job time and the end of
// input at once; the Stepper emits one after every poll that advances it.
// A Live source with nothing left to read that holds a watermark back
// polls again when it is due.
func TestSourceWatermarksArePeriodicOnLive(t *testing.T) {
	tp := newTopic("lines", 1, operatorOptions{Partitions: 1, Lines: []string{"a", "b", "c"}})
	at := func(s *sourceLogic, tk *subtask, now time.Duration, wm int64) bool {
		tk.now = now
		return s.watermarkDue(tk, wm)
	}

	step := &subtask{c: &core{measure: false}}
	s := &sourceLogic{topic: tp, parts: []partitionCursor{{partition: 0}}}
	for i, now := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond} {
		assert.True(t, at(s, step, now, int64(i)), "Stepper: a watermark after every poll (%v)", now)
	}

	live := &subtask{c: &core{measure: true}}
	s = &sourceLogic{topic: tp, parts: []partitionCursor{{partition: 0}}}
	assert.True(t, at(s, live, 0, 1), "Live: the first watermark at once")
	assert.False(t, at(s, live, 50*time.Millisecond, 2), "Live: none within 200 ms of the last")
	assert.False(t, at(s, live, 199*time.Millisecond, 3))
	assert.Zero(t, s.nextPoll, "input left: the source polls on as it reads")
	assert.True(t, at(s, live, 200*time.Millisecond, 4), "Live: the next one 200 ms later")
	assert.True(t, at(s, live, 201*time.Millisecond, MaxWatermark), "Live: the end of input at once")

	// Read to the end, a watermark held back: poll again when it is due.
	s = &sourceLogic{topic: tp, parts: []partitionCursor{{partition: 0, offset: 3}}}
	assert.True(t, at(s, live, time.Second, 1))
	assert.False(t, at(s, live, time.Second+time.Millisecond, 2))
	assert.Equal(t, int64(time.Second+autoWatermarkInterval), s.nextPoll)
}
