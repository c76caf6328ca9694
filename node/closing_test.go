//go:build riffletest

package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/closing"
	"github.com/riffle-net/riffle/node/internal/proto"
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
		var v *proto.View
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
			if err := proto.CheckClosing(v, &c); err != nil {
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
			return up.Inspect().HasWindowRecord(ep)
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
			return up.Inspect().WindowRecords() > 0 && up.Inspect().DecoyEpochs() > 0
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
	t.Parallel() // a network of its own in virtual time
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

// TestClosingOneProposal (issue 26, F2): a chain server signs one closing
// proposal of an epoch and refuses any other. A first server that
// withheld round 1's final list from a server could have it sign the
// round as never come and, once the list came, as published: two valid
// records of one epoch, one kept by the servers and another pinned by a
// later leader, whose pools disagree. Here a server that signed the
// epoch's record loses round 1's list (as if its delivery never came), so
// that a record stating round 1 never came agrees with what it holds;
// before, it signed that second record too. The record it signed is still
// signed again (S_0 proposes it again after a refusal elsewhere).
func TestClosingOneProposal(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		tn.startPair(ctx, t, nil)
		ep, s0, v := signedRecord(ctx, t, tn)
		v.mu.Lock()
		e := v.epochs[ep]
		first := *e.closing.Mine()
		e.rounds[1].list = nil
		other := closingOf(e) // round 1 never came, as v now sees it
		_, ok := setPool(e, &other)
		v.mu.Unlock()
		if !ok || other.Rounds[1].State != wire.ClosedNone {
			t.Fatal("no second record agrees with the server's view")
		}
		if _, _, err := v.closing.onProposal(ctx, s0.ID(), (&wire.ClosingProposal{Closing: first}).Marshal()); err != nil {
			t.Errorf("the record the server signed, proposed again, refused: %v", err)
		}
		if _, _, err := v.closing.onProposal(ctx, s0.ID(), (&wire.ClosingProposal{Closing: other}).Marshal()); err == nil {
			t.Error("a second closing record of one epoch signed")
		}
	})
}

// signedRecord waits for an epoch ep that ran to its end and whose
// closing record a server v other than its first, s0, signed, with round
// 1's list held.
func signedRecord(ctx context.Context, t *testing.T, tn *anonNet) (ep [32]byte, s0, v *Server) {
	t.Helper()
	if err := wait.Until(ctx, 40*time.Second, func() bool {
		for _, s := range tn.servers {
			for _, es := range s.Snapshot().Epochs {
				if es.Position != 0 || !es.Ended || es.Listed != es.Rounds {
					continue
				}
				for _, o := range tn.servers {
					if o == s {
						continue
					}
					o.mu.Lock()
					e := o.epochs[es.ID]
					signed := e != nil && e.closing.Mine() != nil && e.rounds[1] != nil && e.rounds[1].list != nil
					o.mu.Unlock()
					if signed {
						ep, s0, v = es.ID, s, o
						return true
					}
				}
			}
		}
		return false
	}); err != nil {
		t.Fatal("no epoch's record signed by a server other than its first")
	}
	return ep, s0, v
}

// TestClosingChoiceSurvivesRestart (issue 26, item 3; issue 25: every
// signature is persisted before it is sent): the closing record a server
// signed for an epoch is on disk before its signature leaves. Here the
// server that signed one record crashes and starts again on its data
// directory, and is handed the epoch's state back (the lists it held,
// without the memory of what it signed): a second record of the epoch,
// one that agrees with what it holds, is refused, and the one it signed
// is signed again. Before, the choice lived in memory only, and the
// restarted server signed the second record.
func TestClosingChoiceSurvivesRestart(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(4)
		tn := startAnonNet(t, 3, 0, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
		defer cancel()
		tn.startPair(ctx, t, nil)
		ep, s0, v := signedRecord(ctx, t, tn)
		v.mu.Lock()
		e := v.epochs[ep]
		first := *e.closing.Mine()
		v.mu.Unlock()
		cfg := v.cfg
		v.Close()
		again, err := NewServer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		again.mu.Lock()
		e.closing = closing.Epoch{}
		e.rounds[1].list = nil
		other := closingOf(e) // round 1 never came, as e now shows
		_, ok := setPool(e, &other)
		again.epochs[ep] = e
		again.mu.Unlock()
		if !ok || other.Rounds[1].State != wire.ClosedNone {
			t.Fatal("no second record agrees with the server's view")
		}
		if _, _, err := again.closing.onProposal(ctx, s0.ID(), (&wire.ClosingProposal{Closing: other}).Marshal()); err == nil {
			t.Error("the restarted server signed a second closing record of an epoch")
		}
		if _, _, err := again.closing.onProposal(ctx, s0.ID(), (&wire.ClosingProposal{Closing: first}).Marshal()); err != nil {
			t.Errorf("the record signed before the crash, proposed again, refused: %v", err)
		}
		// A file it cannot read keeps the server from starting, rather
		// than from signing any closing record later, in silence.
		again.Close()
		if err := os.WriteFile(filepath.Join(cfg.DataDir, ClosingSignedFile), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := NewServer(context.Background(), cfg); err == nil {
			s.Close()
			t.Error("a server started on an unreadable record of its closing choices")
		}
	})
}
