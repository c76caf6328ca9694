//go:build riffletest

package node

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// abortEveryEpoch makes s end, with free text, every epoch it is in once
// its final descriptor is there (a refusal on private grounds), and
// returns the numbers of the epochs it ended. The behaviour lives in the
// test: it calls the same end an honest server calls on a fault.
func abortEveryEpoch(t *testing.T, s *Server) func() []uint64 { return abortEpochs(t, s, 0) }

// abortEpochs is abortEveryEpoch for the first limit epochs (0: every one).
func abortEpochs(t *testing.T, s *Server, limit int) func() []uint64 {
	var mu sync.Mutex
	var ended []uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			s.mu.Lock()
			for _, e := range s.epochs {
				mu.Lock()
				full := limit > 0 && len(ended) >= limit
				mu.Unlock()
				if !full && !e.ended && e.final != nil {
					// At once, without the settle time of an honest end.
					s.endQuiet(e, "I do not like this epoch")
					body := s.evs().SignOwn(evEp(e), wire.AbortFault, 0, "I do not like this epoch")
					var others []peer.ID
					for _, p := range e.v.Chain {
						if p != s.h.ID() {
							others = append(others, p)
						}
					}
					go s.each(context.Background(), others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeAbort, Body: body, Timeout: transport.ShortTimeout})
					mu.Lock()
					ended = append(ended, e.v.Desc.Number)
					mu.Unlock()
				}
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		out := append([]uint64(nil), ended...)
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
}

// TestRefusalBudget: a server that aborts every epoch with free text is
// named by nobody; after its second abort within m epochs every honest
// server leaves it out of the next m chains, epochs run without it and an
// honest share and get complete byte-exact; never m epochs in a row end
// by it. At each chain position (m = 3).
func TestRefusalBudget(t *testing.T) {
	t.Parallel()
	positions := []int{0, 1, 2}
	if testing.Short() {
		positions = []int{1}
	}
	for _, k := range positions {
		t.Run(fmt.Sprintf("pos%d", k), func(t *testing.T) {
			t.Parallel()
			virtual(t, func(t *testing.T) {
				// The clients take chains that dropped the aborting server
				// (--accept-budget-drops): this test is about the servers.
				// An abort that reaches the others before the final
				// descriptor lands in an abort certificate, which clients
				// count (node/client/client_budget.go); whether it does depends on
				// timing, and a client that refused the chains without it
				// would wait out every epoch (TestClientRefusesBudgetDrop
				// tests that rule).
				bn := startBlameNet(t, 3, 2, 4, 2, func(c *ClientConfig) { c.AcceptBudgetDrops = true })
				bad := bn.servers[k]
				start := time.Now()
				aborted := abortEveryEpoch(t, bad)
				var honest []*Server
				for j, s := range bn.servers {
					if j != k {
						honest = append(honest, s)
					}
				}
				if err := wait.UntilEvery(context.Background(), 60*time.Second, 50*time.Millisecond, func() bool {
					out := true
					for _, s := range honest {
						out = out && s.refusalOut(bad.h.ID())
					}
					return out
				}); err != nil {
					t.Fatalf("the aborting server is not left out within 60 s (it ended epochs %v)", aborted())
				}
				outAfter := time.Since(start).Round(time.Millisecond)
				for _, s := range honest {
					if proto.InChain(s.chain(), bad.h.ID()) {
						t.Fatalf("the server out for its refusal budget is in an honest chain (out %v, counts %v, number %d)", s.refusalOut(bad.h.ID()), s.ref.RefusalCounts(), s.number)
					}
				}
				var up, down *Client
				for i, c := range bn.clients {
					if i%3 != k {
						up, down = down, c
					}
				}
				shareAndGet(t, up, down)
				// Nobody is named, and only the aborting server is charged.
				for _, s := range honest {
					recs, err := s.rb.Records()
					if err != nil {
						t.Fatal(err)
					}
					if len(recs) > 0 {
						t.Fatalf("a refusal named someone: %+v", recs[0])
					}
					if s.rb.Has(bad.h.ID()) {
						t.Fatal("a refusal got the server blamed")
					}
					for p, n := range s.ref.RefusalCounts() {
						if p != bad.h.ID() {
							recs := s.ref.Records(false)
							t.Fatalf("honest server %s charged with %d aborts: %+v", p.ShortString(), n, recs)
						}
					}
				}
				// It returns after m chains without it, and aborts again.
				if err := wait.UntilEvery(context.Background(), 40*time.Second, 50*time.Millisecond, func() bool { return len(aborted()) >= 3 }); err != nil {
					t.Fatalf("the server did not return after m epochs (it ended %v)", aborted())
				}
				// Never m epoch numbers in a row all ended by it.
				nums := aborted()
				if nums[2] < nums[1]+4 {
					t.Fatalf("the server was back before m = 3 epochs ran without it: it ended %v", nums)
				}
				for i := 0; i+2 < len(nums); i++ {
					if nums[i+2]-nums[i] == 2 {
						t.Fatalf("the aborting server ended 3 epochs in a row: %v", nums)
					}
				}
				t.Logf("pos %d: left out %v after its first abort; ended epochs %v; honest share and get done %v after the start", k, outAfter, nums, time.Since(start).Round(time.Millisecond))
			})
		})
	}
}

// TestRefusalCountsSurviveRestart: the counted aborts are in the data
// directory, so a restarted server still leaves the same server out.
func TestRefusalCountsSurviveRestart(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		priv, err := LoadIdentity(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		bad, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{cfg: ServerConfig{DataDir: dir}, log: quietLogger()}
		s.ref.Init(s.cfg.DataDir, s.log, nil)
		s.ref.Add(
			chargelog.Record{Peer: bad.String(), Number: 7, Window: 3, Reason: "no"},
			chargelog.Record{Peer: bad.String(), Number: 9, Window: 3, Reason: "no"},
		)
		s.ref.Save()

		again := &Server{cfg: ServerConfig{DataDir: dir}, log: quietLogger()}
		again.ref.Init(again.cfg.DataDir, again.log, nil)
		for n, want := range map[uint64]bool{9: true, 11: true, 12: false} {
			if got := again.refusalOutAt(bad, n+1); got != want {
				t.Fatalf("after epoch %d: out = %v, want %v (excluded for epochs 10..12)", n, got, want)
			}
		}
		if c := again.ref.RefusalCounts()[bad]; c != 2 {
			t.Fatalf("restarted server counts %d aborts, want 2", c)
		}
		// Two aborts m or more numbers apart are within the budget.
		var within chargelog.Log
		within.Add(chargelog.Record{Peer: bad.String(), Number: 7, Window: 3}, chargelog.Record{Peer: bad.String(), Number: 10, Window: 3})
		if u := within.OutUntil(bad); u != 0 {
			t.Fatalf("aborts 3 epochs apart leave the server out until %d", u)
		}
	})
}
