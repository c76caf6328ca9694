//go:build riffletest

package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestLatePublicationFramesFirst: the last server of three skews where
// round q opens. It sends its publication of round q − 2 to S_0 at once
// and to the middle server a second later, then keeps round q's
// publication to itself. With W = 3 the onions of q are in before q − 2's
// list, so S_0 mixes q at once and its batch reaches the middle server
// before q opens there by the publication. S_0 has q signed void a round
// limit later. Before, the middle server counted the dues of q from its
// late publication, with S_0's part taken as come a round limit after
// that: the void came before its last due, it attested nothing, and both
// honest servers charged S_0, the void's proposer. Now S_0's signed part
// of q opens q wherever it comes first: the middle server's dues are
// those of S_0, it attests the publication lacking, and both charge the
// last server.
func TestLatePublicationFramesFirst(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.W, p.RoundLimitMs = 3, 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		s0, mid, bad := bn.servers[0], bn.servers[1], bn.servers[2]
		const q = 4
		var mu sync.Mutex
		var epoch [32]byte // the attacked epoch: the first whose round q−2 is sent
		var fired bool
		attacked := func(r uint32) bool {
			if r != q && r != q-2 {
				return false
			}
			var cur [32]byte
			bad.mu.Lock()
			for id, e := range bad.epochs {
				if !e.ended && e.final != nil {
					cur = id
				}
			}
			bad.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if !fired && r == q-2 {
				fired, epoch = true, cur
			}
			return fired && cur == epoch
		}
		bad.hooks.Store(&serverHooks{
			withhold: func(r uint32) bool { return r == q && attacked(r) },
			pubLate: func(r uint32, to peer.ID) time.Duration {
				if r == q-2 && to == mid.ID() && attacked(r) {
					return time.Second
				}
				return 0
			},
		})
		if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fired
		}); err != nil {
			t.Fatalf("the last server never published round %d", q-2)
		}
		mu.Lock()
		id := epoch
		mu.Unlock()
		ends := awaitEnds(t, id, q, s0, mid)
		charged := func() bool {
			for _, s := range []*Server{s0, mid} {
				if s.ref.RefusalCounts()[bad.ID()] < 1 {
					return false
				}
			}
			return true
		}
		_ = wait.Until(context.Background(), 20*time.Second, charged)
		time.Sleep(5 * time.Second) // virtual time: relays settle (a charge of S_0 may come late)
		for i, s := range []*Server{s0, mid} {
			c := s.ref.RefusalCounts()
			t.Logf("server %d counts: S_0 %d, middle %d, last %d", i, c[s0.ID()], c[mid.ID()], c[bad.ID()])
			if c[s0.ID()] != 0 || c[mid.ID()] != 0 {
				t.Errorf("server %d charged an honest server for the publication the last server kept", i)
			}
			if c[bad.ID()] < 1 {
				t.Errorf("server %d did not charge the last server", i)
			}
		}
		for i, end := range ends {
			if !end.complete || end.voids != 1 || !end.qVoid {
				t.Errorf("server %d: the epoch ended %q with %d void rounds (round %d void: %v), want it complete with round %d's void", i, end.reason, end.voids, q, end.qVoid, q)
			}
		}
	})
}

// epochEnd is an epoch's end at one server, as seen as it ended there
// (an ended epoch is forgotten once newer ones end).
type epochEnd struct {
	reason            string
	voids             int
	complete          bool // every round has its final list
	qVoid, qPublished bool // round q's list is void, or published with the round here
}

// awaitEnds waits until epoch id has ended at each of servers and returns
// each end, with round q's state.
func awaitEnds(t *testing.T, id [32]byte, q uint32, servers ...*Server) []epochEnd {
	t.Helper()
	ends := make([]epochEnd, len(servers))
	for i, s := range servers {
		if err := wait.Until(context.Background(), 3*time.Minute, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			e := s.epochs[id]
			if e == nil || !e.ended {
				return false
			}
			end := epochEnd{reason: e.reason, voids: e.voids, complete: e.listHigh == e.final.Desc.Params.Rounds}
			for r := range e.final.Desc.Params.Rounds {
				if x := e.rounds[r]; x == nil || x.list == nil {
					end.complete = false
				}
			}
			if x := e.rounds[q]; x != nil && x.list != nil {
				end.qVoid, end.qPublished = x.list.Void(), !x.list.Void() && x.pubDone
			}
			ends[i] = end
			return true
		}); err != nil {
			for _, es := range s.Snapshot().Epochs {
				t.Logf("server %d: epoch %x: %d of %d rounds listed, ended %v (%q)", i, es.ID[:4], es.Listed, es.Rounds, es.Ended, es.Reason)
			}
			t.Fatalf("server %d: epoch %x did not end (or was forgotten first)", i, id[:4])
		}
	}
	return ends
}

// TestPublicationWithheldFetched: the last server of three sends its
// publication of round q to every server but one, S_0 or the middle
// server. Before, nothing relayed a publication: S_0, without it, had q
// signed void, the middle server refused (it had published q), and S_0's
// abort for the missing publication, which the middle server did not
// back, charged S_0; the middle server, without it, refused S_0's list of
// q and S_0's abort for the refused list charged S_0. Now the server left
// without it fetches the signed publication from a chain server that holds
// it (S_0 before it claims it missing, the middle server from S_0 when
// asked to sign the list): round q is listed published at both, nobody
// honest is charged, and the epoch runs to its end.
func TestPublicationWithheldFetched(t *testing.T) {
	t.Parallel()
	for _, victim := range []int{0, 1} {
		t.Run([]string{"from S_0", "from the middle server"}[victim], func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				p := testParams(8)
				p.RoundLimitMs = 4000
				bn := startBlameNetParams(t, p, 3, 3, 2, 2)
				s0, mid, bad := bn.servers[0], bn.servers[1], bn.servers[2]
				left := bn.servers[victim].ID()
				const q = 3
				id := withholdPub(t, bad, q, left)
				ends := awaitEnds(t, id, q, s0, mid)
				time.Sleep(5 * time.Second) // virtual time: relays settle (no charge is a non-event)
				for i, s := range []*Server{s0, mid} {
					c := s.ref.RefusalCounts()
					end := ends[i]
					t.Logf("server %d: epoch ended %q, %d void rounds; counts: S_0 %d, middle %d, last %d", i, end.reason, end.voids, c[s0.ID()], c[mid.ID()], c[bad.ID()])
					if c[s0.ID()] != 0 || c[mid.ID()] != 0 {
						t.Errorf("server %d charged an honest server for a publication the last server withheld from one", i)
					}
					if !end.qPublished {
						t.Errorf("server %d: round %d not published and listed", i, q)
					}
					if !end.complete || end.voids != 0 {
						t.Errorf("server %d: the epoch did not run to its end without a void", i)
					}
				}
			})
		})
	}
}

// withholdPub has the last server bad send round q's publication of the
// first epoch it publishes q in after now never to peer to (within the
// delivery's round limit), and to everyone else as usual; it returns that
// epoch once bad has published q.
func withholdPub(t *testing.T, bad *Server, q uint32, to peer.ID) [32]byte {
	t.Helper()
	var mu sync.Mutex
	var epoch [32]byte
	var fired bool
	bad.hooks.Store(&serverHooks{
		pubLate: func(r uint32, dst peer.ID) time.Duration {
			if r != q || dst != to {
				return 0
			}
			var cur [32]byte
			bad.mu.Lock()
			for id, e := range bad.epochs {
				if !e.ended && e.final != nil {
					cur = id
				}
			}
			bad.mu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if !fired {
				fired, epoch = true, cur
			}
			if cur == epoch {
				return time.Hour // never within the delivery's round limit
			}
			return 0
		},
	})
	if err := wait.Until(context.Background(), 2*time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return fired
	}); err != nil {
		t.Fatal("the last server never published round q")
	}
	mu.Lock()
	defer mu.Unlock()
	return epoch
}
