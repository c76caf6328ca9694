//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// TestLateNoteFramesThinSigner (issue 25, the batch relay): of four
// servers, a corrupt S_1 ignores its input batch of one round and claims
// the lack, as in TestThinSignerNotFramed, but holds its relay notes back
// from a fetch after its root (an honest receiver's) to later in its
// window; S_0's links to S_2 and S_3 carry a copy in 0.8 s, more than a
// fetch (0.5 s at a 4 s round limit):
//   - "end of window": the notes a quarter of a second before S_1's lack
//     window closes. Before, they were taken and each body due a fetch
//     after them: the copies came late, counted as missing, and every
//     server charged S_0. Now a first note later than an honest
//     receiver's could be (noteLast) is refused: S_1 has no relay and
//     the void is its own;
//   - "last taken": the notes a tenth of a second inside noteLast. Before,
//     the body was due a fetch after them, the same; now two fetches
//     after (bodyDue), and the copies count: the void is S_1's.
func TestLateNoteFramesThinSigner(t *testing.T) {
	for _, mode := range []string{"end of window", "last taken"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) { lateNoteCase(t, mode) })
		})
	}
}

func lateNoteCase(t *testing.T, mode string) {
	p := testParams(64)
	p.RoundLimitMs = 4000
	grace := fetchGrace(&sepoch{final: &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}})
	// The hook's delay counts from S_1's hop wait (a fetch after its
	// root): the notes go out that much later than an honest receiver's.
	late := 4*grace - grace - grace/2 // a quarter second before the window closes
	if mode == "last taken" {
		late = 3*grace - grace/5 - grace // a tenth of a second inside noteLast
	}
	bn := startBlameNetParams(t, p, 4, 4, 2, 2)
	s0, bad := bn.servers[0], bn.servers[1]
	c := &relayRound{lackCase{bad: bad}}
	bad.hooks.Store(&serverHooks{dropIn: c.is, noteLate: func(r uint32) time.Duration {
		if c.is(r) {
			return late
		}
		return 0
	}})
	mn := testMemnet(t)
	for _, s := range bn.servers[2:] {
		mn.SetLink(s0.ID(), s.ID(), memnet.Link{Latency: time.Millisecond, Bandwidth: batchBytesGuess * 10 / 8})
	}
	// The noted servers' notes and copies, as they come.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i, s := range bn.servers[2:] {
		go func() {
			var n *relayNote
			var came time.Time
			_ = wait.Until(ctx, 10*time.Minute, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				for _, e := range s.epochs {
					for q, x := range e.rounds {
						if k := x.notes[0]; k != nil && !k.bodyAt.IsZero() {
							n = k
							came, _ = e.partCame(q, 0)
						}
					}
				}
				return n != nil
			})
			if n != nil {
				t.Logf("S_%d: noted %v after S_0's root, the copy came %v after the note", i+2, n.at.Sub(came), n.bodyAt.Sub(n.at))
			}
		}()
	}
	lackShare(t, bn, 3*int(p.ChunkSize)+100)
	epoch, r := c.get(t)
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
	ch := s0.ref.RefusalCounts()
	t.Logf("%s: round %d, S_1's notes %v after an honest receiver's: S_1 charged %d, S_0 %d", mode, r, late, ch[bad.ID()], ch[s0.ID()])
}
