package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The group's decoy pool (docs/protocol.md §6.3 v3). An epoch's pool is a
// canonical sample of the distinct (position, id) pairs of its published
// lists: the MaxPoolPairs pairs of lowest key H(seed ‖ position ‖ id),
// where seed hashes the closing record's per-round states and list
// digests. The seed is fixed only once the last list is, so nobody can
// grind an id into or out of the sample, and it does not depend on the
// pool digest it helps make. Every signer of the closing record computes
// the pool from the lists it holds and signs its digest and the number of
// pairs it was drawn from (closing.go): a client checks a pool against
// the record alone. Draws weigh each epoch by its pairs, so the sample
// keeps the weights demand gave.

const (
	tagPoolSeed = "riffle/v3/decoy-seed"
	tagPool     = "riffle/v3/decoy-pool"
	// WindowLookback bounds the epoch numbers a window looks back over.
	WindowLookback = 2*DecoyEpochs + 2
)

// poolSeed hashes the record's rounds: the sampling keys' seed.
func poolSeed(c *wire.Closing) [32]byte {
	b := make([]byte, 0, 33*len(c.Rounds))
	for _, r := range c.Rounds {
		b = append(b, r.State)
		b = append(b, r.List[:]...)
	}
	return taggedHash(tagPoolSeed, c.Epoch[:], b)
}

// poolKey is a pair's sampling key.
func poolKey(seed [32]byte, p wire.PoolPair) [32]byte {
	var b [32 + 4 + 32]byte
	copy(b[:], seed[:])
	binary.BigEndian.PutUint32(b[32:], p.Pos)
	copy(b[36:], p.ID[:])
	return sha256.Sum256(b[:])
}

// samplePool makes the pool of the record c's epoch from its distinct
// pairs.
func samplePool(c *wire.Closing, pairs []wire.PoolPair) *wire.DecoyPool {
	seed := poolSeed(c)
	type kp struct {
		k [32]byte
		p wire.PoolPair
	}
	ks := make([]kp, len(pairs))
	for i, p := range pairs {
		ks[i] = kp{poolKey(seed, p), p}
	}
	slices.SortFunc(ks, func(a, b kp) int { return bytes.Compare(a.k[:], b.k[:]) })
	pool := &wire.DecoyPool{Epoch: c.Epoch, Total: uint32(len(pairs)), Sample: make([]wire.PoolPair, 0, min(len(ks), wire.MaxPoolPairs))}
	for _, x := range ks[:min(len(ks), wire.MaxPoolPairs)] {
		pool.Sample = append(pool.Sample, x.p)
	}
	return pool
}

func poolDigest(p *wire.DecoyPool) [32]byte { return taggedHash(tagPool, p.Marshal()) }

// checkPool verifies a pool against its epoch's checked closing record.
func checkPool(c *wire.Closing, p *wire.DecoyPool) error {
	if p.Epoch != c.Epoch || p.Total != c.Pairs || len(p.Sample) != min(int(c.Pairs), wire.MaxPoolPairs) || poolDigest(p) != c.Pool {
		return errors.New("node: decoy pool does not match its closing record")
	}
	return nil
}

// listPoolPairs returns a list's (position, id) pairs.
func listPoolPairs(rl *wire.RoundList) []wire.PoolPair {
	out := make([]wire.PoolPair, len(rl.Pairs))
	for i, x := range rl.Pairs {
		out[i] = wire.PoolPair{Pos: x.Pos, ID: rl.PairID(i)}
	}
	return out
}

// epochPoolPairs returns the distinct pairs of the rounds record c states
// published, from the lists this server holds or signed; ok is false if
// it lacks one. Call with s.mu held.
func epochPoolPairs(e *sepoch, c *wire.Closing) (out []wire.PoolPair, ok bool) {
	seen := map[wire.PoolPair]bool{}
	for r, cr := range c.Rounds {
		if cr.State != wire.ClosedPublished {
			continue
		}
		x := e.rounds[uint32(r)]
		var ps []wire.PoolPair
		switch {
		case x != nil && x.list != nil && listDigest(x.list) == cr.List:
			ps = listPoolPairs(x.list)
		case x != nil && x.signedState == wire.ClosedPublished && x.signed == cr.List:
			ps = x.signedPairs
		default:
			return nil, false
		}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, true
}

// setPool fills record c's pool fields from what this server holds; ok is
// false if it lacks a published round's list. Call with s.mu held.
func setPool(e *sepoch, c *wire.Closing) (*wire.DecoyPool, bool) {
	pairs, ok := epochPoolPairs(e, c)
	if !ok {
		return nil, false
	}
	c.Pairs, c.Pool = 0, [32]byte{}
	pool := samplePool(c, pairs)
	c.Pairs, c.Pool = pool.Total, poolDigest(pool)
	return pool, true
}

// groupBytes is a descriptor without its clients and reveals: all a
// client needs to link an epoch to the one before and check its record.
func groupBytes(d *wire.Descriptor) []byte {
	g := *d
	g.Clients, g.Reveals = nil, nil
	return g.Marshal()
}

// keepWindowItem keeps what a client needs of epoch e once its closing
// record c is stored here: its descriptor without clients and its pool.
func (s *Server) keepWindowItem(e *sepoch, c *wire.Closing) {
	s.mu.Lock()
	pool, ok := setPool(e, c)
	v := e.final
	s.mu.Unlock()
	if !ok {
		s.log.Warn("decoy pool: a published list is missing here")
		return
	}
	it := wire.WindowItem{Number: v.desc.Number, Epoch: v.id, Group: groupBytes(v.desc), Pool: pool.Marshal()}
	if err := s.store.PutWindowItem(v.desc.Number, v.id, (&wire.Window{Items: []wire.WindowItem{it}}).Marshal()); err != nil {
		s.log.Error("keep window item", "err", err)
	}
}

// onWindowReq answers a client's request for the window before an epoch
// number: for each number below it, back WindowLookback numbers, the
// certified epoch's descriptor without clients, closing record and pool
// as far as this server holds them. The client checks every part.
func (s *Server) onWindowReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.WindowReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.hookWindowRefuse(from) {
		return 0, nil, errors.New("node: window request refused")
	}
	// Any peer may ask, before it registers: a window costs what a few
	// index pages cost, so it takes one of the window slots
	// (maxWindowServing, one a peer), held until the reply is written.
	if err := s.enterWindow(ctx, from); err != nil {
		return 0, nil, err
	}
	var w wire.Window
	for n := q.Number - 1; n > 0 && n+WindowLookback >= q.Number; n-- {
		cert, ok := s.certOf(n)
		if !ok || (cert.Kind != wire.CertFinal && cert.Kind != wire.CertAbort) {
			continue
		}
		it := wire.WindowItem{Number: n, Epoch: cert.Epoch}
		if b, err := s.store.WindowItem(n, cert.Epoch); err == nil {
			var kept wire.Window
			if kept.Unmarshal(b) == nil && len(kept.Items) == 1 {
				it.Group, it.Pool = kept.Items[0].Group, kept.Items[0].Pool
			}
		} else if g := s.heldGroup(cert.Epoch); g != nil {
			it.Group = g
		}
		if b, err := s.store.Closing(cert.Epoch); err == nil {
			it.Closing = b
		}
		w.Items = append(w.Items, it)
	}
	s.hookWindowReply(from, &w)
	return wire.TypeWindow, w.Marshal(), nil
}

// heldGroup returns the descriptor without clients of an epoch still in
// memory here (an aborted setup, or one whose record has not come).
func (s *Server) heldGroup(id [32]byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	if e == nil || e.v == nil {
		return nil
	}
	return groupBytes(e.v.desc)
}
