package proto

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The signed closing record of an epoch (§6.3 v3): its digest and check.

// TagClosing is the domain tag of the signed closing record.
const TagClosing = "riffle/v3/closing"

// ClosingDigest is what each server signs: the record without signatures.
func ClosingDigest(c *wire.Closing) [32]byte { return TaggedHash(TagClosing, c.MarshalBody()) }

// CheckClosing verifies a closing record against its epoch's chain: one
// round per round of the epoch and all m signatures.
func CheckClosing(v *View, c *wire.Closing) error {
	if c.Epoch != v.ID || len(c.Rounds) != int(v.Desc.Params.Rounds) {
		return errors.New("node: closing record of another epoch or length")
	}
	if err := CheckChainSigs(v.Chain, ClosingDigest(c), c.Sigs); err != nil {
		return fmt.Errorf("node: closing record: %w", err)
	}
	return nil
}

// CheckChainSigs checks one signature of digest dg by each chain server,
// in chain order.
func CheckChainSigs(chain []peer.ID, dg [32]byte, sigs [][64]byte) error {
	if len(sigs) != len(chain) {
		return fmt.Errorf("node: %d signatures for %d servers", len(sigs), len(chain))
	}
	for j, id := range chain {
		if err := VerifyPeerSig(id, dg, sigs[j]); err != nil {
			return fmt.Errorf("node: signature %d: %w", j, err)
		}
	}
	return nil
}
