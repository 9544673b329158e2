package attach

import (
	"context"
	"errors"
	"sync"
	"time"
)

// PollerConfig configures a Poller.
type PollerConfig struct {
	// Interval between the start of one snapshot and the next; required.
	Interval time.Duration
	Options  Options
	// OnPoll, if set, is called after every snapshot from the poller's
	// goroutine, with the snapshot or the error. It must return quickly: the
	// next poll waits for it. A cancelled poll (Stop) is not reported.
	OnPoll func(Snapshot, error)
	// Now is the clock used for the time of the last success; time.Now if nil.
	Now func() time.Time
}

// Poller takes a snapshot at a fixed interval in its own goroutine and keeps
// the last good one and the last error, so a page can go on showing the
// last known state together with what went wrong.
type Poller struct {
	client *Client
	cfg    PollerConfig

	mu      sync.Mutex
	last    Snapshot
	lastAt  time.Time
	haveAny bool
	lastErr error
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// ErrPollerStarted is returned by Start on a poller already started.
var ErrPollerStarted = errors.New("attach: poller already started")

// NewPoller returns a stopped poller.
func NewPoller(c *Client, cfg PollerConfig) (*Poller, error) {
	if cfg.Interval <= 0 {
		return nil, errors.New("attach: poll interval must be positive")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Poller{client: c, cfg: cfg}, nil
}

// Start polls now and then every interval until ctx is cancelled or Stop is
// called. A poller starts once.
func (p *Poller) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return ErrPollerStarted
	}
	p.started = true
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.run(ctx)
	return nil
}

// Stop cancels any poll in flight and waits for the goroutine to end. It is
// safe to call more than once, and before Start.
func (p *Poller) Stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Done is closed when the poller's goroutine has ended (nil before Start).
func (p *Poller) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Last returns the last successful snapshot and when it was taken; ok is
// false until one succeeds.
func (p *Poller) Last() (s Snapshot, at time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.lastAt, p.haveAny
}

// Err is the error of the latest poll, nil when it succeeded.
func (p *Poller) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

func (p *Poller) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		p.pollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Poller) pollOnce(ctx context.Context) {
	s, err := p.client.Snapshot(ctx, p.cfg.Options)
	if ctx.Err() != nil {
		return // stopped mid-poll: nothing to report
	}
	p.mu.Lock()
	p.lastErr = err
	if err == nil {
		p.last, p.lastAt, p.haveAny = s, p.cfg.Now(), true
	}
	p.mu.Unlock()
	if p.cfg.OnPoll != nil {
		p.cfg.OnPoll(s, err)
	}
}
