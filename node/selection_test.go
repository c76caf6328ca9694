//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
)

// cheatNet starts m = 3 servers on loopback, each of which cheats as c
// says whenever it leads, and two clients per primary; the leader waits
// for all six. Each server logs warnings to its own buffer.
func cheatNet(t *testing.T, c *leaderCheat) (*anonNet, []*lockedBuf) {
	t.Helper()
	logs := make([]*lockedBuf, 3)
	tn := startAnonNet(t, 3, 6, 6, testParams(8), func(i int, sc *ServerConfig) {
		logs[i] = &lockedBuf{}
		sc.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelWarn}))
		sc.cheat = c
	})
	return tn, logs
}

// waitLogs waits until a server's log holds every one of want.
func waitLogs(t *testing.T, logs []*lockedBuf, d time.Duration, want ...string) string {
	t.Helper()
	var got string
	if wait.UntilEvery(context.Background(), d, 100*time.Millisecond, func() bool {
		for _, l := range logs {
			s := l.String()
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(s, w)
			}
			if ok {
				got = s
				return true
			}
		}
		return false
	}) == nil {
		return got
	}
	var all []string
	for _, l := range logs {
		all = append(all, l.String())
	}
	t.Fatalf("no server logged %q:\n%s", want, strings.Join(all, "\n---\n"))
	return ""
}

// noFinal checks that no server holds a final descriptor.
func noFinal(t *testing.T, tn *anonNet) {
	t.Helper()
	for i, s := range tn.servers {
		s.mu.Lock()
		for _, e := range s.epochs {
			if e.final != nil {
				s.mu.Unlock()
				t.Fatalf("server %d took a final descriptor from a cheating leader", i)
			}
		}
		s.mu.Unlock()
	}
}

// TestLeaderReordersOrder checks §3 (v3) "signed orders": a leader that
// passes on a primary's list in another order than the primary signed is
// refused by the other servers before any registration's proofs, and no
// final descriptor is signed.
func TestLeaderReordersOrder(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		tn, logs := cheatNet(t, &leaderCheat{list: func(rl *wire.RegList) {
			for i := range rl.Orders {
				if k := rl.Orders[i].Keys; len(k) >= 2 {
					k[0], k[1] = k[1], k[0]
					return
				}
			}
		}})
		out := waitLogs(t, logs, 40*time.Second, "epoch failed", "not signed by it")
		if !strings.Contains(out, "order of primary") {
			t.Fatalf("refused for another reason: %s", out)
		}
		noFinal(t, tn)
	})
}

// selectionCase is a selection over the cap: 100 registrations of
// primary 0, 3 of primary 1, their orders (primary 0's in index order),
// and the leader's list for a given selection.
type selectionCase struct {
	id, beta  [32]byte
	all       map[[32]byte]wire.Forwarded
	primaryOf map[[32]byte]uint16
	rank      map[[32]byte]int
	orders    []wire.Order
}

func newSelectionCase(t *testing.T) *selectionCase {
	c := &selectionCase{id: [32]byte{7}, all: map[[32]byte]wire.Forwarded{}, primaryOf: map[[32]byte]uint16{}, rank: map[[32]byte]int{}, orders: make([]wire.Order, 2)}
	c.beta = proto.SelectionBeta(randomReveals(t, 2))
	for i := range 103 {
		k := sha256.Sum256([]byte(fmt.Sprint("client", i)))
		p := uint16(0)
		if i >= 100 {
			p = 1
		}
		x := sha256.Sum256([]byte(fmt.Sprint("x25519", i)))
		c.all[k] = wire.Forwarded{Primary: p, Reg: wire.Register{Epoch: c.id, RegKey: k, XKey: x}}
		c.primaryOf[k], c.rank[k] = p, len(c.orders[p].Keys)
		c.orders[p].Keys = append(c.orders[p].Keys, k)
	}
	return c
}

// list is the leader's list and final client entries for selection keys.
func (c *selectionCase) list(keys [][32]byte) ([]wire.ClientEntry, []wire.Register, []uint16, []wire.Forwarded) {
	in := map[[32]byte]bool{}
	var clients []wire.ClientEntry
	var regs []wire.Register
	var prims []uint16
	for _, k := range keys {
		in[k] = true
		f := c.all[k]
		clients = append(clients, wire.ClientEntry{RegKey: k, Primary: f.Primary, XKey: f.Reg.XKey})
		regs, prims = append(regs, f.Reg), append(prims, f.Primary)
	}
	var rest []wire.Forwarded
	for k, f := range c.all {
		if !in[k] {
			rest = append(rest, f)
		}
	}
	return clients, regs, prims, rest
}

func (c *selectionCase) check(keys [][32]byte) error {
	clients, regs, prims, rest := c.list(keys)
	return selection.Check(c.id, c.beta, clients, regs, prims, rest, c.orders, MinClientCap, 2)
}

// TestSelectionRecomputed checks §3 (v3) "every server recomputes the
// selection": over the cap, the rule's selection is accepted, and a
// leader's other selection is refused: one registration beyond the
// quotas swapped for another, a selection under another β, primary 0's
// quota filled from the back of its signed order, a registration of an
// order left out of the list. Over the wire, a server that receipted
// nothing (its forwards lost) still refuses a leader that leaves a
// registration out of a selection under the cap, from the leader's list
// alone.
func TestSelectionRecomputed(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		c := newSelectionCase(t)
		honest := selection.Candidates(c.id, c.beta, c.all, c.primaryOf, c.rank, MinClientCap, 2)
		if len(honest) != MinClientCap {
			t.Fatalf("%d selected", len(honest))
		}
		if err := c.check(honest); err != nil {
			t.Fatalf("the rule's selection refused: %v", err)
		}
		// Swap a selected registration of primary 0 beyond its quota (not
		// in the first 32 of its order) for an unselected one.
		in := map[[32]byte]bool{}
		for _, k := range honest {
			in[k] = true
		}
		var out, beyond [32]byte
		for _, k := range c.orders[0].Keys[proto.PrimaryQuota(MinClientCap, 2):] {
			if in[k] && beyond == ([32]byte{}) {
				beyond = k
			}
			if !in[k] && out == ([32]byte{}) {
				out = k
			}
		}
		swapped := slices.DeleteFunc(slices.Clone(honest), func(k [32]byte) bool { return k == beyond })
		swapped = append(swapped, out)
		slices.SortFunc(swapped, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		if err := c.check(swapped); err == nil || !strings.Contains(err.Error(), "not the selection") {
			t.Fatalf("a swapped selection: %v", err)
		}
		// Another β.
		other := selection.Candidates(c.id, proto.SelectionBeta(randomReveals(t, 2)), c.all, c.primaryOf, c.rank, MinClientCap, 2)
		if err := c.check(other); err == nil {
			t.Fatal("a selection under another β was accepted")
		}
		// The leader ranks primary 0 from the back of its signed order.
		back := map[[32]byte]int{}
		for k, r := range c.rank {
			back[k] = -r
		}
		if err := c.check(selection.Candidates(c.id, c.beta, c.all, c.primaryOf, back, MinClientCap, 2)); err == nil {
			t.Fatal("a selection against the signed order was accepted")
		}
		// A registration of an order missing from the list.
		clients, regs, prims, rest := c.list(honest)
		if err := selection.Check(c.id, c.beta, clients, regs, prims, rest[1:], c.orders, MinClientCap, 2); err == nil || !strings.Contains(err.Error(), "leaves out") {
			t.Fatalf("a list without an ordered registration: %v", err)
		}

		// Over the wire: server 0 receipts nothing when it does not lead.
		drop := func(keys [][32]byte, _ *leader.Closed) [][32]byte { return keys[:len(keys)-1] }
		logs := make([]*lockedBuf, 3)
		tn := startAnonNet(t, 3, 6, 6, testParams(8), func(i int, sc *ServerConfig) {
			logs[i] = &lockedBuf{}
			sc.Logger = slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelWarn}))
			sc.cheat = &leaderCheat{keys: drop, noReceipt: i == 0}
		})
		waitLogs(t, logs[:1], 60*time.Second, "final descriptor refused", "not the selection of the rule")
		noFinal(t, tn)
	})
}
