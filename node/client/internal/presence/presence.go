// Package presence is a client's count of full epochs present (docs/
// protocol.md §5.4 v3, "Presence independent of the job"): a client that
// comes only for a job, or leaves right after it, dates the job, and
// through the published ids the file. So a long-running client starts a
// queued job only after a wait of full epochs present, counted from its
// arrival (Draw), and honours a request to leave only after a fresh wait
// following its last job (MayLeave). Count has its own lock and calls
// nothing outside it; no I/O.
package presence

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/riffle-net/riffle/node/client/internal/waitline"
)

// Min and Max bound the wait in full epochs: 2 + G, G geometric with
// p = ½, capped at Max.
const Min, Max = 2, 8

// Draw draws 2 + G full epochs, G geometric with p = ½ (the number of 1
// bits of random bytes before the first 0), capped at Max.
func Draw(rnd io.Reader) (int, error) {
	w := Min
	var b [1]byte
	for w < Max {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return 0, err
		}
		if b[0]&1 == 0 {
			break
		}
		w++
	}
	return w, nil
}

// Count is a client's count of full epochs present.
type Count struct {
	now bool // jobs at once (the client's Now)

	mu      sync.Mutex
	full    int  // full epochs since arrival
	wait    int  // full epochs drawn at arrival before jobs start
	lastJob int  // full epochs at the last one with a job
	hadJob  bool // a job ran since arrival
	traffic bool // a job sent real traffic this epoch
}

// New returns the count of a client that arrives now, whose jobs wait
// wait full epochs (none with now).
func New(now bool, wait int) *Count {
	return &Count{now: now, wait: wait}
}

// Ready reports whether the client may carry its jobs' traffic: after its
// arrival wait, or at once with now.
func (p *Count) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now || p.full >= p.wait
}

// Sent notes that a job sent real traffic this epoch.
func (p *Count) Sent() {
	p.mu.Lock()
	p.traffic = true
	p.mu.Unlock()
}

// Full counts an epoch the client held its slot in from the first round
// to the end (whatever ended it), and notes the end of its last job; busy:
// a job is queued or running.
func (p *Count) Full(busy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.full++
	if p.traffic || busy {
		p.lastJob, p.hadJob = p.full, true
	}
	p.traffic = false
}

// MayLeave reports whether a client without a job (busy false) has
// waited w full epochs since its last job, if it had one.
func (p *Count) MayLeave(busy bool, w int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !busy && (!p.hadJob || p.full >= p.lastJob+w)
}

// Epochs is the full epochs counted since arrival.
func (p *Count) Epochs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.full
}

// SetWait sets the wait drawn at arrival (tests).
func (p *Count) SetWait(n int) {
	p.mu.Lock()
	p.wait = n
	p.mu.Unlock()
}

// Holding says why jobs wait for the arrival wait, with how long it lasts
// at epochs of about epochLen, or "" once they may run.
func (p *Count) Holding(epochLen time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now || p.full >= p.wait {
		return ""
	}
	line := fmt.Sprintf("holding the job: this client has been present %d of the %d full epochs it waits before any job, so that when a job runs says nothing about when it came; sending cover meanwhile", p.full, p.wait)
	if epochLen > 0 {
		line += fmt.Sprintf(" (about %s more: epochs here last about %s)", waitline.RoundUp(time.Duration(p.wait-p.full)*epochLen), waitline.RoundUp(epochLen))
	}
	return line
}
