package blame

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A forward that leaves out a receipted onion (docs/protocol.md §5.4): a
// primary's signed receipt of an onion and its signed forward root of the
// same round without it. An honest primary signs its root over every
// onion of the round it holds when it forwards, and takes no onion of the
// round for a slot outside its root after (node/forward.go), so the pair
// is a corrupt primary's, charged to it whatever anyone saw.

// chargeForward is ChargeOf of an EvForward charge: the primary whose
// receipt and forward root of one round it holds, the root without the
// receipt's onion, once both verify in the number's certified chain.
func chargeForward(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	if len(ev.Attests) != 0 {
		return "", "", errors.New("blame: a forward root with attestations")
	}
	r, f, err := wire.ParseForward(ev.Item, proto.GenericLimits())
	if err != nil {
		return "", "", err
	}
	if r.Round != f.Round || r.Server != f.Server {
		return "", "", errors.New("blame: a receipt and a forward root of two rounds or primaries")
	}
	if f.Covers(&r) {
		return "", "", errors.New("blame: a forward root that holds the receipt's onion")
	}
	if err := proto.CheckOnionReceipt(&r, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: forward's receipt: %w", err)
	}
	if err := proto.CheckForwardRoot(&f, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: forward root: %w", err)
	}
	return ctx.Chain[r.Server], fmt.Sprintf("receipted slot %d's onion of round %d and forwarded the round without it", r.Slot, r.Round), nil
}

// forwardSlot is an EvForward charge's EvidenceSlot: one record a primary
// and epoch.
func forwardSlot(ev *wire.Charge) string {
	r, _, err := wire.ParseForward(ev.Item, proto.GenericLimits())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x/%d/%d", r.Epoch, ev.Kind, r.Server)
}

// forwardKey names an EvForward charge by what was signed.
func forwardKey(ev *wire.Charge) ([32]byte, bool) {
	r, f, err := wire.ParseForward(ev.Item, proto.GenericLimits())
	if err != nil {
		return [32]byte{}, false
	}
	rd, fd := proto.OnionReceiptDigest(&r), proto.ForwardRootDigest(&f)
	return sha256.Sum256(append(rd[:], fd[:]...)), true
}
