package proto

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// revealDesc is a descriptor of m servers whose commitments are those of
// reveals, carrying the reveals.
func revealDesc(reveals [][wire.CommitSize]byte) *wire.Descriptor {
	d := &wire.Descriptor{Group: make([]wire.GroupEntry, len(reveals))}
	for j := range reveals {
		d.Group[j].Commit = Commitment(reveals[j])
	}
	d.Reveals = slices.Clone(reveals)
	return d
}

func randomReveals(t *testing.T, m int) [][wire.CommitSize]byte {
	out := make([][wire.CommitSize]byte, m)
	for j := range out {
		if _, err := rand.Read(out[j][:]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestWrongRevealRefused checks §3 (v3): a final descriptor whose reveal
// does not hash to its server's commitment, or that lacks one, is refused
// (CheckReveals, which every server runs before it signs the final
// descriptor and every client runs on it, checkSigned).
func TestWrongRevealRefused(t *testing.T) {
	virtual(t, func(t *testing.T) {
		reveals := randomReveals(t, 3)
		if err := CheckReveals(revealDesc(reveals)); err != nil {
			t.Fatalf("right reveals refused: %v", err)
		}
		d := revealDesc(reveals)
		d.Reveals[1][0] ^= 1
		if err := CheckReveals(d); err == nil {
			t.Fatal("a wrong reveal was accepted")
		}
		d = revealDesc(reveals)
		d.Reveals = d.Reveals[:2]
		if err := CheckReveals(d); err == nil {
			t.Fatal("a missing reveal was accepted")
		}
		// The commitment is domain-separated: the plain SHA-256 of r_j is
		// not it.
		d = revealDesc(reveals)
		d.Group[0].Commit = sha256.Sum256(reveals[0][:])
		if err := CheckReveals(d); err == nil {
			t.Fatal("an undomain-separated commitment was accepted")
		}
	})
}

// TestSelectionFollowsBeta checks §3 (v3): beyond the quotas the
// selection depends on β, and every server that recomputes it from the
// same reveals gets the same one.
func TestSelectionFollowsBeta(t *testing.T) {
	virtual(t, func(t *testing.T) {
		id := [32]byte{7}
		primaryOf := map[[32]byte]uint16{}
		var keys [][32]byte
		for i := range 200 {
			k := sha256.Sum256([]byte(fmt.Sprint("client", i)))
			primaryOf[k] = 0
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		n, m := uint32(MinClientCap), 2
		reveals := randomReveals(t, m)
		var first [][32]byte
		for srv := range m {
			// Each server recomputes β from the descriptor's reveals.
			d := revealDesc(reveals)
			if err := CheckReveals(d); err != nil {
				t.Fatal(err)
			}
			got := SelectClients(id, SelectionBeta(d.Reveals), keys, primaryOf, nil, n, m)
			if srv == 0 {
				first = got
			} else if !slices.Equal(got, first) {
				t.Fatalf("server %d computes another selection", srv)
			}
		}
		other := randomReveals(t, m)
		if slices.Equal(SelectClients(id, SelectionBeta(other), keys, primaryOf, nil, n, m), first) {
			t.Fatal("the selection does not change with β")
		}
	})
}

// TestGroundKeyNoAdvantage checks that no client grinds its place in the
// selection (§3 v3): a registration key chosen, after the epoch id is
// known, to sort first under H(epoch id ‖ key) ranks uniformly under
// H(epoch id ‖ β ‖ key) with β from the servers' reveals.
func TestGroundKeyNoAdvantage(t *testing.T) {
	virtual(t, func(t *testing.T) {
		id := [32]byte{9}
		// The Sybil grinds 4096 keys for the smallest hash it can compute
		// before the deadline: with β unknown, the best it can do is the
		// rule without β (or any β it guesses).
		old := func(k [32]byte) [32]byte { return SelectionHash(id, [32]byte{}, k) }
		var ground [32]byte
		best := [32]byte{0xff}
		for i := range 4096 {
			k := sha256.Sum256([]byte(fmt.Sprint("grind", i)))
			if h := old(k); bytes.Compare(h[:], best[:]) < 0 {
				best, ground = h, k
			}
		}
		const trials, others = 400, 15
		firsts, rankSum := 0, 0
		for trial := range trials {
			beta := SelectionBeta(randomReveals(t, 3))
			g := SelectionHash(id, beta, ground)
			rank := 0
			for i := range others {
				k := sha256.Sum256([]byte(fmt.Sprint("honest", trial, i)))
				if h := SelectionHash(id, beta, k); bytes.Compare(h[:], g[:]) < 0 {
					rank++
				}
			}
			if rank == 0 {
				firsts++
			}
			rankSum += rank
		}
		t.Logf("ground key first in %d of %d trials, mean rank %.2f of 0..%d", firsts, trials, float64(rankSum)/trials, others)
		// Uniform over 16 places: first in 1/16 of the trials (25 of 400,
		// σ ≈ 4.8) and a mean rank of 7.5 (σ of the mean ≈ 0.23).
		if firsts > 50 {
			t.Fatalf("the ground key came first in %d of %d trials, uniform is %d", firsts, trials, trials/(others+1))
		}
		if mean := float64(rankSum) / trials; mean < 6.5 || mean > 8.5 {
			t.Fatalf("the ground key's mean rank is %.2f of 0..%d, uniform is 7.5", mean, others)
		}
	})
}
