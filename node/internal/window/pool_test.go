package window

import (
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestPoolFromLists: an epoch's pool is drawn from the distinct pairs of
// the rounds its record states published (a pair in two rounds counts
// once, a void round's list not at all), is none while a published
// round's list lacks, and does not depend on the pool fields the record
// held before. It names the manifest ids of the published rounds' lists
// in round order, a void round's none; the record's digest changes with
// them.
func TestPoolFromLists(t *testing.T) {
	pair := func(pos uint32, id byte) wire.PoolPair { return wire.PoolPair{Pos: pos, ID: [32]byte{id}} }
	lists := map[[32]byte][]wire.PoolPair{
		{1}: {pair(0, 1), pair(1, 2)},
		{2}: {pair(1, 2), pair(2, 3)},
		{3}: {pair(9, 9)},
	}
	mans := map[[32]byte][][32]byte{{1}: {{0xa1}}, {2}: {{0xa2}, {0xa3}}, {3}: {{0xa9}}}
	held := func(_ uint32, list [32]byte) (Listed, bool) {
		ps, ok := lists[list]
		return Listed{Pairs: ps, Manifests: mans[list]}, ok
	}
	c := wire.Closing{Epoch: [32]byte{7}, Rounds: []wire.ClosingRound{
		{State: wire.ClosedPublished, List: [32]byte{1}},
		{State: wire.ClosedPublished, List: [32]byte{2}},
		{State: wire.ClosedVoid, List: [32]byte{3}},
	}}
	pairs, named, ok := EpochPoolPairs(&c, held)
	if !ok || len(pairs) != 3 {
		t.Fatalf("%d pairs (%v), want the 3 distinct ones of the published rounds", len(pairs), ok)
	}
	if want := [][32]byte{{0xa1}, {0xa2}, {0xa3}}; !slices.Equal(named, want) {
		t.Fatalf("manifests %x, want %x", named, want)
	}
	a := c
	pool, ok := SetPool(&a, held)
	if !ok || a.Pairs != 3 || pool.Total != 3 || len(pool.Manifests) != 3 {
		t.Fatalf("pool of %d pairs (record %d), %d manifests, want 3 and 3", pool.Total, a.Pairs, len(pool.Manifests))
	}
	b := c
	b.Pairs, b.Pool = 99, [32]byte{5}
	if _, ok := SetPool(&b, held); !ok || b.Pool != a.Pool || b.Pairs != a.Pairs {
		t.Fatal("the pool depends on the record's pool fields before")
	}
	mans[[32]byte{2}] = [][32]byte{{0xa2}}
	if _, ok := SetPool(&b, held); !ok || b.Pool == a.Pool {
		t.Fatal("the record's pool digest does not pin the manifests named")
	}
	delete(lists, [32]byte{2})
	if _, ok := SetPool(&b, held); ok {
		t.Fatal("a pool without a published round's list")
	}
}
