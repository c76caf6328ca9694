package blame

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A held onion (docs/protocol.md §5.4): a primary's signed receipt of an
// onion and its signed statement that it holds none for the same slot
// and round. An honest primary signs a receipt only of an onion it holds
// and a dry statement only of a slot it holds none for, and takes no onion
// for a slot it said dry (node/held.go), so the pair is a corrupt
// primary's, charged to it whatever anyone saw.

// chargeHeld is ChargeOf of an EvHeld charge: the primary whose receipt
// and dry statement of one slot and round it holds, once both verify in
// the number's certified chain.
func chargeHeld(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	if len(ev.Attests) != 0 {
		return "", "", errors.New("blame: a held onion with attestations")
	}
	r, d, err := wire.ParseHeld(ev.Item)
	if err != nil {
		return "", "", err
	}
	if r.Round != d.Round || r.Slot != d.Slot || r.Server != d.Server {
		return "", "", errors.New("blame: a receipt and a dry statement of two slots")
	}
	if err := proto.CheckOnionReceipt(&r, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: held onion's receipt: %w", err)
	}
	if err := proto.CheckDry(&d, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: held onion's dry statement: %w", err)
	}
	return ctx.Chain[r.Server], fmt.Sprintf("receipted slot %d's onion of round %d and signed it dry", r.Slot, r.Round), nil
}

// heldSlot is an EvHeld charge's EvidenceSlot: one record a primary and
// epoch.
func heldSlot(ev *wire.Charge) string {
	r, _, err := wire.ParseHeld(ev.Item)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x/%d/%d", r.Epoch, ev.Kind, r.Server)
}

// heldKey names an EvHeld charge by what was signed.
func heldKey(ev *wire.Charge) ([32]byte, bool) {
	r, d, err := wire.ParseHeld(ev.Item)
	if err != nil {
		return [32]byte{}, false
	}
	rd, dd := proto.OnionReceiptDigest(&r), proto.DryDigest(&d)
	return sha256.Sum256(append(rd[:], dd[:]...)), true
}

// A silent primary (docs/protocol.md §5.4): a primary's receipt of an
// onion, shown by its client, and the chain's attestations (kind
// wire.AttestSilent) that it gave them no account of the round covering
// it. An honest primary answers every chain server's ask with an account
// of every onion it receipted (node/silent.go), so more than half of the
// others attest it only of a primary that took the onion and answered
// nothing, or left the onion out: charged to it. Its own attestation
// counts for nothing, and a minority's, corrupt, charges nobody.

// chargeSilent is ChargeOf of an EvSilent charge: the receipt's primary
// when more than half of the chain's other servers attest it gave no
// account of the receipt's round; nobody otherwise, until they do. A
// signer with two different attestations of the round is charged where
// its second is pivotal, as for a round's (ChargeOf).
func chargeSilent(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	var r wire.OnionReceipt
	if err := r.Unmarshal(ev.Item); err != nil {
		return "", "", err
	}
	if err := proto.CheckOnionReceipt(&r, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: silent primary's receipt: %w", err)
	}
	if !ctx.Final {
		return "", "", errors.New("blame: a receipt under a number with no final certificate")
	}
	m, j := len(ctx.Chain), int(r.Server)
	for i := range ev.Attests {
		at := &ev.Attests[i]
		if at.Kind != wire.AttestSilent || at.Epoch != r.Epoch || at.Number != ev.Number || at.Round != r.Round || int(at.Signer) >= m {
			return "", "", errors.New("blame: attestation of another claim")
		}
		if err := proto.VerifyPeerSig(ctx.Chain[at.Signer], AttestDigest(at), at.Sig); err != nil {
			return "", "", fmt.Errorf("blame: attestation: %w", err)
		}
	}
	verdict := func(any bool) peer.ID {
		n := 0
		for i, bits := range wordLacking(ev.Attests, wire.AttestSilent, any) {
			if int(i) != j && bits&(1<<uint(j)) != 0 {
				n++
			}
		}
		if 2*n > m-1 {
			return ctx.Chain[j]
		}
		return ""
	}
	p := verdict(false)
	if k, ok := equivocator(ev.Attests, wire.AttestSilent); ok && verdict(true) != p {
		return ctx.Chain[k], fmt.Sprintf("round %d: position %d signed two account attestations, the second pivotal", r.Round, k), nil
	}
	if p == "" {
		return "", fmt.Sprintf("round %d: position %d's account not attested missing by a majority", r.Round, j), nil
	}
	return p, fmt.Sprintf("receipted slot %d's onion of round %d and gave the chain no account of it (attested)", r.Slot, r.Round), nil
}

// silentSlot is an EvSilent charge's EvidenceSlot and, hashed, its
// ChargeKey: one record a primary and round of an epoch, its first
// receipt, every attestation merged.
func silentSlot(ev *wire.Charge) string {
	var r wire.OnionReceipt
	if r.Unmarshal(ev.Item) != nil {
		return ""
	}
	return fmt.Sprintf("%x/%d/%d/%d", r.Epoch, ev.Kind, r.Server, r.Round)
}
