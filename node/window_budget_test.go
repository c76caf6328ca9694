//go:build riffletest

package node

import (
	"context"
	"crypto/rand"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// budgetRun is a made-up group of m = 7 servers, stand-in hosts each,
// whose epochs 1..N−1 ran with two fault aborts signed by one server X,
// at N−7 and N−1: less than m apart, so the servers' rule leaves X out of
// N's chain. N's window pins N−2..N−5.
type budgetRun struct {
	wc     *windowChain
	hosts  []transport.Host // the seven servers, X last
	x      peer.ID
	d      *wire.Descriptor // N's, without X
	v      *proto.View
	pinned []wire.WindowItem // N−2..N−5 with records and pools
}

const budgetN = 21

func newBudgetRun(t *testing.T) *budgetRun {
	t.Helper()
	const m = 7
	br := &budgetRun{wc: &windowChain{descs: map[uint64]*wire.Descriptor{}, certs: map[uint64]wire.Cert{}}}
	var group []wire.GroupEntry
	var ids []peer.ID
	for range m {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := newHost(t, k, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			t.Fatal(err)
		}
		br.wc.keys = append(br.wc.keys, k)
		br.hosts = append(br.hosts, h)
	}
	// The chain order (sortChain), which certificates keep.
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(string(br.hosts[a].ID()), string(br.hosts[b].ID())) })
	keys, hosts := br.wc.keys, br.hosts
	br.wc.keys, br.hosts = nil, nil
	for _, i := range order {
		br.wc.keys, br.hosts = append(br.wc.keys, keys[i]), append(br.hosts, hosts[i])
		group = append(group, hostEntry(hosts[i]))
		ids = append(ids, hosts[i].ID())
	}
	br.x = ids[m-1]
	var prev wire.Cert
	for n := uint64(1); n < budgetN; n++ {
		d := &wire.Descriptor{Number: n, Params: testParams(2).Wire(), Group: group, Previous: prev}
		br.wc.descs[n] = d
		prev = wire.Cert{Kind: wire.CertFinal, Number: n, Epoch: proto.EpochID(d), Chain: proto.ChainIDs(ids)}
		if n == budgetN-7 || n == budgetN-1 {
			ab := wire.Abort{Epoch: proto.EpochID(d), Number: n, Kind: wire.AbortFault, Signer: []byte(br.x), Reason: []byte("refused")}
			prev.Kind, prev.Abort = wire.CertAbort, ab.Marshal()
		}
		br.wc.certs[n] = prev
	}
	var refs []wire.WindowRef
	for n := uint64(budgetN - 2); n >= budgetN-5; n-- {
		rec, pool, dg := br.wc.record(t, n, byte(n))
		it := br.wc.item(n)
		it.Closing, it.Pool = rec, pool
		br.pinned = append(br.pinned, it)
		refs = append(refs, wire.WindowRef{Number: n, Epoch: proto.EpochID(br.wc.descs[n]), Closing: dg})
	}
	br.d = &wire.Descriptor{Number: budgetN, Params: testParams(2).Wire(), Group: group[:m-1], Previous: prev, Window: refs}
	br.v = &proto.View{ID: proto.EpochID(br.d), Desc: br.d, Chain: ids[:m-1]}
	return br
}

// items is N's window as a server serves it: the pinned epochs and every
// descriptor of number at least low.
func (br *budgetRun) items(low uint64) []wire.WindowItem {
	out := append([]wire.WindowItem(nil), br.pinned...)
	for n := uint64(budgetN - 1); n >= low && n >= 1; n-- {
		if n <= budgetN-2 && n >= budgetN-5 {
			continue
		}
		out = append(out, br.wc.item(n))
	}
	return out
}

// TestBudgetFixedDepth (issue 26, item 1): the budgets a client counts
// come from a walk to a fixed depth, BudgetLookback numbers below N, that
// every client of N must reach to hold the window. With m = 7 and N's
// window pinning N−2..N−5, the walk that stopped at the oldest pin (F4)
// saw X's abort at N−1 but not the one at N−7, and took N's chain
// without X although the servers' rule (two aborts less than m apart)
// left X out: the steering the refusal exists for. Now the walk reaches
// N−7's certificate: the client refuses. Descriptors below the depth
// change nothing, and a walk short of it does not hold the window, nor
// lets a member answer N's Prepare.
func TestBudgetFixedDepth(t *testing.T) {
	br := newBudgetRun(t)
	defer closeHosts(br.hosts)
	atPin := br.items(budgetN - 5)
	deep := br.items(budgetN - BudgetLookback)
	all := br.items(1)
	if w, ok := proto.ResolveWindow(br.d, atPin); ok || !w.Short {
		t.Errorf("a walk that stops at the oldest pin holds the window (short %v)", w.Short)
	}
	if w, ok := proto.ResolveWindow(br.d, br.items(budgetN-BudgetLookback+1)); ok || !w.Short {
		t.Errorf("a walk a number short of the depth holds the window (short %v)", w.Short)
	}
	a, okA := proto.ResolveWindow(br.d, deep)
	b, okB := proto.ResolveWindow(br.d, all)
	if !okA || !okB {
		t.Fatalf("window not held over the walk to the depth (%v, %d missing) or over every descriptor (%v)", a.Short, a.Missing, b.Short)
	}
	if !reflect.DeepEqual(a.Budget, b.Budget) {
		t.Errorf("budgets differ with descriptors below the depth: %d certificates and %d chains, against %d and %d",
			len(b.Budget.Certs), len(b.Budget.Chains), len(a.Budget.Certs), len(a.Budget.Chains))
	}
	// A member answers N's Prepare only holding the walk to the depth,
	// which it then serves.
	var member Server
	prep := &wire.Prepare{Number: budgetN, Previous: br.d.Previous, Window: br.d.Window}
	if _, err := member.win.Check(prep, atPin, "", false); err == nil {
		t.Error("a member holding the walk only to the oldest pin takes the Prepare")
	}
	if _, err := member.win.Check(prep, deep, "", false); err != nil {
		t.Errorf("a member holding the walk to the depth refuses the Prepare: %v", err)
	}
	why := BudgetDrops(a.Budget, br.v.Chain, budgetN)
	if len(why) != 1 || !strings.Contains(why[0], br.x.ShortString()) {
		t.Errorf("budget drops %v, want X (aborts at %d and %d)", why, budgetN-7, budgetN-1)
	}
}

// TestBudgetDepthEveryClient (issue 26, item 1): clients fetch N's window
// from N's and N−1's chains and decide on N's chain. One whose replies
// all reach the depth, and one whose primary withholds every descriptor
// below the oldest pin while the chains' other servers give them, both
// refuse N's chain naming X; one to which no server gives the depth holds
// no window and sits N out, as for a missing pinned pool (the only
// outcome that follows from what N's descriptor pins, since an honest
// member of N's chain held the walk to the depth before it signed).
// Before, all three took N's chain without X.
func TestBudgetDepthEveryClient(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		br := newBudgetRun(t)
		defer closeHosts(br.hosts)
		clients := windowHosts(t, 3, 0)
		defer closeHosts(clients)
		full := (&wire.Window{Items: br.items(budgetN - BudgetLookback)}).Marshal()
		short := (&wire.Window{Items: br.items(budgetN - 5)}).Marshal()
		// withheld: which client each server gives the walk only down to
		// the oldest pin.
		withheld := func(server int, from peer.ID) bool {
			return from == clients[2].ID() || from == clients[1].ID() && server == 0
		}
		var g transport.Gate
		for i, h := range br.hosts {
			transport.Serve(ctx, h, &g, quietLogger(), ProtoClient, time.Minute, anyPeer(func(wire.Type) int { return 1 << 20 }),
				func(_ context.Context, from peer.ID, ty wire.Type, _ []byte) (wire.Type, []byte, error) {
					if ty != wire.TypeWindowReq {
						return 0, nil, errors.New("not a window request")
					}
					if withheld(i, from) {
						return wire.TypeWindow, short, nil
					}
					return wire.TypeWindow, full, nil
				})
		}
		var errs []error
		for _, c := range clients {
			errs = append(errs, HoldWindowChain(ctx, c, br.hosts[0].ID(), br.v))
		}
		for i, err := range errs[:2] {
			if err == nil || !strings.Contains(err.Error(), br.x.ShortString()) || !strings.Contains(err.Error(), "refusal budget") {
				t.Errorf("client %d: N's chain without X: %v, want refused for X's budget", i, err)
			}
		}
		if errs[0] != nil && errs[1] != nil && errs[0].Error() != errs[1].Error() {
			t.Errorf("the client whose primary withheld the walk decided otherwise: %v, against %v", errs[1], errs[0])
		}
		if errs[2] == nil || !strings.Contains(errs[2].Error(), "decoy window") {
			t.Errorf("a client given no walk to the depth: %v, want no window (sitting N out)", errs[2])
		}
	})
}
