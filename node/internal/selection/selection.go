package selection

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The selection every server recomputes (§3 v3): each server checks the
// primaries' signatures of the leader's list, recomputes Candidates over
// it with β from the final descriptor's reveals and refuses a final
// descriptor whose client list is not that selection. The refusal names
// nobody: the reveals reach the leader unsigned (proto's reveal.go) and
// what a server receipted is its own word, so no third party could tell
// whether the leader or the refusing server lies.

// Candidates returns the registration keys of the final descriptor in
// slot order: those a primary listed (primaryOf), sorted, without a
// repeated X25519 key, at most maxClients, chosen by the selection of §3
// (proto.SelectClients) when more registered, β being the hash of the
// servers' reveals. The leader computes it, and every other server again.
func Candidates(id, beta [32]byte, all map[[32]byte]wire.Forwarded, primaryOf map[[32]byte]uint16, rank map[[32]byte]int, maxClients uint32, m int) [][32]byte {
	keys := make([][32]byte, 0, len(all))
	for k := range all {
		if _, ok := primaryOf[k]; ok {
			keys = append(keys, k)
		}
	}
	// Slot order: by registration key, a public order nobody chooses
	// (keys are fresh per epoch).
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	// §4.1: duplicate keys are rejected. A second registration with an
	// X25519 key already taken (by a lower registration key) is dropped,
	// so that the list every server checks has none.
	seenX := map[[32]byte]bool{}
	kept := keys[:0]
	for _, k := range keys {
		x := all[k].Reg.XKey
		if seenX[x] || seenX[k] {
			continue
		}
		seenX[x], seenX[k] = true, true
		kept = append(kept, k)
	}
	return proto.SelectClients(id, beta, kept, primaryOf, rank, maxClients, m)
}

// Unselected is the leader's Rest: every registration of the primaries'
// orders (primaryOf) that keys (the selection) leaves out, by
// registration key, as all holds it.
func Unselected(keys [][32]byte, primaryOf map[[32]byte]uint16, all map[[32]byte]wire.Forwarded) []wire.Forwarded {
	in := make(map[[32]byte]bool, len(keys))
	for _, k := range keys {
		in[k] = true
	}
	var rest [][32]byte
	for k := range primaryOf {
		if !in[k] {
			rest = append(rest, k)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return bytes.Compare(rest[i][:], rest[j][:]) < 0 })
	out := make([]wire.Forwarded, 0, len(rest))
	for _, k := range rest {
		out = append(out, all[k])
	}
	return out
}

// Check recomputes the selection from the leader's list (the chosen
// registrations regs with their primaries prims, the unselected rest, the
// primaries' signed orders) and compares it with the final descriptor's
// clients: every key of every order must be in the list once, and the
// clients must be exactly Candidates of them with β.
func Check(id, beta [32]byte, clients []wire.ClientEntry, regs []wire.Register, prims []uint16, rest []wire.Forwarded, orders []wire.Order, n uint32, m int) error {
	all := make(map[[32]byte]wire.Forwarded, len(regs)+len(rest))
	for i := range regs {
		all[regs[i].RegKey] = wire.Forwarded{Primary: prims[i], Reg: regs[i]}
	}
	for _, f := range rest {
		if _, ok := all[f.Reg.RegKey]; ok {
			return errors.New("node: the leader's list holds a registration twice")
		}
		all[f.Reg.RegKey] = f
	}
	primaryOf := map[[32]byte]uint16{}
	rank := map[[32]byte]int{}
	for p := range orders {
		for i, k := range orders[p].Keys {
			f, ok := all[k]
			if !ok {
				return fmt.Errorf("node: the leader's list leaves out place %d of primary %d's signed order", i, p)
			}
			if int(f.Primary) != p {
				return fmt.Errorf("node: a registration of primary %d's order is listed under primary %d", p, f.Primary)
			}
			primaryOf[k], rank[k] = uint16(p), i
		}
	}
	if len(primaryOf) != len(all) {
		return errors.New("node: the leader's list holds a registration of no primary's order")
	}
	want := Candidates(id, beta, all, primaryOf, rank, n, m)
	got := make([][32]byte, len(clients))
	for i, c := range clients {
		got[i] = c.RegKey
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("node: the final descriptor's %d clients are not the selection of the rule (%d clients)", len(got), len(want))
	}
	return nil
}
