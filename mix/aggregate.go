package mix

import (
	"fmt"

	"github.com/riffle-net/riffle/internal/group"
)

// CheckAggregateKeys checks that no aggregate key A_{s,j} = X_s + … + X_j
// (s ≤ j) of the chain is the identity (§4.1 v3), as every single key
// is checked: two colluding servers with keys X and −X (each with a valid
// proof of knowledge) would otherwise make every component under their
// sum plaintext. A_{s,j} = S_j − S_{s−1} for the prefix sums S (S_{−1} the
// identity), so it is the identity exactly when two prefix sums are equal:
// one pass over m sums.
func CheckAggregateKeys(serverKeys []*group.Element) error {
	seen := make(map[[group.ElementSize]byte]int, len(serverKeys)+1)
	acc := group.NewElement()
	seen[[group.ElementSize]byte(acc.Bytes())] = -1
	for j, X := range serverKeys {
		if X == nil {
			return fmt.Errorf("aggregate keys: server %d key missing", j)
		}
		acc.Add(acc, X)
		k := [group.ElementSize]byte(acc.Bytes())
		if s, ok := seen[k]; ok {
			return fmt.Errorf("aggregate keys: A_{%d,%d}: %w", s+1, j, group.ErrIdentity)
		}
		seen[k] = j
	}
	return nil
}
