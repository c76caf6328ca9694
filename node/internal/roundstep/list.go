package roundstep

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// Published is what a server holds of a round it published (§5.3), final
// once the publication is stored: the chunk ids, the ids requested and,
// by output position, each payload's requests in order.
type Published struct {
	IDs      [][32]byte
	Requests map[[32]byte]bool
	ReqByPos [][][32]byte
}

// Requested is the round's requested ids, sorted.
func (p Published) Requested() [][32]byte {
	ids := make([][32]byte, 0, len(p.Requests))
	for id := range p.Requests {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// ProposeList is S_0's request list of round r (§5.3 v2), unsigned: the
// ids requested that it holds (lens: their lengths), cut to L_max
// round-robin across output positions from the public start q_0 (v3),
// with their lengths and (position, entry) pairs (§6.3 v3), and the
// round's published and manifest ids. Ids not held are left out, never
// a zero row.
func ProposeList(ep Facts, r uint32, p Published, manifests [][32]byte, lens map[[32]byte]uint32) wire.RoundList {
	rl := wire.RoundList{Epoch: ep.ID, Round: r, Published: p.IDs, Manifests: manifests}
	q0 := proto.ListStart(ep.ID, r, len(p.ReqByPos))
	keep := proto.RoundRobinCut(q0, p.ReqByPos, func(id [32]byte) bool { _, ok := lens[id]; return ok }, int(ep.Params.MaxRows))
	rl.Entries = make([]wire.ListEntry, len(keep))
	for i, id := range keep {
		rl.Entries[i] = wire.ListEntry{ID: id, Len: lens[id]}
	}
	rl.Pairs = proto.ListPairs(p.ReqByPos, rl.Entries)
	return rl
}

// CheckList checks S_0's proposal rl of a round this server published
// with the manifest ids mans (§5.3): refuse if its published or
// manifest ids differ from this server's, or it lists an id nobody
// requested, or is not sorted; pairs if its (position, id) pairs differ
// from the requests published here (§6.3 v3), a refusal that comes after
// the censorship check (Omitted).
func CheckList(p Published, mans [][32]byte, rl *wire.RoundList) (refuse, pairs error) {
	if !slices.Equal(p.IDs, rl.Published) || !slices.Equal(mans, rl.Manifests) {
		return errors.New("node: proposal's published or manifest ids differ from this server's"), nil
	}
	for i, le := range rl.Entries {
		if !p.Requests[le.ID] || (i > 0 && bytes.Compare(rl.Entries[i-1].ID[:], le.ID[:]) >= 0) {
			return errors.New("node: proposal lists an id nobody requested, or is not sorted"), nil
		}
	}
	if !proto.SamePairs(rl.Pairs, proto.ListPairs(p.ReqByPos, rl.Entries)) {
		return nil, errors.New("node: proposal's (position, id) pairs differ from the published requests")
	}
	return nil, nil
}

// Unlisted is the ids requested in the round that rl leaves out, sorted:
// those this server holds were censored unless the cut left them out
// (Omitted).
func Unlisted(p Published, rl *wire.RoundList) [][32]byte {
	in := listed(rl)
	var out [][32]byte
	for id := range p.Requests {
		if !in[id] {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// Omitted is what rl, a proposal of round r cut to maxRows, leaves out
// of the ids this server holds (held, among the Unlisted): v3, no
// censorship, every requested id held is in unless the round-robin cut
// leaves it out. A position's ids never taken do not change the cut, so
// running it over what rl lists and this server holds gives rl again
// unless rl omitted one (proto.RoundRobinCut).
func Omitted(ep Facts, r uint32, p Published, rl *wire.RoundList, held map[[32]byte]bool, maxRows int) [][32]byte {
	if len(held) == 0 {
		return nil
	}
	in := listed(rl)
	keep := proto.RoundRobinCut(proto.ListStart(ep.ID, r, len(p.ReqByPos)), p.ReqByPos, func(id [32]byte) bool { return in[id] || held[id] }, maxRows)
	var out [][32]byte
	for _, id := range keep {
		if !in[id] {
			out = append(out, id)
		}
	}
	return out
}

func listed(rl *wire.RoundList) map[[32]byte]bool {
	in := make(map[[32]byte]bool, len(rl.Entries))
	for _, le := range rl.Entries {
		in[le.ID] = true
	}
	return in
}

// ToFetch is what of rl's entries this server lacks (held: the lengths
// of those it holds), to fetch from the chain before it signs; a held
// chunk of another length refuses the proposal.
func ToFetch(rl *wire.RoundList, held map[[32]byte]uint32) ([]wire.ListEntry, error) {
	var out []wire.ListEntry
	for _, le := range rl.Entries {
		n, ok := held[le.ID]
		switch {
		case !ok:
			out = append(out, le)
		case n != le.Len:
			return nil, fmt.Errorf("node: proposal length of %x is wrong", le.ID[:6])
		}
	}
	return out, nil
}

// Fetched is a fetched chunk rep of list entry le, checked: chunks are
// public and self-verifying, by their id and length.
func Fetched(rep []byte, le wire.ListEntry, maxSize int) (wire.Chunk, error) {
	var c wire.Chunk
	if err := c.Unmarshal(rep, maxSize); err != nil || c.ID != le.ID || sha256.Sum256(c.Data) != le.ID || len(c.Data) != int(le.Len) {
		return wire.Chunk{}, fmt.Errorf("node: fetched chunk %x does not verify", le.ID[:6])
	}
	return c, nil
}

// ChainSigs are the chain's signatures of a proposal, from the replies
// of every chain position in order (each a wire.Sig of its index).
func ChainSigs(reps [][]byte) ([][64]byte, error) {
	sigs := make([][64]byte, 0, len(reps))
	for i, rep := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(rep); err != nil || int(sg.Index) != i {
			return nil, fmt.Errorf("node: bad signature from position %d", i)
		}
		sigs = append(sigs, sg.Sig)
	}
	return sigs, nil
}

// ListRecords is what a server stores of a final request list that is
// not void (§7 v3): its entries as the round's requests, with their
// lengths, and its (position, id) pairs, the round's public demand that
// decoys follow.
func ListRecords(rl *wire.RoundList) ([]store.Request, []store.Pair) {
	reqs := make([]store.Request, len(rl.Entries))
	for i, le := range rl.Entries {
		reqs[i] = store.Request{ID: le.ID, Length: le.Len}
	}
	ps := make([]store.Pair, len(rl.Pairs))
	for i, p := range rl.Pairs {
		ps[i] = store.Pair{Pos: p.Pos, ID: rl.PairID(i)}
	}
	return reqs, ps
}
