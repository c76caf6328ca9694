package proto

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
)

// An epoch's decoy pool (§6.3 v3): a sample of its (position, id) pairs
// keyed by its closing record, the same for every client.

// The domain tags of the pool's sampling seed and of a pool.
const (
	TagPoolSeed = "riffle/v3/decoy-seed"
	TagPool     = "riffle/v3/decoy-pool"
	// WindowLookback bounds the epoch numbers a window's pins look back
	// over.
	WindowLookback = 2*DecoyEpochs + 2
	// BudgetLookback is how far the walk back from N's descriptor goes
	// for the refusal budgets a client counts (§3): the certificates of
	// N−1 down to N−BudgetLookback, every client of N alike. Two aborts
	// less than m apart, the second at least N−m, leave a server out of
	// N's chain: the first is at least N−2m+1, so 2·m_max numbers cover
	// every chain of at most m_max servers.
	BudgetLookback = 2 * MaxGroupServers
	// MaxLookbackWindow is the longest window a server gives another
	// (windowItems: an item a number, BudgetLookback of them, each at most
	// the wire's bounds of an item), the cap askWindow reads a reply
	// with rather than the table's 64 MiB.
	MaxLookbackWindow = 4 + BudgetLookback*((wire.MaxWindow-4)/wire.MaxWindowItems)
)

// PoolSeed hashes the record's rounds: the sampling keys' seed.
func PoolSeed(c *wire.Closing) [32]byte {
	b := make([]byte, 0, 33*len(c.Rounds))
	for _, r := range c.Rounds {
		b = append(b, r.State)
		b = append(b, r.List[:]...)
	}
	return TaggedHash(TagPoolSeed, c.Epoch[:], b)
}

// PoolKey is a pair's sampling key.
func PoolKey(seed [32]byte, p wire.PoolPair) [32]byte {
	var b [32 + 4 + 32]byte
	copy(b[:], seed[:])
	binary.BigEndian.PutUint32(b[32:], p.Pos)
	copy(b[36:], p.ID[:])
	return sha256.Sum256(b[:])
}

// SamplePool makes the pool of the record c's epoch from its distinct
// pairs.
func SamplePool(c *wire.Closing, pairs []wire.PoolPair) *wire.DecoyPool {
	seed := PoolSeed(c)
	type kp struct {
		k [32]byte
		p wire.PoolPair
	}
	ks := make([]kp, len(pairs))
	for i, p := range pairs {
		ks[i] = kp{PoolKey(seed, p), p}
	}
	slices.SortFunc(ks, func(a, b kp) int { return bytes.Compare(a.k[:], b.k[:]) })
	pool := &wire.DecoyPool{Version: wire.PoolV2, Epoch: c.Epoch, Total: uint32(len(pairs)), Sample: make([]wire.PoolPair, 0, min(len(ks), wire.MaxPoolPairs))}
	for _, x := range ks[:min(len(ks), wire.MaxPoolPairs)] {
		pool.Sample = append(pool.Sample, x.p)
	}
	return pool
}

func PoolDigest(p *wire.DecoyPool) [32]byte { return TaggedHash(TagPool, p.Marshal()) }

// CheckPool verifies a pool against its epoch's checked closing record.
func CheckPool(c *wire.Closing, p *wire.DecoyPool) error {
	if p.Epoch != c.Epoch || p.Total != c.Pairs || len(p.Sample) != min(int(c.Pairs), wire.MaxPoolPairs) || PoolDigest(p) != c.Pool {
		return errors.New("node: decoy pool does not match its closing record")
	}
	return nil
}

// The decoy rate and window of §6.3 v3 (decoys.go in package node/client).
const (
	// DecoyRateNum / DecoyRateDen is ρ = ½, a constant of every group:
	// the least rate at which a failed chunk's later draw hides among
	// decoys. It costs the servers up to n·k/2 more rows a round.
	DecoyRateNum, DecoyRateDen = 1, 2
	// DecoyEpochs is E_d: the epochs whose request lists make the pool.
	DecoyEpochs = 4
)
