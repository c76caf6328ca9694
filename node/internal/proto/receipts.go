package proto

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Receipts of registrations (§3 v3): what a server signs for a
// registration it took, and the checks of receipts that clients and
// servers run.

const TagReceipt = "riffle/v3/receipt"

// ReceiptDigest is what server j signs for a receipt.
func ReceiptDigest(r *wire.Receipt) [32]byte {
	var srv [2]byte
	srv[0], srv[1] = byte(r.Server>>8), byte(r.Server)
	return TaggedHash(TagReceipt, r.Epoch[:], srv[:], r.RegKey[:], r.RegHash[:])
}

// RegHash is the hash a receipt names: SHA-256 of the Register encoding.
func RegHash(r *wire.Register) [32]byte { return sha256.Sum256(r.Marshal()) }

// CheckReceipt checks r as server j's receipt of reg in epoch id.
func CheckReceipt(r *wire.Receipt, id [32]byte, reg *wire.Register, chain []peer.ID) error {
	if r.Epoch != id || r.RegKey != reg.RegKey || r.RegHash != RegHash(reg) {
		return errors.New("node: receipt of another registration")
	}
	if int(r.Server) >= len(chain) {
		return errors.New("node: receipt of a server outside the chain")
	}
	return VerifyPeerSig(chain[r.Server], ReceiptDigest(r), r.Sig)
}

// CheckReceipted is a server's check of a final descriptor against the
// registrations it receipted (§3 v3): for each primary, those left out
// are allowed only if the descriptor is full and keeps the primary's
// quota, the first of its signed order (CheckPrimaryKept). orders are the
// leader's list's signed orders.
func CheckReceipted(clients []wire.ClientEntry, fwd map[[32]byte]wire.Forwarded, orders []wire.Order, n uint32, m int) error {
	per := make([]map[[32]byte]wire.Register, m)
	for k, f := range fwd {
		p := int(f.Primary)
		if p >= m {
			continue
		}
		if per[p] == nil {
			per[p] = map[[32]byte]wire.Register{}
		}
		per[p][k] = f.Reg
	}
	for p := range per {
		if per[p] == nil {
			continue
		}
		var order [][32]byte
		if p < len(orders) {
			order = orders[p].Keys
		}
		if err := CheckPrimaryKept(clients, per[p], order, n, m); err != nil {
			return fmt.Errorf("node: a registration of primary %d receipted here is left out: %w", p, err)
		}
	}
	return nil
}

// Duplicate-share aborts (§4.1).

// TagDupAbort signs a duplicate-share abort (wire.DupAbort).
const TagDupAbort = "riffle/v3/dup-abort"

// DupDigest is what a server signs for a duplicate-share abort.
func DupDigest(a *wire.DupAbort) [32]byte {
	var b [16]byte
	b[0], b[1] = byte(a.S>>8), byte(a.S)
	b[2], b[3] = byte(a.Comp>>8), byte(a.Comp)
	b[4], b[5], b[6], b[7] = byte(a.SlotA>>24), byte(a.SlotA>>16), byte(a.SlotA>>8), byte(a.SlotA)
	b[8], b[9], b[10], b[11] = byte(a.SlotB>>24), byte(a.SlotB>>16), byte(a.SlotB>>8), byte(a.SlotB)
	return TaggedHash(TagDupAbort, a.Epoch[:], b[:4], a.Value[:], b[4:12])
}
