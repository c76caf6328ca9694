//go:build riffletest

package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestThinSignerNotFramed (issue 25, the batch relay): of four servers, a
// corrupt S_1 ignores its input batch of one round however it comes and
// claims the lack: its notes ask S_2 and S_3 at once for copies from the
// honest S_0, whose links to them carry a batch in 0.8 s, more than
// bodyWait (0.5 s at a 4 s round limit). Both copies came after bodyWait,
// counted as missing, and the void was charged to S_0 at every server.
// Now a noted server's copy is due a fetch before the receiver's lack
// window closes (bodyDue): the copies are in time, and the void is S_1's.
func TestThinSignerNotFramed(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 4, 4, 2, 2)
		s0, bad := bn.servers[0], bn.servers[1]
		c := &relayRound{lackCase{bad: bad}}
		bad.hooks.Store(&serverHooks{dropIn: c.is})
		// The batch of this test is about 34 KB: one copy in 0.8 s.
		mn := testMemnet(t)
		for _, s := range bn.servers[2:] {
			mn.SetLink(s0.ID(), s.ID(), memnet.Link{Latency: time.Millisecond, Bandwidth: batchBytesGuess * 10 / 8})
		}
		// The noted servers' copies, as they come.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		took := make(chan time.Duration, 2)
		for _, s := range bn.servers[2:] {
			go func() {
				var n *relayNote
				_ = wait.Until(ctx, 10*time.Minute, func() bool {
					s.mu.Lock()
					defer s.mu.Unlock()
					for _, e := range s.epochs {
						for _, x := range e.rounds {
							if k := x.notes[0]; k != nil && !k.bodyAt.IsZero() {
								n = k
							}
						}
					}
					return n != nil
				})
				if n != nil {
					took <- n.bodyAt.Sub(n.at)
				}
			}()
		}
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		epoch, r := c.get(t)
		for i := range 2 {
			select {
			case d := <-took:
				t.Logf("noted server %d: the copy came %v after the note", i, d)
				if d <= fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}}) {
					t.Fatalf("a copy came %v after the note, within bodyWait: the links are not thin", d)
				}
			case <-time.After(time.Minute):
				t.Fatal("a noted server got no copy")
			}
		}
		for i, s := range bn.servers {
			if i == 1 {
				continue
			}
			if v := epochRanOn(t, s, epoch); v != 1 {
				t.Fatalf("server %d: %d void round(s), want 1", i, v)
			}
		}
		for i, s := range bn.servers {
			if i == 1 {
				continue
			}
			err := wait.Until(context.Background(), 10*time.Second, func() bool {
				ch := s.ref.RefusalCounts()
				return len(ch) == 1 && ch[bad.ID()] == 1
			})
			if err != nil {
				t.Errorf("server %d counts %v; want S_1 (%s) once, S_0 (%s) never", i, s.ref.RefusalCounts(), bad.ID().ShortString(), s0.ID().ShortString())
			}
		}
		t.Logf("round %d: S_1 claimed a lack it did not have, S_0's copies over thin links: charged %v", r, s0.ref.RefusalCounts())
	})
}

const batchBytesGuess = 34 << 10

// TestRelayNotesBounded (issue 25, the batch relay): a corrupt S_1 asks
// every other chain server for its input batch of every round, as a
// receiver that lacks it would (the relay note), and passes every round
// on in time all the same (every link 50 ms, so that a round's root is
// at the others well before S_1's). Each noted server fetched the batch
// and held the copy, n·b, until the round was pruned: up to 8 rounds'
// copies at once. Now a copy is dropped once its receiver passed the
// round on, and one receiver has at most notesHeld relays running at a
// server at once.
func TestRelayNotesBounded(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		testNet(t)
		testMemnet(t).SetDefault(memnet.Link{Latency: 50 * time.Millisecond})
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		bad := bn.servers[1]
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type key struct {
			epoch [32]byte
			round uint32
			to    int
		}
		asked := map[key]bool{}
		most, notes := 0, 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
				held := 0
				for i, s := range bn.servers {
					if s == bad {
						continue
					}
					var reqs []key
					s.mu.Lock()
					for id, e := range s.epochs {
						if e.final == nil || e.ended {
							continue
						}
						j := slices.Index(e.final.Chain, bad.ID())
						for _, x := range e.rounds {
							for _, n := range x.notes {
								if n.body != nil {
									held++
								}
							}
						}
						if j < 1 || e.pos == j-1 {
							continue
						}
						for rk := range e.roots {
							if int(rk.s) != j {
								continue
							}
							_, out := e.roots[rootKey{rk.round, uint16(j + 1)}]
							if k := (key{id, rk.round, i}); !out && !asked[k] {
								asked[k] = true
								reqs = append(reqs, k)
							}
						}
					}
					s.mu.Unlock()
					for _, k := range reqs {
						bad.mu.Lock()
						pos := -1
						if e := bad.epochs[k.epoch]; e != nil {
							pos = e.pos
						}
						bad.mu.Unlock()
						if pos < 1 {
							continue
						}
						body := (&wire.BatchRef{Epoch: k.epoch, Round: k.round, S: uint16(pos)}).Marshal()
						go func() {
							_, _ = transport.Call(ctx, bad.h, s.ID(), transport.Request{Proto: ProtoRound, Type: wire.TypeGetBatch, Body: body, Timeout: transport.ShortTimeout})
						}()
						notes++
					}
				}
				most = max(most, held)
			}
		}()
		lackShare(t, bn, 3*int(p.ChunkSize)+100)
		cancel()
		<-done
		t.Logf("S_1 noted %d rounds' batches at the other servers: at most %d relayed copies held at once (one a server a round)", notes, most)
		if notes < 8 {
			t.Fatalf("S_1 noted only %d batches", notes)
		}
		if most > notesHeld {
			t.Errorf("%d relayed copies held at once for a receiver that passed every round on, want at most %d", most, notesHeld)
		}
	})
}
