package window

import (
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The group's decoy pool (docs/protocol.md §6.3 v3). An epoch's pool is a
// canonical sample of the distinct (position, id) pairs of its published
// lists: the MaxPoolPairs pairs of lowest key H(seed ‖ position ‖ id),
// where seed hashes the closing record's per-round states and list
// digests. The seed is fixed only once the last list is, so nobody can
// grind an id into or out of the sample, and it does not depend on the
// pool digest it helps make. Every signer of the closing record computes
// the pool from the lists it holds and signs its digest and the number of
// pairs it was drawn from (node's closing.go): a client checks a pool
// against the record alone. Draws weigh each epoch by its pairs, so the
// sample keeps the weights demand gave. The pool also names the manifest
// ids the epoch's lists named, so that the record's digest pins them for
// a client that was not in the epoch (§6.4 v3).

// Listed is what one published list gives its epoch's pool: its
// (position, id) pairs and the manifest ids it names.
type Listed struct {
	Pairs     []wire.PoolPair
	Manifests [][32]byte
}

// Held gives what round r's list of digest list holds, as this server
// holds it; false if it holds none of that digest.
type Held func(r uint32, list [32]byte) (Listed, bool)

// EpochPoolPairs returns the distinct pairs of the rounds record c states
// published, and the manifest ids they name in round order, from the
// lists held gives; ok is false if one lacks.
func EpochPoolPairs(c *wire.Closing, held Held) (out []wire.PoolPair, mans [][32]byte, ok bool) {
	seen := map[wire.PoolPair]bool{}
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue
		}
		l, ok := held(uint32(r), cr.List)
		if !ok {
			return nil, nil, false
		}
		for _, p := range l.Pairs {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		mans = append(mans, l.Manifests...)
	}
	return out, mans, true
}

// SetPool fills record c's pool fields (Pairs, Pool) from the lists held
// gives and returns the pool, with the manifest ids the lists named; ok
// is false if a published round's list lacks, or the lists name more
// manifests than a pool carries (the index takes fewer in an epoch).
// What c held in them before counts for nothing.
func SetPool(c *wire.Closing, held Held) (*wire.DecoyPool, bool) {
	pairs, mans, ok := EpochPoolPairs(c, held)
	if !ok || len(mans) > wire.MaxPoolManifests {
		return nil, false
	}
	c.Pairs, c.Pool = 0, [32]byte{}
	pool := proto.SamplePool(c, pairs)
	pool.Manifests = mans
	c.Pairs, c.Pool = pool.Total, proto.PoolDigest(pool)
	return pool, true
}
