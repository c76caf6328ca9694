package proto

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// A primary's receipts of onions and its dry statements (docs/protocol.md
// §5.4).
const (
	tagOnionReceipt = "riffle/v3/onion-receipt"
	tagDry          = "riffle/v3/dry"
	tagAccount      = "riffle/v3/account-rooted"
	tagForwardRoot  = "riffle/v3/forward-root"
)

// OnionReceiptDigest is what a primary signs in an OnionReceipt.
func OnionReceiptDigest(r *wire.OnionReceipt) [32]byte {
	return TaggedHash(tagOnionReceipt, r.MarshalBody())
}

// DryDigest is what a primary signs in a Dry.
func DryDigest(d *wire.Dry) [32]byte { return TaggedHash(tagDry, d.MarshalBody()) }

// CheckOnionReceipt checks r as a receipt of epoch id signed by the chain
// server at its position.
func CheckOnionReceipt(r *wire.OnionReceipt, id [32]byte, chain []peer.ID) error {
	if r.Epoch != id || int(r.Server) >= len(chain) {
		return errors.New("proto: receipt of another epoch or server")
	}
	return VerifyPeerSig(chain[r.Server], OnionReceiptDigest(r), r.Sig)
}

// CheckDry checks d as a dry statement of epoch id signed by the chain
// server at its position.
func CheckDry(d *wire.Dry, id [32]byte, chain []peer.ID) error {
	if d.Epoch != id || int(d.Server) >= len(chain) {
		return errors.New("proto: dry statement of another epoch or server")
	}
	return VerifyPeerSig(chain[d.Server], DryDigest(d), d.Sig)
}

// AccountDigest is what a primary signs in an Account.
func AccountDigest(a *wire.Account) [32]byte { return TaggedHash(tagAccount, a.MarshalBody()) }

// CheckAccount checks a as an account of round r of epoch id signed by
// the chain server at its position.
func CheckAccount(a *wire.Account, id [32]byte, r uint32, chain []peer.ID) error {
	if a.Epoch != id || a.Round != r || int(a.Server) >= len(chain) {
		return errors.New("proto: account of another epoch, round or server")
	}
	return VerifyPeerSig(chain[a.Server], AccountDigest(a), a.Sig)
}

// ForwardRootDigest is what a primary signs in a ForwardRoot.
func ForwardRootDigest(f *wire.ForwardRoot) [32]byte {
	return TaggedHash(tagForwardRoot, f.MarshalBody())
}

// CheckForwardRoot checks f as a forward root of epoch id signed by the
// chain server at its position, its entries in strictly increasing slot
// order.
func CheckForwardRoot(f *wire.ForwardRoot, id [32]byte, chain []peer.ID) error {
	if f.Epoch != id || int(f.Server) >= len(chain) {
		return errors.New("proto: forward root of another epoch or server")
	}
	for i := 1; i < len(f.Entries); i++ {
		if f.Entries[i].Slot <= f.Entries[i-1].Slot {
			return errors.New("proto: forward root not in slot order")
		}
	}
	return VerifyPeerSig(chain[f.Server], ForwardRootDigest(f), f.Sig)
}
