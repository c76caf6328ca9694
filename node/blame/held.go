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
