package web

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/bench"
)

func TestMeasureFanOutThroughTheWebServerDeliversEveryEvent(t *testing.T) {
	events := bench.FanOutEvents(200)
	for _, v := range []int{1, 4} {
		res, err := MeasureFanOut(context.Background(), v, events)
		require.NoError(t, err)
		assert.Equal(t, int64(v*200), res.Delivered, "%d viewers", v)
		assert.Positive(t, res.Elapsed)
	}
}

func TestMeasureFanOutNeedsAViewer(t *testing.T) {
	_, err := MeasureFanOut(context.Background(), 0, bench.FanOutEvents(1))
	assert.Error(t, err)
}
