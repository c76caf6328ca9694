// Package prepare is a server's first checks of a leader's Prepare
// (docs/protocol.md §3 (v3) "Epoch numbers and leaders", §4): the
// parameters, the chain's shape and membership, the founders of number 1,
// the sender in its chain. A function of the Prepare and of what the
// server knows of its group (Facts), with no I/O and no lock; the checks
// against the epoch numbers, certificates and window that follow are the
// server's (node's epoch_handlers.go).
package prepare

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roster"
)

// Facts is what the checks read of the server: its configuration and its
// view of the group, as values and lookups.
type Facts struct {
	Self       peer.ID
	PIRRate    float64
	Params     wire.Params // the group's parameters
	MinServers int
	// Excluded: named by a round blame; OutAt: out of number n's chains
	// for its refusal budget; Live: on the roster here; Eligible: may
	// serve (internal/eligible), else its withdrawal; CheckFounding: the
	// founders' rule of number 1.
	Excluded      func(p peer.ID) bool
	OutAt         func(p peer.ID, n uint64) bool
	Live          func(p peer.ID) bool
	Eligible      func(p peer.ID, n uint64, prev [][]byte) error
	CheckFounding func(chain []peer.ID) error
	// Bounds refuses a number out of this server's bounds
	// (certs.CheckNumber), nil: none; before the chain, whose
	// eligibility is read at the number.
	Bounds func(n uint64) error
}

// Check checks p, sent by from, and returns this server's position in
// its chain.
func Check(p *wire.Prepare, from peer.ID, f Facts) (int, error) {
	if err := proto.CheckParams(p.Params, f.PIRRate); err != nil {
		return 0, err
	}
	// (v3) every parameter but the times is a group constant.
	if err := proto.CheckGroupParams(p.Params, f.Params); err != nil {
		return 0, err
	}
	if f.Bounds != nil {
		if err := f.Bounds(p.Number); err != nil {
			return 0, err
		}
	}
	if len(p.Chain) < 1 {
		return 0, errors.New("node: prepare without a chain")
	}
	// The number's certificate must verify against the group certified
	// for it (internal/certs).
	if !certs.HoldsGroup(p.Chain, &p.Previous) {
		return 0, certs.ErrChainMinority
	}
	for i := 1; i < len(p.Chain); i++ {
		if bytes.Compare(p.Chain[i-1], p.Chain[i]) >= 0 {
			return 0, errors.New("node: prepared chain not sorted")
		}
	}
	// Servers out for their refusal budget stay in a chain that would
	// fall below --min-servers without them, as in chain().
	out := func(q peer.ID) bool { return f.OutAt(q, p.Number) }
	pos, err := roster.Members(p.Chain, f.Self, "prepared chain", f.MinServers, f.Excluded, out, func(id peer.ID) error {
		if !f.Live(id) && id != from {
			return fmt.Errorf("node: prepared chain has %s, not a live server here", id.ShortString())
		}
		// Who may serve (internal/eligible): a server not eligible here is
		// a withdrawal, not a refusal.
		return f.Eligible(id, p.Number, p.Previous.Chain)
	})
	if err != nil {
		return 0, err
	}
	// Candidates (§3, "Who may serve"): servers outside the chain; which
	// ones is the leader's to choose (wire.DecCands keeps them sorted and
	// few).
	for _, c := range p.Cands {
		if slices.ContainsFunc(p.Chain, func(b []byte) bool { return bytes.Equal(b, c) }) {
			return 0, errors.New("node: prepared chain holds a candidate")
		}
		if _, err := peer.IDFromBytes(c); err != nil {
			return 0, fmt.Errorf("node: candidate: %w", err)
		}
	}
	inChain := slices.ContainsFunc(p.Chain, func(b []byte) bool { return peer.ID(b) == from })
	if pos < 0 {
		return 0, errors.New("node: this server is not in the prepared chain")
	}
	if p.Number == 1 {
		ids := make([]peer.ID, len(p.Chain))
		for i, b := range p.Chain {
			ids[i] = peer.ID(b)
		}
		if err := f.CheckFounding(ids); err != nil {
			return 0, err
		}
	}
	if !inChain {
		return 0, errors.New("node: prepare from outside its chain")
	}
	return pos, nil
}
