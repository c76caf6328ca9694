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

// The silent primary's accounts (silent.go; docs/protocol.md §5.4, "A
// silent primary"), with honest primaries: TestHeldOnionEndsUncharged
// "says nothing" is the silent one. Both cases run
// TestSilentClientChargesNoServer's epoch (three servers, round limit
// 4 s, client 1 sends no onion of round 3): it ends "round 3 not filled",
// client 0 shows its receipts of rounds 3 and 4 to the two servers but its
// primary, and they ask the primaries for their accounts.

// TestSlowPrimaryNotCharged: every primary answers each ask for its
// account half a round limit late, inside the window of a round limit: the
// receipt holders attest nobody and no server is charged.
func TestSlowPrimaryNotCharged(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		bn, p := startHeldNet(t)
		late := time.Duration(p.RoundLimitMs) * time.Millisecond / 2
		eid, _ := silentClient(t, bn, 3)
		for _, s := range bn.servers {
			s.hooks.Store(&serverHooks{serveLate: func(r uint32) time.Duration { return late }})
		}
		accountsAsked(t, bn, eid, nil)
	})
}

// TestFalseSilentAttestNoCharge: a corrupt server other than client 0's
// primary attests every primary silent of every round, and gathers and
// relays its attestation with client 0's receipt; the third server,
// honest, holds the primary's account: one of the two others is no
// majority, and no server is charged.
func TestFalseSilentAttestNoCharge(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		bn, _ := startHeldNet(t)
		eid, sl := silentClient(t, bn, 3)
		chain, clients, byID := finalOf(bn, eid)
		honest := int(clients[1-sl].Primary)
		liar := byID[chain[(honest+1)%len(chain)]]
		liar.hooks.Store(&serverHooks{silentAll: func(uint32) bool { return true }})
		if a, ok := accountsAsked(t, bn, eid, liar)[liar]; !ok || a.Lacking&(1<<uint(honest)) == 0 {
			t.Fatalf("the liar's attestation: %+v, want primary %d silent", a, honest)
		}
		logged := 0
		for _, s := range bn.servers {
			for _, r := range s.ref.Records(false) {
				var ev wire.Charge
				if ev.Unmarshal(r.Ev) == nil && ev.Kind == wire.EvSilent {
					logged++
				}
			}
		}
		if logged == 0 {
			t.Fatal("the liar's evidence was logged nowhere")
		}
		t.Logf("the liar's evidence, charging nobody, held in %d records", logged)
	})
}

// accountsAsked waits until epoch eid ended and the account asks and
// gathering of its rounds are over, checks that no server was charged,
// that some server signed its attestation of the primaries' accounts,
// and that each but liar's names no primary, and returns them.
func accountsAsked(t *testing.T, bn *blameNet, eid [32]byte, liar *Server) map[*Server]wire.Attest {
	t.Helper()
	chain, _, byID := finalOf(bn, eid)
	endedAt(t, byID[chain[0]], eid, "the epoch of the silent client never ended at S_0")
	// The asks' window, of the epoch's round limit.
	byID[chain[0]].mu.Lock()
	asks := accountAsks * time.Duration(byID[chain[0]].epochs[eid].final.Desc.Params.RoundLimitMs) * time.Millisecond
	byID[chain[0]].mu.Unlock()
	// Read while the ended epoch is kept: every server's attestation,
	// once signed.
	got := map[*Server]wire.Attest{}
	_ = wait.Until(context.Background(), 20*time.Second+asks, func() bool {
		for _, s := range bn.servers {
			s.mu.Lock()
			if e := s.epochs[eid]; e != nil {
				for _, a := range e.silentAttest {
					got[s] = *a
				}
			}
			s.mu.Unlock()
		}
		return len(got) == len(bn.servers)
	})
	// The clients leave, so that no epoch starts: the settle then costs
	// only the servers' asks and relays of the ended epoch's accounts, not
	// the epochs run meanwhile (in virtual time, dozens).
	for _, c := range bn.clients {
		c.Close()
	}
	time.Sleep(2*DefaultTunables().AbortSettle + 20*time.Second + asks) // virtual: the gathering, an asked server's asks and a round limit, and relays
	signed := len(got)
	for s, a := range got {
		if a.Lacking != 0 && s != liar {
			t.Errorf("server %s attested primaries %b silent of round %d", s.ID().ShortString(), a.Lacking, a.Round)
		}
	}
	for _, s := range bn.servers {
		for q, c := range s.ref.RefusalCounts() {
			if c > 0 {
				t.Errorf("server %s charged %s", s.ID().ShortString(), q.ShortString())
			}
		}
	}
	if signed == 0 {
		t.Fatal("no server attested the primaries' accounts: none was asked")
	}
	t.Logf("%d attestations of the primaries' accounts signed", signed)
	return got
}

// TestForgottenEpochAccounted: a primary answers the ask for its account
// of a round of an ended epoch it no longer holds (forget keeps two ended
// epochs), from the receipts it kept at the end: a corrupt client that
// shows a receipt only then no longer has its honest primary attested
// silent (the rev43 review: both other servers got "unknown epoch" and
// charged it). Asked past accountKeep, it answers nothing, and no server
// starts its asks that late (accountStartBy).
func TestForgottenEpochAccounted(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		bn, p := startHeldNet(t)
		eid, sl := silentClient(t, bn, 3)
		chain, clients, byID := finalOf(bn, eid)
		pi := int(clients[1-sl].Primary)
		P, asker := byID[chain[pi]], chain[(pi+1)%len(chain)]
		endedAt(t, P, eid, "the epoch never ended at the primary")
		P.mu.Lock()
		want, ok := P.epochs[eid].receipted[dryKey{3, 1 - sl}]
		delete(P.epochs, eid) // forget
		P.mu.Unlock()
		if !ok {
			t.Fatal("the primary receipted no onion of round 3 of client 0")
		}
		ask := func() (wire.Account, error) {
			var a wire.Account
			_, rep, err := P.onAccountReq(asker, (&wire.EpochRef{Epoch: eid, Round: 3}).Marshal())
			if err == nil {
				err = a.Unmarshal(rep, wire.Limits{Clients: len(clients)})
			}
			return a, err
		}
		a, err := ask()
		if err != nil || !a.Covers(&wire.OnionReceipt{Slot: 1 - sl, Digest: want}) {
			t.Fatalf("the primary that forgot the epoch answered %+v, %v; want its account of round 3", a, err)
		}
		// Past their bounds: the end moved back rather than the network
		// run for ten minutes.
		limit := time.Duration(p.RoundLimitMs) * time.Millisecond
		P.mu.Lock()
		P.kept[eid].endedAt = time.Now().Add(-accountKeep(limit) - time.Second)
		P.mu.Unlock()
		if _, err := ask(); err == nil {
			t.Error("an account given past accountKeep")
		}
		s := byID[asker]
		s.mu.Lock()
		e := s.epochs[eid]
		if e == nil {
			s.mu.Unlock()
			t.Fatal("the asker forgot the epoch")
		}
		e.endedAt = time.Now().Add(-accountStartBy(limit, true) - time.Second)
		delete(e.accountAsk, 3)
		s.startAccountsLocked(e, 3, true)
		_, started := e.accountAsk[3]
		s.mu.Unlock()
		if started {
			t.Error("asks started past accountStartBy")
		}
	})
}

// TestSlowLinkAndLiarNoCharge (rev43 F4): m = 4, so that two of the
// primary's three other servers charge it. A corrupt server attests every
// primary silent of every round, and client 0's honest primary answers
// one honest server's asks for its account two round limits late (a slow
// link between two honest servers; the third server hears it at once):
// with an attestation after one round limit of asks, that server's true
// "none by my deadline" plus the liar's charged the honest primary. The
// asks now run for accountAsks round limits, re-asked from several
// moments, so that an answer two limits late on one link is heard.
func TestSlowLinkAndLiarNoCharge(t *testing.T) {
	t.Parallel() // a network of its own in virtual time
	virtual(t, func(t *testing.T) {
		p := testParams(16)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 4, 4, 2, 2)
		eid, sl := silentClient(t, bn, 3)
		chain, clients, byID := finalOf(bn, eid)
		honest := int(clients[1-sl].Primary)
		liar := byID[chain[(honest+1)%len(chain)]]
		slow := chain[(honest+2)%len(chain)]
		late := 2 * time.Duration(p.RoundLimitMs) * time.Millisecond
		liar.hooks.Store(&serverHooks{silentAll: func(uint32) bool { return true }})
		byID[chain[honest]].hooks.Store(&serverHooks{accountLate: func(from peer.ID, r uint32) time.Duration {
			if from == slow {
				return late
			}
			return 0
		}})
		accountsAsked(t, bn, eid, liar)
	})
}
