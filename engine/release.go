package engine

// ReleaseCaches drops what a Stepper keeps only to answer the next Snapshot
// quickly: the ground truth of each sink and the sink's comparison with it
// (a few MB for a sandbox's 20,000 records). The next Snapshot computes them
// again. StateLab's web server calls it when it pauses a run nobody watches,
// so an idle session holds its run and little else.
func (s *Stepper) ReleaseCaches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.c.truthCache, s.c.cmpCache = nil, nil
}
