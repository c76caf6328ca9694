package certs

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// fakeServer is a server of founders, none excluded, with no network but
// the answers it is given.
type fakeServer struct {
	self     peer.ID
	founders map[peer.ID]bool
	chain    []peer.ID
	mu       sync.Mutex
	number   uint64
	rejudged map[uint64]blame.Context
	pushed   int
	pages    map[peer.ID][]wire.Certs // the pages a peer answers, in turn
	wg       sync.WaitGroup
}

func (f *fakeServer) Self() peer.ID                 { return f.self }
func (f *fakeServer) Known(p peer.ID) bool          { return f.founders[p] }
func (f *fakeServer) Chain() []peer.ID              { return f.chain }
func (f *fakeServer) GroupChain() []peer.ID         { return f.chain }
func (f *fakeServer) SignedChains() [][]peer.ID     { return nil }
func (f *fakeServer) Founders() map[peer.ID]bool    { return f.founders }
func (f *fakeServer) Excluded(peer.ID) bool         { return false }
func (f *fakeServer) Running() bool                 { return false }
func (f *fakeServer) FinalHeld([32]byte) bool       { return false }
func (f *fakeServer) Equivocations(_, _ *wire.Cert) {}
func (f *fakeServer) Certified()                    {}
func (f *fakeServer) Ctx() context.Context          { return context.Background() }
func (f *fakeServer) CertChecked(*wire.Cert)        {}
func (f *fakeServer) HideCerts() bool               { return false }
func (f *fakeServer) SyncPoked()                    {}
func (f *fakeServer) PushBack(peer.ID, uint64)      {}

func (f *fakeServer) Leader(n uint64, _ *wire.Cert) (peer.ID, bool) {
	return proto.LeaderOf(n, f.chain), true
}

func (f *fakeServer) LastNumber() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.number
}

func (f *fakeServer) RaiseNumber(n uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.number = max(f.number, n)
}

func (f *fakeServer) Rejudge(n uint64, ctx blame.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejudged[n] = ctx
}

func (f *fakeServer) Go(g func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		g()
	}()
}

func (f *fakeServer) Call(_ context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Type != wire.TypeCertReq || len(f.pages[p]) == 0 {
		return nil, errors.New("no answer")
	}
	page := f.pages[p][0]
	f.pages[p] = f.pages[p][1:]
	return page.Marshal(), nil
}

func (f *fakeServer) Each(_ context.Context, peers []peer.ID, r transport.Request) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Type == wire.TypeCertPush {
		f.pushed++
	}
	return make([][]byte, len(peers)), nil
}

// group is n founders, their keys by id, sorted as a chain.
func group(t *testing.T, n int) ([]peer.ID, map[peer.ID]crypto.PrivKey) {
	t.Helper()
	keys := map[peer.ID]crypto.PrivKey{}
	var ids []peer.ID
	for range n {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		keys[id] = priv
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b peer.ID) int { return strings.Compare(string(a), string(b)) })
	return ids, keys
}

func newCerts(t *testing.T, chain []peer.ID) (*Certs, *fakeServer) {
	t.Helper()
	f := &fakeServer{self: chain[0], founders: map[peer.ID]bool{}, chain: chain, rejudged: map[uint64]blame.Context{}, pages: map[peer.ID][]wire.Certs{}}
	for _, p := range chain {
		f.founders[p] = true
	}
	var cs Certs
	cs.Init(f, t.TempDir(), nil, 0, 0, nil, 0)
	t.Cleanup(f.wg.Wait)
	return &cs, f
}

// timeout is the timeout certificate of n over chain signed by signers.
func timeout(t *testing.T, n uint64, chain []peer.ID, keys map[peer.ID]crypto.PrivKey, signers ...peer.ID) *wire.Cert {
	t.Helper()
	ids := proto.ChainIDs(chain)
	c := &wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: ids}
	for i, p := range chain {
		if !slices.Contains(signers, p) {
			continue
		}
		sg, err := proto.Sign(keys[p], proto.TimeoutDigest(n, ids))
		if err != nil {
			t.Fatal(err)
		}
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
	}
	return c
}

// allBut is chain less the leader of n.
func allBut(n uint64, chain []peer.ID) []peer.ID {
	lead := proto.LeaderOf(n, chain)
	var out []peer.ID
	for _, p := range chain {
		if p != lead {
			out = append(out, p)
		}
	}
	return out
}

// final is a final certificate of n over chain (signatures unchecked by
// Keep: they are Check's).
func final(n uint64, chain []peer.ID, epoch byte) *wire.Cert {
	c := &wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: [32]byte{epoch}, Chain: proto.ChainIDs(chain)}
	for i := range chain {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i)})
	}
	return c
}

// TestKeepOnePerNumber (§3 "One certificate per number"): a number's
// certificate is replaced only by one of a higher rank, whatever the
// order, and the replacement rejudges the number's charges in its
// context and is sent to the group.
func TestKeepOnePerNumber(t *testing.T) {
	chain, keys := group(t, 4)
	cs, f := newCerts(t, chain)
	to := timeout(t, 1, chain, keys, allBut(1, chain)...)
	if err := cs.Check(to); err != nil {
		t.Fatal(err)
	}
	if !cs.Keep(to) || cs.Top() != 1 {
		t.Fatalf("the first certificate of 1 not kept (top %d)", cs.Top())
	}
	fin := final(1, chain, 7)
	if !cs.Keep(fin) {
		t.Fatal("a final certificate does not replace a timeout one")
	}
	if c, _ := cs.Of(1); c.Kind != wire.CertFinal {
		t.Fatalf("kept %s", KindName(c.Kind))
	}
	if cs.Keep(to) {
		t.Fatal("a timeout certificate replaces a final one")
	}
	abort := &wire.Cert{Kind: wire.CertAbort, Number: 1, Epoch: [32]byte{7}, Chain: fin.Chain, Sigs: fin.Sigs, Abort: []byte{1}}
	if cs.Keep(abort) {
		t.Fatal("an abort certificate replaces a final one")
	}
	f.mu.Lock()
	ctx, ok := f.rejudged[1]
	f.mu.Unlock()
	if !ok || ctx.Epoch != [32]byte{7} || !ctx.Final {
		t.Fatalf("the number's charges rejudged in %+v (%v), want the final's epoch", ctx, ok)
	}
	f.wg.Wait()
	if f.pushed != 1 {
		t.Fatalf("%d pushes, want the replacement's one", f.pushed)
	}
	// On disk, as kept.
	b, err := os.ReadFile(filepath.Join(cs.dir, "1"))
	if err != nil || string(b) != string(fin.Marshal()) {
		t.Fatalf("the file of 1 is not the final certificate (%v)", err)
	}
}

// TestKeepDropsPast: a certificate of N replaced by one over another
// chain drops the N+1 kept that no longer fits the group it certifies,
// here and on disk, and the top goes back to N.
func TestKeepDropsPast(t *testing.T) {
	chain, keys := group(t, 8)
	// b holds 3 of a's 4 servers; a holds 3 of b's 7.
	a, b := chain[:4], append(slices.Clone(chain[:3]), chain[4:]...)
	cs, f := newCerts(t, chain)
	cs.Put(1, final(1, a, 1).Marshal(), 1)
	for _, c := range []*wire.Cert{timeout(t, 2, a, keys, allBut(2, a)...), timeout(t, 3, a, keys, allBut(3, a)...)} {
		if err := cs.Check(c); err != nil {
			t.Fatal(err)
		}
		if !cs.Keep(c) {
			t.Fatalf("timeout of %d not kept", c.Number)
		}
	}
	// The final of 2 over b: 3's chain, a, holds 3 of b's 7 servers.
	if !cs.Keep(final(2, b, 2)) {
		t.Fatal("the final of 2 not kept")
	}
	if _, ok := cs.Of(3); ok || cs.Top() != 2 {
		t.Fatalf("3 kept past a replaced 2 over another group (top %d)", cs.Top())
	}
	if _, err := os.Stat(filepath.Join(cs.dir, strconv.Itoa(3))); err == nil {
		t.Fatal("3's file kept")
	}
	f.mu.Lock()
	ctx, ok := f.rejudged[3]
	f.mu.Unlock()
	if !ok || len(ctx.Chain) != 0 {
		t.Fatalf("3's charges not rejudged to nobody: %+v %v", ctx, ok)
	}
	// A certificate of 3 over a has no group here any more.
	if cs.Keep(timeout(t, 3, a, keys, allBut(3, a)...)) {
		t.Fatal("a certificate of 3 that does not fit 2's group kept")
	}
}

// TestTimeoutVotes: the timeout votes of the group's servers certify a
// number once they are as many as more than half of its servers other
// than the number's leader, whose vote counts as one (a late leader at
// m = 3 ends its number so: TestLateLeaderTimedOut); an outsider's is
// refused before it is stored.
func TestTimeoutVotes(t *testing.T) {
	chain, keys := group(t, 4)
	out, outKeys := group(t, 1)
	cs, f := newCerts(t, chain)
	vote := func(p peer.ID, k map[peer.ID]crypto.PrivKey, over []peer.ID) []byte {
		return timeout(t, 1, over, k, p).Marshal()
	}
	lead := proto.LeaderOf(1, chain)
	if _, _, err := cs.OnTimeoutVote(lead, vote(lead, keys, chain)); err != nil {
		t.Fatalf("the leader's vote: %v", err)
	}
	if cs.Top() != 0 {
		t.Fatal("certified by the leader's vote alone")
	}
	withOut := append(slices.Clone(chain[:3]), out[0])
	slices.SortFunc(withOut, func(a, b peer.ID) int { return strings.Compare(string(a), string(b)) })
	if _, _, err := cs.OnTimeoutVote(out[0], vote(out[0], outKeys, withOut)); err == nil {
		t.Fatal("an outsider's vote taken")
	}
	voters := allBut(1, chain)
	for i, p := range voters {
		if _, _, err := cs.OnTimeoutVote(p, vote(p, keys, chain)); err != nil {
			t.Fatalf("vote %d: %v", i, err)
		}
		if got, want := cs.Top(), uint64(0); i+2 < proto.TimeoutQuorum(len(chain)) && got != want {
			t.Fatalf("certified after the leader's and %d votes", i+1)
		}
		if i+2 == proto.TimeoutQuorum(len(chain)) {
			break
		}
	}
	if cs.Top() != 1 || f.LastNumber() != 1 {
		t.Fatalf("%d votes of %d: top %d, number %d; want 1", len(voters), len(chain), cs.Top(), f.LastNumber())
	}
	c, _ := cs.Of(1)
	if c.Kind != wire.CertTimeout || cs.Check(c) != nil {
		t.Fatal("the certificate the votes made does not verify")
	}
	if !slices.ContainsFunc(c.Sigs, func(sg wire.CertSig) bool { return chain[sg.Index] == lead }) {
		t.Fatal("the leader's vote not in the certificate")
	}
	if v := cs.Voters(); len(v) != 0 {
		t.Fatalf("votes of certified numbers kept: %v", v)
	}
}

// TestSyncFromTakesAChain: the catch-up takes a peer's certificates
// past its last only as a chain, each verified against the group the one
// before certifies, and moves the number along.
func TestSyncFromTakesAChain(t *testing.T) {
	chain, keys := group(t, 4)
	peerID := chain[1]
	cs, f := newCerts(t, chain)
	c1 := timeout(t, 1, chain, keys, allBut(1, chain)...)
	c2 := timeout(t, 2, chain, keys, allBut(2, chain)...)
	c4 := timeout(t, 4, chain, keys, allBut(4, chain)...)
	f.pages[peerID] = []wire.Certs{{Certs: []wire.Cert{*c1, *c2, *c4}}}
	got, answered, whole := cs.SyncFrom(context.Background(), peerID)
	if !got || !answered || whole {
		t.Fatalf("got %v answered %v whole %v; want a partial catch-up", got, answered, whole)
	}
	if cs.Top() != 2 || f.LastNumber() != 2 {
		t.Fatalf("top %d, number %d after a page 1, 2, 4: want 2", cs.Top(), f.LastNumber())
	}
	// A forged certificate of 3 (one vote short) is refused.
	c3 := timeout(t, 3, chain, keys, allBut(3, chain)[:1]...)
	f.pages[peerID] = []wire.Certs{{Certs: []wire.Cert{*c3}}}
	if got, _, _ := cs.SyncFrom(context.Background(), peerID); got || cs.Top() != 2 {
		t.Fatalf("a certificate short of its quorum taken (top %d)", cs.Top())
	}
}

// TestCheckNumber: a proposed number is above the last, within
// MaxEpochGap of it, and a first one within MaxFirstEpoch.
func TestCheckNumber(t *testing.T) {
	for _, tc := range []struct {
		last, n uint64
		ok      bool
	}{{0, 1, true}, {0, MaxFirstEpoch, true}, {0, MaxFirstEpoch + 1, false}, {5, 5, false}, {5, 4, false}, {5, 5 + MaxEpochGap, true}, {5, 6 + MaxEpochGap, false}} {
		if err := CheckNumber(tc.last, tc.n); (err == nil) != tc.ok {
			t.Errorf("CheckNumber(%d, %d) = %v, want ok %v", tc.last, tc.n, err, tc.ok)
		}
	}
	dir := t.TempDir()
	if n, err := LoadNumber(dir); n != 0 || err != nil {
		t.Fatalf("no file: %d %v", n, err)
	}
	if err := SaveNumber(dir, 42); err != nil {
		t.Fatal(err)
	}
	if n, err := LoadNumber(dir); n != 42 || err != nil {
		t.Fatalf("after saving 42: %d %v", n, err)
	}
}

// TestRolesFollowTheKeptEncoding: Roles answers from the certificate kept
// for a number, and from its replacement once one is stored, not from the
// index built before it.
func TestRolesFollowTheKeptEncoding(t *testing.T) {
	chain, _ := group(t, 4)
	cs, _ := newCerts(t, chain)
	x, y := peer.ID("candidate-x"), peer.ID("candidate-y")
	c := final(5, chain[:3], 1)
	c.Cands = [][]byte{[]byte(x)}
	cs.Put(5, c.Marshal(), 5)
	if kept, in, cand := cs.Roles(5, chain[0]); !kept || !in || cand {
		t.Errorf("a server of the chain of 5: kept %v, in chain %v, candidate %v", kept, in, cand)
	}
	if kept, in, cand := cs.Roles(5, x); !kept || in || !cand {
		t.Errorf("the candidate of 5: kept %v, in chain %v, candidate %v", kept, in, cand)
	}
	if kept, _, _ := cs.Roles(6, x); kept {
		t.Error("no certificate of 6 is kept, yet Roles says one is")
	}
	r := final(5, chain[1:], 2)
	r.Cands = [][]byte{[]byte(y)}
	cs.Put(5, r.Marshal(), 5)
	if _, in, cand := cs.Roles(5, x); in || cand {
		t.Errorf("x after the replacement of 5, which records y: in chain %v, candidate %v", in, cand)
	}
	if _, in, cand := cs.Roles(5, y); in || !cand {
		t.Errorf("y after the replacement of 5: in chain %v, candidate %v", in, cand)
	}
	if _, in, _ := cs.Roles(5, chain[0]); in {
		t.Error("a server the replacement's chain leaves out is still in the chain of 5")
	}
}
