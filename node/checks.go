package node

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// checkClientSigs checks that every input slot of the batch's round holds an
// onion its client signed (§5.1, §5.2): the signature of slot i by the
// registration key of slot i over the onion's hash, as S_0 received it.
func checkClientSigs(e *sepoch, b *wire.Batch, dead []int) error {
	c := e.final.Desc.Clients
	if len(b.ClientSigs) != len(c) || len(b.ClientHashes) != len(c) {
		return fmt.Errorf("%d client signatures and %d onion hashes for %d slots", len(b.ClientSigs), len(b.ClientHashes), len(c))
	}
	for i := range c {
		if slices.Contains(dead, i) {
			continue
		}
		if err := mix.VerifySubmissionDigest(ed25519.PublicKey(c[i].RegKey[:]), mix.EpochID(b.Epoch), uint64(b.Round), uint32(i), b.ClientHashes[i], b.ClientSigs[i][:]); err != nil {
			return fmt.Errorf("slot %d: %w", i, err)
		}
	}
	return nil
}
