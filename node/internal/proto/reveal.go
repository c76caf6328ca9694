package proto

import (
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
)

// The commit-reveal of the client selection (docs/protocol.md §3 v3).
// Each server draws a fresh r_j when it prepares an epoch attempt and puts
// its commitment H(r_j) in its group entry, which the epoch id covers;
// after the registration deadline it reveals r_j in its reply to the close,
// the final descriptor carries every reveal, and the registrations beyond
// the primaries' quotas go in order of H(epoch id ‖ β ‖ registration key),
// β = H(r_0 ‖ … ‖ r_{m−1}). A client picks its registration key after the
// epoch id is known, but before β: one honest server's r_j is enough to
// make its place a fair draw.

const (
	tagCommit = "riffle/v3/select-commit"
	tagBeta   = "riffle/v3/select-beta"
)

// Commitment is H(r_j), domain-separated.
func Commitment(r [wire.CommitSize]byte) [wire.CommitSize]byte {
	return TaggedHash(tagCommit, r[:])
}

// SelectionBeta is β = H(r_0 ‖ … ‖ r_{m−1}) over the reveals in chain
// order.
func SelectionBeta(reveals [][wire.CommitSize]byte) [32]byte {
	parts := make([][]byte, len(reveals))
	for i := range reveals {
		parts[i] = reveals[i][:]
	}
	return TaggedHash(tagBeta, parts...)
}

// CheckReveals checks a final descriptor's reveals against the
// commitments of its group: one per server, each hashing to its
// commitment. A descriptor that fails is refused: the reveals are public
// (anyone can check them against the signed commitments), and a wrong one
// is the leader's or its server's doing, but which of the two cannot be
// told from the descriptor alone, so nobody is named (§3: an abort).
func CheckReveals(d *wire.Descriptor) error {
	if len(d.Reveals) != len(d.Group) {
		return fmt.Errorf("node: final descriptor has %d reveals for %d servers", len(d.Reveals), len(d.Group))
	}
	for j := range d.Reveals {
		if Commitment(d.Reveals[j]) != d.Group[j].Commit {
			return fmt.Errorf("node: reveal of server %d does not match its commitment", j)
		}
	}
	return nil
}

// ErrRevealsInOpen refuses an open descriptor that carries reveals: r_j
// are revealed only after the registration deadline.
var ErrRevealsInOpen = errors.New("node: open descriptor carries reveals")

// RevealsOf takes the reveals from the servers' close replies (chain
// order) and checks each against its commitment in d: a server that
// revealed nothing or the wrong value makes the leader abort the epoch.
func RevealsOf(d *wire.Descriptor, out [][wire.CommitSize]byte) ([][wire.CommitSize]byte, error) {
	c := *d
	c.Reveals = out
	if err := CheckReveals(&c); err != nil {
		return nil, err
	}
	return out, nil
}
