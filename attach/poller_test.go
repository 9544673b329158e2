package attach_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/attach/attachtest"
)

type pollResult struct {
	s   attach.Snapshot
	err error
}

func TestPollerKeepsLastGoodSnapshotAndLastError(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.17"))
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	results := make(chan pollResult, 100)
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := attach.NewPoller(c, attach.PollerConfig{Interval: 10 * time.Millisecond,
		OnPoll: func(s attach.Snapshot, err error) {
			select { // never block the poller, however slow the test
			case results <- pollResult{s, err}:
			default:
			}
		},
		Now: func() time.Time { return fixed }})
	require.NoError(t, err)
	_, _, ok := p.Last()
	assert.False(t, ok, "nothing before the first poll")

	require.NoError(t, p.Start(context.Background()))
	assert.ErrorIs(t, p.Start(context.Background()), attach.ErrPollerStarted)
	first := <-results
	require.NoError(t, first.err)
	assert.Len(t, first.s.Jobs, 2)
	second := <-results
	require.NoError(t, second.err, "polls again after the interval")

	// The address starts answering HTML: the error is kept next to the last
	// good snapshot, so a page can show both.
	srv.Override("/jobs", attachtest.Response{Status: 200, ContentType: "text/html", Body: "<html></html>"})
	for res := range results {
		if res.err != nil {
			assert.ErrorIs(t, res.err, attach.ErrNotFlink)
			break
		}
	}
	assert.ErrorIs(t, p.Err(), attach.ErrNotFlink)
	last, at, ok := p.Last()
	require.True(t, ok)
	assert.Len(t, last.Jobs, 2)
	assert.Equal(t, fixed, at)

	p.Stop()
	p.Stop() // idempotent
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
}

func TestPollerStopCancelsAPollInFlight(t *testing.T) {
	var calls atomic.Int32
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		entered <- struct{}{}
		<-r.Context().Done() // hang until the client gives up
	}))
	defer srv.Close()
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	var reported atomic.Int32
	p, err := attach.NewPoller(c, attach.PollerConfig{Interval: time.Hour,
		OnPoll: func(attach.Snapshot, error) { reported.Add(1) }})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	<-entered
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not cancel the request in flight")
	}
	assert.Equal(t, int32(1), calls.Load())
	assert.Zero(t, reported.Load(), "a cancelled poll is not reported")
	assert.NoError(t, p.Err())
}

func TestPollerEndsWithItsContext(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{}, 100)
	p, err := attach.NewPoller(c, attach.PollerConfig{Interval: 5 * time.Millisecond,
		OnPoll: func(attach.Snapshot, error) {
			select {
			case polled <- struct{}{}:
			default:
			}
		}})
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	<-polled
	cancel()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("poller did not end with its context")
	}
	p.Stop()
}

func TestNewPollerNeedsAnInterval(t *testing.T) {
	c, err := attach.NewClient("http://localhost:8081")
	require.NoError(t, err)
	_, err = attach.NewPoller(c, attach.PollerConfig{})
	assert.Error(t, err)
	p, err := attach.NewPoller(c, attach.PollerConfig{Interval: time.Second})
	require.NoError(t, err)
	p.Stop() // before Start: no-op
	assert.Nil(t, p.Done())
}
