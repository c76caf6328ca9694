package proto

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/sigcache"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// View is what anyone derives from a descriptor after checking it (§3):
// servers and clients alike build on it.
type View struct {
	ID         [32]byte // the epoch id
	Desc       *wire.Descriptor
	Chain      []peer.ID
	ServerKeys []*group.Element   // shared with other views (groupcache.go): read only
	Y, Yp      [][]*group.Element // [server][round]; shared with other views (groupcache.go): read only
	D          [][]byte
	Lim        wire.Limits
}

// OpenDigest is what every server signs for the open descriptor: the
// number and the epoch id (an abort certificate carries these signatures).
func OpenDigest(d *wire.Descriptor) [32]byte { return OpenCertDigest(d.Number, EpochID(d), d.Cands) }

// FinalDigest is what every server signs for the final descriptor: the
// number, the epoch id and the SHA-256 of the whole encoding (a final
// certificate carries these signatures).
func FinalDigest(d *wire.Descriptor) [32]byte {
	return FinalCertDigest(d.Number, EpochID(d), sha256.Sum256(d.Marshal()), d.Cands)
}

// ListDigest is what every server signs for a request list (§5.3).
func ListDigest(rl *wire.RoundList) [32]byte { return TaggedHash(TagList, rl.MarshalBody()) }

// CheckDescriptor verifies a descriptor's structure, parameters and every
// server's key proof, and derives its view.
func CheckDescriptor(d *wire.Descriptor, rate float64) (*View, error) {
	m := len(d.Group)
	if m < 1 || m > wire.MaxServers {
		return nil, fmt.Errorf("node: descriptor with %d servers", m)
	}
	if err := CheckParams(d.Params, rate); err != nil {
		return nil, err
	}
	v := &View{ID: EpochID(d), Desc: d, Lim: LimitsFor(d.Params, m)}
	for j := range d.Group {
		g := &d.Group[j]
		id, err := peer.IDFromBytes(g.PeerID)
		if err != nil {
			return nil, fmt.Errorf("node: descriptor server %d peer id: %w", j, err)
		}
		if j > 0 && bytes.Compare([]byte(v.Chain[j-1]), []byte(id)) >= 0 {
			return nil, fmt.Errorf("node: descriptor chain not sorted at position %d", j)
		}
		v.Chain = append(v.Chain, id)
		gk, err := checkGroupEntry(d, j)
		if err != nil {
			return nil, err
		}
		v.ServerKeys = append(v.ServerKeys, gk.X)
		v.D = append(v.D, append([]byte(nil), g.D[:]...))
		v.Y, v.Yp = append(v.Y, gk.Y), append(v.Yp, gk.Yp)
	}
	// §4.1 v3: every aggregate key, like every single key.
	if err := mix.CheckAggregateKeys(v.ServerKeys); err != nil {
		return nil, fmt.Errorf("node: descriptor: %w", err)
	}
	if len(d.Clients) > int(d.Params.MaxClients) {
		return nil, fmt.Errorf("node: descriptor with %d clients > cap %d", len(d.Clients), d.Params.MaxClients)
	}
	seen := map[[32]byte]bool{}
	for i, c := range d.Clients {
		if int(c.Primary) >= m {
			return nil, fmt.Errorf("node: client %d has primary %d of %d servers", i, c.Primary, m)
		}
		if seen[c.RegKey] || seen[c.XKey] {
			return nil, fmt.Errorf("node: client %d duplicates a key", i)
		}
		seen[c.RegKey], seen[c.XKey] = true, true
	}
	return v, nil
}

// CheckSigned verifies a signed descriptor: structure and all m signatures.
func CheckSigned(sd *wire.Signed, rate float64) (*View, error) {
	v, err := CheckDescriptor(&sd.Desc, rate)
	if err != nil {
		return nil, err
	}
	if !sd.Final && len(sd.Desc.Clients) != 0 {
		return nil, errors.New("node: open descriptor lists clients")
	}
	// (v3) the reveals of §3: none before the deadline, all after.
	if !sd.Final && len(sd.Desc.Reveals) != 0 {
		return nil, ErrRevealsInOpen
	}
	if sd.Final {
		if err := CheckReveals(&sd.Desc); err != nil {
			return nil, err
		}
	}
	if len(sd.Sigs) != len(v.Chain) {
		return nil, fmt.Errorf("node: descriptor has %d signatures for %d servers", len(sd.Sigs), len(v.Chain))
	}
	dg := OpenDigest(&sd.Desc)
	if sd.Final {
		dg = FinalDigest(&sd.Desc)
	}
	for j, id := range v.Chain {
		if err := VerifyPeerSig(id, dg, sd.Sigs[j]); err != nil {
			return nil, fmt.Errorf("node: descriptor signature %d: %w", j, err)
		}
	}
	return v, nil
}

// ParseRegister checks a registration's envelope against an epoch (its
// signature by the registration key, its X25519 key) and parses it; the
// proofs of knowledge are left to VerifyRegs, batched.
func ParseRegister(v *View, r *wire.Register) (*mix.Registration, error) {
	if r.Epoch != v.ID {
		return nil, errors.New("node: registration for another epoch")
	}
	dg := RegisterDigest(r)
	if !sigcache.Verify(ed25519.PublicKey(r.RegKey[:]), dg[:], r.Sig[:]) {
		return nil, errors.New("node: bad registration signature")
	}
	reg, err := mix.ParseRegistration(r.Reg, len(v.Chain))
	if err != nil {
		return nil, fmt.Errorf("node: registration: %w", err)
	}
	if reg.PIRKey != r.XKey {
		return nil, errors.New("node: registration x25519 key differs from its envelope")
	}
	return reg, nil
}

// VerifyRegs verifies a list of registrations (§4.1): envelopes one by
// one, then every proof of knowledge in one batch (mix.VerifyRegistrations).
// It returns the parsed registrations (nil at a bad index) and the bad
// indexes in order.
func VerifyRegs(v *View, regs []wire.Register, rnd io.Reader) ([]*mix.Registration, []int, error) {
	parsed := make([]*mix.Registration, len(regs))
	var bad, idx []int
	var keys []ed25519.PublicKey
	var cands []*mix.Registration
	for i := range regs {
		reg, err := ParseRegister(v, &regs[i])
		if err != nil {
			bad = append(bad, i)
			continue
		}
		idx, keys, cands = append(idx, i), append(keys, ed25519.PublicKey(regs[i].RegKey[:])), append(cands, reg)
	}
	if len(cands) > 0 {
		pbad, err := mix.VerifyRegistrations(mix.EpochID(v.ID), keys, v.ServerKeys, cands, rnd)
		if err != nil {
			return nil, nil, fmt.Errorf("node: verify %d registrations: %w", len(cands), err)
		}
		isBad := map[int]bool{}
		for _, b := range pbad {
			isBad[b] = true
		}
		for c, i := range idx {
			if isBad[c] {
				bad = append(bad, i)
			} else {
				parsed[i] = cands[c]
			}
		}
	}
	sort.Ints(bad)
	return parsed, bad, nil
}

// CheckRegister verifies a registration against an epoch: its signature by
// the registration key, its proofs (§4.1), and its X25519 key.
func CheckRegister(v *View, r *wire.Register) (*mix.Registration, error) {
	reg, err := ParseRegister(v, r)
	if err != nil {
		return nil, err
	}
	if err := mix.VerifyRegistration(mix.EpochID(v.ID), ed25519.PublicKey(r.RegKey[:]), v.ServerKeys, reg); err != nil {
		return nil, fmt.Errorf("node: registration: %w", err)
	}
	return reg, nil
}

// CheckList verifies all m signatures of a request list.
func CheckList(v *View, rl *wire.RoundList) error {
	if rl.Epoch != v.ID || rl.Round >= v.Desc.Params.Rounds {
		return errors.New("node: request list of another epoch or round")
	}
	if len(rl.Sigs) != len(v.Chain) {
		return fmt.Errorf("node: request list with %d signatures for %d servers", len(rl.Sigs), len(v.Chain))
	}
	dg := ListDigest(rl)
	for j, id := range v.Chain {
		if err := VerifyPeerSig(id, dg, rl.Sigs[j]); err != nil {
			return fmt.Errorf("node: request list signature %d: %w", j, err)
		}
	}
	return nil
}
