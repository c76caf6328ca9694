//go:build riffletest

package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
)

// TestClosingRecordSynced (§5.2, §7 v3): once an epoch has ended, every
// chain server holds its closing record, signed by all m servers, with
// every round published; it is in the index log, and a client gets it
// with its next index sync.
func TestClosingRecordSynced(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		tn := startAnonNet(t, 2, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		up, _ := tn.startPair(ctx, t, nil)
		// An epoch that ran to its end at S_0 (its first server).
		var ep [32]byte
		var v *view
		if err := wait.Until(ctx, 40*time.Second, func() bool {
			for _, s := range tn.servers {
				for _, es := range s.Snapshot().Epochs {
					if es.Position == 0 && es.Ended && es.Listed == es.Rounds {
						ep = es.ID
						s.mu.Lock()
						v = s.epochs[ep].final
						s.mu.Unlock()
						return true
					}
				}
			}
			return false
		}); err != nil {
			t.Fatal("no epoch ran to its end")
		}
		for i, s := range tn.servers {
			var rec []byte
			if err := wait.Until(ctx, 20*time.Second, func() bool {
				b, err := s.store.Closing(ep)
				rec = b
				return err == nil
			}); err != nil {
				t.Fatalf("server %d holds no closing record of the epoch", i)
			}
			var c wire.Closing
			if err := c.Unmarshal(rec, int(p.Rounds)); err != nil {
				t.Fatal(err)
			}
			if err := checkClosing(v, &c); err != nil {
				t.Fatalf("server %d: %v", i, err)
			}
			for r, x := range c.Rounds {
				if x.State != wire.ClosedPublished {
					t.Fatalf("server %d: round %d of a complete epoch closed as %d", i, r, x.State)
				}
			}
			ch, err := s.store.IndexSince(0, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, b := range ch.Closings {
				found = found || string(b) == string(rec)
			}
			if !found {
				t.Fatalf("server %d: the closing record is not in the index log", i)
			}
		}
		// Two epoch numbers on, the record comes with the window.
		if err := wait.Until(ctx, 30*time.Second, func() bool {
			return up.HasWindowRecord(ep)
		}); err != nil {
			t.Fatal("the client's window did not bring the closing record")
		}
	})
}

// TestWindowRecordFromOtherServer (§5.2, §6.3 v3): a primary that leaves
// the closing records and pools out of the windows it sends does not keep
// them from its client, which asks every chain server at once. Asking the
// primary alone, it would never get one.
func TestWindowRecordFromOtherServer(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		tn := startAnonNet(t, 2, 0, 2, p, func(i int, c *ServerConfig) {
			if i == 1 {
				c.observe = &testObserver{WindowReply: func(_ peer.ID, w *wire.Window) {
					for j := range w.Items {
						w.Items[j].Closing, w.Items[j].Pool = nil, nil
					}
				}}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		up, _ := tn.startPair(ctx, t, nil) // up's primary is server 1
		if err := wait.Until(ctx, 45*time.Second, func() bool {
			return up.WindowRecords() > 0 && up.DecoyEpochs() > 0
		}); err != nil {
			t.Fatal("the client got no closing record past a primary that withholds them")
		}
	})
}

// storedClosing waits, within ctx, for server s's closing record of epoch
// and returns it decoded, checking that it carries m signatures; i names
// the server in failures.
func storedClosing(ctx context.Context, t *testing.T, s *Server, i int, epoch [32]byte, m int) wire.Closing {
	t.Helper()
	var rec []byte
	if err := wait.Until(ctx, 30*time.Second, func() bool {
		b, err := s.store.Closing(epoch)
		rec = b
		return err == nil
	}); err != nil {
		t.Fatalf("server %d: no closing record of epoch %x", i, epoch[:4])
	}
	var c wire.Closing
	if err := c.Unmarshal(rec, int(s.cfg.Params.Rounds)); err != nil || len(c.Sigs) != m {
		t.Fatalf("server %d: closing record: %v, %d signatures, want %d", i, err, len(c.Sigs), m)
	}
	return c
}

// TestClosingSigsToEveryServer (§7 v3): every chain server sends its
// signature of the closing record to every other chain server, so each
// assembles and stores the record although S_0 hands it to nobody. With
// the signatures to S_0 alone (the rule before, the control: the other
// servers send theirs to nobody), no server but S_0 holds it.
func TestClosingSigsToEveryServer(t *testing.T) {
	for _, spread := range []bool{true, false} {
		virtual(t, func(t *testing.T) {
			p := testParams(4)
			tn := startAnonNet(t, 3, 0, 2, p, nil)
			for _, s := range tn.servers {
				h := &serverHooks{closingTo: func(peer.ID) bool { return false }}
				if !spread {
					h.closingSigTo = func(peer.ID) bool { return false }
				}
				s.hooks.Store(h)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			tn.startPair(ctx, t, nil)
			// An epoch that ran to its end, and S_0's record of it.
			var ep [32]byte
			var s0 *Server
			if err := wait.Until(ctx, 40*time.Second, func() bool {
				for _, s := range tn.servers {
					for _, es := range s.Snapshot().Epochs {
						if es.Position == 0 && es.Ended && es.Listed == es.Rounds {
							if _, err := s.store.Closing(es.ID); err == nil || !spread {
								ep, s0 = es.ID, s
								return true
							}
						}
					}
				}
				return false
			}); err != nil {
				t.Fatal("no epoch ran to its end")
			}
			held := 0
			for _, s := range tn.servers {
				if s == s0 {
					continue
				}
				err := wait.Until(ctx, 10*time.Second, func() bool {
					_, err := s.store.Closing(ep)
					return err == nil
				})
				if err == nil {
					held++
				}
			}
			others := len(tn.servers) - 1
			t.Logf("signatures to every server %v: %d of the %d other servers hold the record", spread, held, others)
			if spread && held != others {
				t.Errorf("%d of %d other servers assembled the record", held, others)
			}
			if !spread && held != 0 {
				t.Errorf("control: %d servers hold a record S_0 handed to nobody; the test does not see the spread", held)
			}
		})
	}
}
