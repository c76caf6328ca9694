package intake

import (
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestFourRangesLeaveRoom: first-time keys from four address ranges, each
// up to its share (n_max/2), filled the 2·n_max registrations a primary
// holds before its admission order, and a returning client that came
// after them was refused at intake. First-time keys now take at most
// n_max of the held places, so that the rest stays for returning
// clients, whom the order puts first.
func TestFourRangesLeaveRoom(t *testing.T) {
	const n = 64
	var tb Table
	fresh := 0
	for r := range 4 {
		rng := fmt.Sprintf("10.0.%d.0/24", r)
		for range n / 2 {
			if tb.Room(n, rng, false) != nil {
				continue
			}
			var k [32]byte
			k[0], k[1] = byte(fresh), byte(fresh>>8)
			if err := tb.Take(wire.Register{RegKey: k}, "", [64]byte{}, LT{Key: k}, rng, false); err != nil {
				t.Fatal(err)
			}
			fresh++
		}
	}
	if err := tb.Room(n, "10.0.9.0/24", true); err != nil {
		t.Fatalf("after %d first-time keys of four ranges, a returning client is refused: %v", fresh, err)
	}
	if fresh > n {
		t.Fatalf("%d first-time keys held, want at most n_max = %d", fresh, n)
	}
}
