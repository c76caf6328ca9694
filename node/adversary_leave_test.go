//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riffle-net/riffle/mix"
)

// leaveRecord is what the last server of the void-after-leaving adversary
// reads: the plaintext of every output position of every round of the
// watched epoch (a chunk's hash where the payload carries one), and the
// round it withheld.
type leaveRecord struct {
	mu    sync.Mutex
	watch [32]byte
	out   map[uint32]map[int][32]byte // round → output position → chunk hash
	armed atomic.Bool
	void  int64 // the withheld round, or −1
}

func (l *leaveRecord) observe(b, k int) func(epoch [32]byte, r uint32, out [][]byte) {
	return func(epoch [32]byte, r uint32, out [][]byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if epoch != l.watch {
			return
		}
		m := map[int][32]byte{}
		for q, raw := range out {
			if p, err := mix.DecodePayload(raw, b, k); err == nil && p.Kind == mix.KindChunk {
				m[q] = sha256.Sum256(p.Chunk[:p.Length])
			}
		}
		l.out[r] = m
	}
}

// withhold makes the last server keep the first round it mixes once armed
// to itself: the round is void (§5.2 v3), charged to it.
func (l *leaveRecord) withhold(r uint32) bool {
	if !l.armed.CompareAndSwap(true, false) {
		return false
	}
	l.mu.Lock()
	l.void = int64(r)
	l.mu.Unlock()
	return true
}

// voidLeaveRun plays the void-after-leaving adversary (issue 26, §5.2 and
// §5.4 v3): m = 3 servers, six long-running clients that share all along
// and, one epoch after another, a client that shares and leaves mid-epoch
// (its connection closes, which its primary sees). Once it left, the last
// server, which reads every payload, withholds the next round it mixes:
// the round is void, signed so by every server and charged to it. It then
// guesses the leaver's pseudonym among the round's u uploaders as one
// that did not send its chunk again in the epoch: a client that left
// cannot, its handed-over onions being sealed. With resendHold nobody
// sends a void round's chunk again before the epoch ends (it ends when the
// hand-over runs out), so the guess is one of u; with old (ResendAtOnce,
// the rule before, switched on in the test only) everyone else sends it
// in the next onion. Trials are one per epoch, independent.
func voidLeaveRun(t *testing.T, old bool, trials int) *tally {
	const m, long = 3, 6
	rec := newAdvRecord()
	lr := &leaveRecord{out: map[uint32]map[int][32]byte{}, void: -1}
	p := advParams(64)
	p.K, p.ChunkSize = 1, 1<<10
	b, k := int(p.ChunkSize), int(p.K)
	tn := startAnonNet(t, m, 0, long, p, func(i int, c *ServerConfig) {
		c.observe = rec.server(i)
		c.observe.LastOut = lr.observe(b, k)
	})
	for _, s := range tn.servers {
		s.hooks.Store(&serverHooks{withhold: lr.withhold})
	}
	ctx, cancel := context.WithTimeout(context.Background(), advTimeout(time.Duration(trials+20)*10*time.Minute))
	defer cancel()
	start := func(i int) *Client {
		o := rec.client(i)
		o.ResendAtOnce = old
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[i%m].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Every client keeps chunks queued: a share whenever its queue runs
	// short, so that each round has its uploaders (and no job pauses for
	// its epochs, §5.4, which left later trials with one or two).
	share := func(c *Client) {
		n := len(c.Inspect().Queued())
		if n < 2*int(p.Rounds) {
			go c.Share(ctx, bytes.NewReader(anonRand(t, 2*int(p.Rounds)*b)), "f.bin", false)
		}
	}
	var clients []*Client
	for i := range long {
		clients = append(clients, start(i))
	}
	rng := rand.New(rand.NewPCG(26, 3))
	tl := &tally{}
	next := start(long)
	share(next)
	for trial := 0; trial < trials; trial++ {
		idx := long + trial
		leaver := next
		for _, c := range clients {
			share(c)
		}
		var ep [32]byte
		waitCount(ctx, t, "the leaver's epoch", 1, func() int {
			e, ok := rec.newEpochOf(idx, nil)
			ep = e
			if ok {
				return 1
			}
			return 0
		})
		lr.mu.Lock()
		lr.watch, lr.out, lr.void = ep, map[uint32]map[int][32]byte{}, -1
		lr.mu.Unlock()
		// A few rounds in, with its chunks going out, it leaves.
		waitCount(ctx, t, "the leaver's rounds", 4, func() int { return int(leaver.Stats().Rounds) })
		epochs := clients[0].Stats().Epochs
		leaver.Close()
		lr.armed.Store(true)
		// The next leaver registers for the epoch after this one.
		next = start(idx + 1)
		share(next)
		waitCount(ctx, t, "the next epoch", epochs+1, func() int { return int(clients[0].Stats().Epochs) })
		lr.armed.Store(false)
		rec.mu.Lock()
		ps := rec.pseud[ep]
		truth := -1
		for q, pq := range ps {
			if bytes.Equal(pq, rec.joined[ep][idx].p) {
				truth = q
			}
		}
		rec.mu.Unlock()
		lr.mu.Lock()
		v := lr.void
		var ups, stopped []int
		if v >= 0 {
			for q, h := range lr.out[uint32(v)] {
				ups = append(ups, q)
				again := false
				for r, out := range lr.out {
					again = again || r > uint32(v) && out[q] == h
				}
				if !again {
					stopped = append(stopped, q)
				}
			}
		}
		lr.mu.Unlock()
		if v < 0 || len(ups) == 0 {
			t.Logf("trial %d: no void round with uploaders (void %d)", trial, v)
			continue
		}
		guess := stopped
		if len(guess) == 0 {
			guess = ups
		}
		pu := 1 / float64(len(ups))
		tl.add(guess[rng.IntN(len(guess))] == truth, pu, pu)
		if advFull() && trial%10 == 9 {
			t.Logf("%d trials of %d: %s", trial+1, trials, tl)
		}
	}
	return tl
}

// TestAdversaryVoidAfterLeaving (issue 26): a round voided after a client
// left mid-epoch tells the last server, which read the round's payloads,
// which of its u uploaders left no better than a guess (at most 1/u a
// charged void); with the rule before (a void round's chunks sent again in
// the next onion, switched on in the test only) the one that did not is
// the leaver. R = 64, k = 1 (RIFFLE_ADVERSARY=1: 8 trials an arm;
// RIFFLE_LONG=1: 40) or the default R = 256 and 200 trials
// (RIFFLE_ADVERSARY_FULL=1).
func TestAdversaryVoidAfterLeaving(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		trials := adversaryTrials(t, 8, 40, 200)
		def := voidLeaveRun(t, false, trials)
		ctl := voidLeaveRun(t, true, trials)
		t.Logf("void after leaving, R = %d, k = 1, n = 7: hold %s; re-sent at once (control) %s", advParams(64).Rounds, def, ctl)
		checkLinks(t, "leavers", def, ctl)
	})
}
