package prepare

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// group is four servers, sorted as a chain is; this server is the second.
var group = []peer.ID{"a", "b", "c", "d"}

func facts() Facts {
	return Facts{
		Self: group[1], PIRRate: proto.DefaultPIRRate, Params: proto.DefaultParams().Wire(), MinServers: 3,
		Excluded:      func(peer.ID) bool { return false },
		OutAt:         func(peer.ID, uint64) bool { return false },
		Live:          func(p peer.ID) bool { return slices.Contains(group, p) },
		Eligible:      func(peer.ID, uint64, [][]byte) error { return nil },
		CheckFounding: func([]peer.ID) error { return nil },
	}
}

func prep(number uint64, chain ...peer.ID) *wire.Prepare {
	return &wire.Prepare{Number: number, Params: proto.DefaultParams().Wire(), Chain: proto.ChainIDs(chain)}
}

// TestCheck: a Prepare is taken only with the group's parameters, from a
// server of its sorted chain, with this server in it and every other
// member live, not excluded and eligible here; number 1 only from the
// founders. Each case changes one thing of a Prepare that passes.
func TestCheck(t *testing.T) {
	errFounders := errors.New("not the founders")
	for _, c := range []struct {
		name string
		p    *wire.Prepare
		from peer.ID
		f    func(*Facts)
		want string // "" passes, at position 1
	}{
		{name: "passes", p: prep(5, "a", "b", "c"), from: "a"},
		{name: "passes from a member not on the roster", p: prep(5, "a", "b", "e"), from: "e"},
		{name: "bad parameters", p: func() *wire.Prepare { p := prep(5, "a", "b", "c"); p.Params.K = 0; return p }(), from: "a", want: "request slots"},
		{name: "other group parameters", p: prep(5, "a", "b", "c"), from: "a", f: func(f *Facts) { f.Params.ChunkSize *= 2 }, want: "group's constants"},
		{name: "no chain", p: prep(5), from: "a", want: "without a chain"},
		{name: "not sorted", p: prep(5, "b", "a", "c"), from: "a", want: "not sorted"},
		{name: "twice in the chain", p: prep(5, "a", "b", "b"), from: "a", want: "not sorted"},
		{name: "a member not live here", p: prep(5, "a", "b", "e"), from: "a", want: "not a live server"},
		{name: "a member excluded", p: prep(5, "a", "b", "c"), from: "a", f: func(f *Facts) { f.Excluded = func(p peer.ID) bool { return p == "c" } }, want: "round blame"},
		{name: "a member out for its budget", p: prep(5, "a", "b", "c", "d"), from: "a", f: func(f *Facts) { f.OutAt = func(p peer.ID, n uint64) bool { return p == "d" && n == 5 } }, want: "refusal budget"},
		{name: "out but needed for the minimum", p: prep(5, "a", "b", "c"), from: "a", f: func(f *Facts) { f.OutAt = func(p peer.ID, n uint64) bool { return p == "c" } }},
		{name: "a member withdrew", p: prep(5, "a", "b", "c"), from: "a", f: func(f *Facts) {
			f.Eligible = func(p peer.ID, n uint64, _ [][]byte) error {
				if n == 5 {
					return errors.New("withdrew")
				}
				return nil
			}
		}, want: "withdrew"},
		{name: "a number out of bounds, before the chain", p: prep(5, "a", "b", "z"), from: "a", f: func(f *Facts) {
			f.Bounds = func(n uint64) error { return errors.New("epoch number out of bounds") }
		}, want: "epoch number"},
		{name: "a candidate in the chain", p: func() *wire.Prepare { p := prep(5, "a", "b", "c"); p.Cands = [][]byte{[]byte("c")}; return p }(), from: "a", want: "holds a candidate"},
		{name: "this server not in it", p: prep(5, "a", "c", "d"), from: "a", want: "not in the prepared chain"},
		{name: "from outside the chain", p: prep(5, "b", "c", "d"), from: "a", want: "outside its chain"},
		{name: "number 1 not the founders", p: prep(1, "a", "b", "c"), from: "a", f: func(f *Facts) { f.CheckFounding = func([]peer.ID) error { return errFounders } }, want: "not the founders"},
		{name: "number 2 not the founders", p: prep(2, "a", "b", "c"), from: "a", f: func(f *Facts) { f.CheckFounding = func([]peer.ID) error { return errFounders } }},
		{name: "a minority of the certified group", p: func() *wire.Prepare {
			p := prep(5, "a", "b", "c")
			p.Previous = wire.Cert{Kind: wire.CertFinal, Number: 4, Chain: proto.ChainIDs([]peer.ID{"b", "d", "x", "y"})}
			return p
		}(), from: "a", want: certs.ErrChainMinority.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := facts()
			if c.f != nil {
				c.f(&f)
			}
			pos, err := Check(c.p, c.from, f)
			if c.want == "" {
				if err != nil || pos != 1 {
					t.Fatalf("Check = %d, %v; want 1, nil", pos, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %d, %v; want an error with %q", pos, err, c.want)
			}
		})
	}
}
