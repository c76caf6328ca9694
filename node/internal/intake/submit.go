package intake

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The round intake (§5.1): the checks of a client's signed onion before
// anything is kept, at its primary and, forwarded, at S_0.

// CheckSubmission checks one signed onion of a client of primary pos
// under final descriptor d, chain of m servers: the slot is served by pos,
// the round is within the epoch, the onion has the epoch's size and the
// slot's registration key signed it. It returns the onion's digest; what
// names the message in errors.
func CheckSubmission(sub *wire.Submit, d *wire.Descriptor, pos, m int, what string) ([32]byte, error) {
	b, k := int(d.Params.ChunkSize), int(d.Params.K)
	if int(sub.Slot) >= len(d.Clients) || int(d.Clients[sub.Slot].Primary) != pos {
		return [32]byte{}, errors.New("node: slot not served by this primary")
	}
	if sub.Round >= d.Params.Rounds {
		return [32]byte{}, fmt.Errorf("node: round %d beyond the epoch's %d", sub.Round, d.Params.Rounds)
	}
	if len(sub.Onion) != mix.OnionSize(b, k, m) {
		return [32]byte{}, fmt.Errorf("node: onion of %d bytes, want %d", len(sub.Onion), mix.OnionSize(b, k, m))
	}
	regKey := ed25519.PublicKey(d.Clients[sub.Slot].RegKey[:])
	digest := mix.SubmissionDigest(sub.Onion)
	if err := mix.VerifySubmissionDigest(regKey, mix.EpochID(sub.Epoch), uint64(sub.Round), sub.Slot, digest, sub.Sig[:]); err != nil {
		return [32]byte{}, fmt.Errorf("node: %s: %w", what, err)
	}
	return digest, nil
}

// CheckBatch checks the submissions a primary from forwards to S_0 for
// batch's round under final descriptor d and chain: each of a slot whose
// primary is from, of the batch's round, of the epoch's onion size and
// signed by its slot's registration key. It returns their digests.
func CheckBatch(batch *wire.SubmitBatch, d *wire.Descriptor, chain []peer.ID, from peer.ID) ([][32]byte, error) {
	size := mix.OnionSize(int(d.Params.ChunkSize), int(d.Params.K), len(chain))
	digests := make([][32]byte, len(batch.Subs))
	c := d.Clients
	for i, sub := range batch.Subs {
		if int(sub.Slot) >= len(c) || chain[c[sub.Slot].Primary] != from || sub.Round != batch.Round || len(sub.Onion) != size {
			return nil, fmt.Errorf("node: submission for slot %d not from its primary", sub.Slot)
		}
		digests[i] = mix.SubmissionDigest(sub.Onion)
		if err := mix.VerifySubmissionDigest(ed25519.PublicKey(c[sub.Slot].RegKey[:]), mix.EpochID(sub.Epoch), uint64(sub.Round), sub.Slot, digests[i], sub.Sig[:]); err != nil {
			return nil, fmt.Errorf("node: submission of slot %d: %w", sub.Slot, err)
		}
	}
	return digests, nil
}

// CheckForwarded checks, before the registration's proofs, a primary's
// signed registration as another chain server receives it (§3 v3): only
// a server of chain forwards, from the place it names, a registration of
// the chain's size, and signs what it forwards.
func CheckForwarded(f *wire.Forwarded, chain []peer.ID, from peer.ID) error {
	if !slices.Contains(chain, from) {
		return errors.New("node: forwarded registration from outside the chain")
	}
	if int(f.Primary) >= len(chain) || chain[f.Primary] != from {
		return errors.New("node: forwarded registration not from the primary it names")
	}
	if len(f.Reg.Reg) != mix.RegistrationSize(len(chain)) {
		return fmt.Errorf("node: forwarded registration of %d bytes, want %d", len(f.Reg.Reg), mix.RegistrationSize(len(chain)))
	}
	if err := proto.VerifyPeerSig(from, proto.ForwardDigest(f), f.Sig); err != nil {
		return fmt.Errorf("node: forwarded registration: %w", err)
	}
	return nil
}
