package node

import (
	"sync/atomic"
	"time"
)

// Timing is where a server's time went (§9), summed over the rounds it
// published: opening its layer (keys, AES-CTR and GMAC, permutation),
// checking the pseudonym signatures, the store transaction, and the PIR
// answers (its own clients' and the padded ones).
type Timing struct {
	Rounds                  int
	Mix, Verify, Store, PIR time.Duration
}

// timer accumulates a server's Timing from concurrent rounds.
type timer struct {
	mix, verify, store, pir, rounds atomic.Int64
}

func (t *timer) add(field *atomic.Int64, d time.Duration) { field.Add(int64(d)) }

func (t *timer) addRound() { t.rounds.Add(1) }

// Timing returns the server's accumulated timing.
func (s *Server) Timing() Timing {
	var out Timing
	out.Rounds = int(s.timing.rounds.Load())
	out.Mix = time.Duration(s.timing.mix.Load())
	out.Verify = time.Duration(s.timing.verify.Load())
	out.Store = time.Duration(s.timing.store.Load())
	out.PIR = time.Duration(s.timing.pir.Load())
	return out
}
