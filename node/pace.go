package node

import "time"

// The group pace (docs/protocol.md §5, "The group pace"): every server,
// S_0 and the others alike, starts its layer of a round no sooner than the
// group's round interval after it started its layer of the previous one.
// S_0's wait is what spaces the rounds; the others' waits are what make
// the pace hold with any one honest server in the chain: a round's signed
// request list needs every server's layer, and no client sends round
// r + W before it holds round r's list, so a chain with a fast S_0 still
// runs no faster than its slowest honest server lets it. A wait never
// charges anybody: it only delays, by at most the jitter between two
// rounds' batches on the way to this server.

// awaitPace takes this server's next start of a layer in epoch e, at least
// the round interval after the last one, and waits for it on the server's
// clock (virtual time in the tests). It reports false if the server is
// closing.
func (s *Server) awaitPace(e *sepoch) bool {
	if s.hookRun().NoPace() {
		return true
	}
	iv := time.Duration(e.final.Desc.Params.RoundIntervalMs) * time.Millisecond
	s.mu.Lock()
	at := time.Now()
	if at.Before(e.paceNext) {
		at = e.paceNext
	}
	e.paceNext = at.Add(iv)
	s.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}
