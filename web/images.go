package web

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/statelab/statelab/engine"
)

// Images of a run are what time travel seeks from (timetravel.go): paused
// copies of the session's Stepper (engine.Fork) taken every imageEvery
// steps while it plays in teaching mode. They are never stepped; a seek
// forks the nearest one and steps the fork on.

// Forker is an Engine that can copy its running job into a new, paused
// teaching-mode Stepper in dir (whatever driver runs it).
type Forker interface {
	ForkStepper(dir string) (*engine.Stepper, error)
}

var _ Forker = (*driverEngine)(nil)

// ForkStepper copies the running job (engine.Stepper.Fork or
// engine.Live.Fork); the run goes on undisturbed.
func (e *driverEngine) ForkStepper(dir string) (*engine.Stepper, error) {
	e.swap.RLock()
	defer e.swap.RUnlock()
	opts := engine.Options{Dir: dir}
	if e.st != nil {
		return e.st.Fork(opts)
	}
	return e.l.Fork(opts)
}

// image is one kept copy of the run.
type image struct {
	step int64
	cmds int // commands of the run's log it has applied
	dir  string
	// kept is the server's count of images, less one when this one closes.
	kept *atomic.Int64

	mu     sync.Mutex
	st     *engine.Stepper
	closed bool
}

var errImageGone = errors.New("web: the image was dropped")

// fork copies the image into a new Stepper in dir.
func (img *image) fork(dir string) (*engine.Stepper, error) {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.closed {
		return nil, fmt.Errorf("%w: try again", errImageGone)
	}
	return img.st.Fork(engine.Options{Dir: dir})
}

func (img *image) close() {
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.closed {
		return
	}
	img.closed = true
	img.kept.Add(-1)
	_ = img.st.Close()
	_ = os.RemoveAll(img.dir)
}

// imageAt returns the newest image at or before step (nil: none).
func (x *sessionExt) imageAt(step int64) *image {
	x.mu.Lock()
	defer x.mu.Unlock()
	var best *image
	for _, img := range x.images {
		if img.step <= step {
			best = img
		}
	}
	return best
}

// maybeKeepImageLocked starts taking an image when the present has gone
// imageEvery steps past the last one (x.mu held; observe calls it).
func (s *Session) maybeKeepImageLocked() {
	x := &s.x
	if x.capturing || x.handedOver || x.review != nil || s.run.Driver == DriverLive {
		return
	}
	last := int64(0)
	if n := len(x.images); n > 0 {
		last = x.images[n-1].step
	}
	// Events tell the present's step only as far as the last event; the
	// image records its own, true step, so start a little early.
	if x.headStep < last+imageEvery*3/4 {
		return
	}
	x.capturing = true
	x.captureWG.Add(1)
	go s.captureImage(x.epoch)
}

// keepImage takes an image now (a fork's first, which starts its timeline).
func (s *Session) keepImage() {
	s.x.mu.Lock()
	if s.x.capturing {
		s.x.mu.Unlock()
		return
	}
	s.x.capturing = true
	s.x.captureWG.Add(1)
	epoch := s.x.epoch
	s.x.mu.Unlock()
	s.captureImage(epoch)
}

// captureImage forks the session's engine into a new image and keeps it,
// unless the run changed meanwhile (epoch).
func (s *Session) captureImage(epoch int64) {
	x := &s.x
	defer x.captureWG.Done()
	img, err := s.newImage()
	x.mu.Lock()
	x.capturing = false
	if err != nil || epoch != x.epoch || s.closed.Load() {
		x.mu.Unlock()
		if img != nil {
			img.close()
		}
		if err != nil && !s.closed.Load() {
			s.srv.log.Warn("keep an image of the run", "session", s.ID, "err", err)
		}
		return
	}
	i := len(x.images)
	for i > 0 && x.images[i-1].step > img.step {
		i--
	}
	x.images = append(x.images[:i], append([]*image{img}, x.images[i:]...)...)
	var evicted []*image
	limit := maxImages
	if s.Kind == KindFork {
		limit = maxForkImages
	}
	if s.srv.images.Load() > int64(s.srv.cfg.MaxImages) {
		// Over the server's budget: this session gives two back for the
		// one it took, down to two (the first and the newest).
		limit = min(limit, max(2, len(x.images)-2))
	}
	for len(x.images) > limit {
		evicted = append(evicted, x.thinLocked())
	}
	// The present may have moved on while this one was taken.
	s.maybeKeepImageLocked()
	x.mu.Unlock()
	for _, e := range evicted {
		e.close()
	}
}

// thinLocked removes the image whose loss leaves the smallest gap, never
// the first or the newest, so the images stay evenly spread over the run.
func (x *sessionExt) thinLocked() *image {
	best, gap := 1, int64(-1)
	for i := 1; i < len(x.images)-1; i++ {
		if g := x.images[i+1].step - x.images[i-1].step; gap < 0 || g < gap {
			best, gap = i, g
		}
	}
	img := x.images[best]
	x.images = append(x.images[:best], x.images[best+1:]...)
	return img
}

func (s *Session) newImage() (*image, error) {
	fk, ok := s.engine().(Forker)
	if !ok {
		return nil, errors.New("web: this engine cannot be copied")
	}
	dir := filepath.Join(s.run.DataDir, fmt.Sprintf("image-%d", s.x.views.Add(1)))
	st, err := fk.ForkStepper(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	step, _ := st.Position()
	s.srv.images.Add(1)
	return &image{step: step, cmds: len(st.CommandLog()), dir: dir, st: st, kept: &s.srv.images}, nil
}

// dropImages forgets the images (the run was reset or went to full speed).
func (s *Session) dropImages() {
	s.x.mu.Lock()
	imgs := s.x.images
	s.x.images = nil
	s.x.epoch++
	s.x.mu.Unlock()
	for _, img := range imgs {
		img.close()
	}
}

// Images reports the steps of the images a session keeps (tests, metrics).
func (s *Session) Images() []int64 {
	s.x.mu.Lock()
	defer s.x.mu.Unlock()
	out := make([]int64, len(s.x.images))
	for i, img := range s.x.images {
		out[i] = img.step
	}
	return out
}
