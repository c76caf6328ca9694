package blame

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A final account that leaves out a receipted onion (docs/protocol.md
// §5.4): a primary's signed receipt of an onion and its signed account of
// the same round, final (signed once the epoch ended there, of a round
// whose every receipt it holds), without it. An honest primary takes no
// onion after its epoch's end and its final account names every onion of
// the round it receipted (node/silent.go), so the pair is a corrupt
// primary's, charged to it whatever anyone saw.

// chargeAccount is ChargeOf of an EvAccount charge: the primary whose
// receipt and final account of one round it holds, the account without
// the receipt's onion, once both verify in the number's certified chain.
func chargeAccount(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	if len(ev.Attests) != 0 {
		return "", "", errors.New("blame: an account with attestations")
	}
	r, a, err := wire.ParseAccountItem(ev.Item, proto.GenericLimits())
	if err != nil {
		return "", "", err
	}
	if r.Round != a.Round || r.Server != a.Server {
		return "", "", errors.New("blame: a receipt and an account of two rounds or primaries")
	}
	if !a.Ended {
		return "", "", errors.New("blame: an account signed before the epoch's end")
	}
	if a.Covers(&r) {
		return "", "", errors.New("blame: an account that holds the receipt's onion")
	}
	if err := proto.CheckOnionReceipt(&r, ctx.Epoch, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: account's receipt: %w", err)
	}
	if err := proto.CheckAccount(&a, ctx.Epoch, r.Round, ctx.Chain); err != nil {
		return "", "", fmt.Errorf("blame: account: %w", err)
	}
	return ctx.Chain[r.Server], fmt.Sprintf("receipted slot %d's onion of round %d and gave its final account of the round without it", r.Slot, r.Round), nil
}

// accountSlot is an EvAccount charge's EvidenceSlot: one record a primary
// and epoch.
func accountSlot(ev *wire.Charge) string {
	r, _, err := wire.ParseAccountItem(ev.Item, proto.GenericLimits())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x/%d/%d", r.Epoch, ev.Kind, r.Server)
}

// accountKey names an EvAccount charge by what was signed.
func accountKey(ev *wire.Charge) ([32]byte, bool) {
	r, a, err := wire.ParseAccountItem(ev.Item, proto.GenericLimits())
	if err != nil {
		return [32]byte{}, false
	}
	rd, ad := proto.OnionReceiptDigest(&r), proto.AccountDigest(&a)
	return sha256.Sum256(append(rd[:], ad[:]...)), true
}
