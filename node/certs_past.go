package node

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The certificates past a number (§3 "One certificate per number",
// safety). A certificate of n verifies against the group certified for n,
// the chain of n−1's certificate (certGroup); so the certificates kept
// here form a chain, each fitting the one below it, and one that no
// longer fits is dropped. A certificate of N replaced by one over another
// chain (a final one over a timeout one over the whole group) certifies
// another group for N+1: the certificate of N+1 held, verified against
// the old group, is checked against the new one, and when it no longer
// fits it and every one above it go, their charges with them, and the
// sync takes the group's (TestReplacedCertDropsPast: before, a server kept
// its N+1 over the old group, and an honest server holding the new N
// certified another N+1; both kept their own for good).

// certGroupOf is the group c, the certificate of n−1, certifies for n.
func certGroupOf(c *wire.Cert) map[peer.ID]bool {
	g := make(map[peer.ID]bool, len(c.Chain))
	for _, b := range c.Chain {
		g[peer.ID(b)] = true
	}
	return g
}

// heldLocked decodes the certificate of n kept here. Call with cs.mu held.
func (cs *certState) heldLocked(n uint64) *wire.Cert {
	b := cs.certs[n]
	if b == nil {
		return nil
	}
	var c wire.Cert
	if c.Unmarshal(b) != nil {
		return nil
	}
	return &c
}

// fitsBelowLocked checks c against the group the certificate of its
// number's predecessor kept here certifies (nothing to check without
// it), under the lock that stores c: c was verified before, but the one
// below may have been replaced meanwhile (its signatures still hold; the
// group may not). Call with cs.mu held.
func (cs *certState) fitsBelowLocked(c *wire.Cert) error {
	if c.Number <= 1 {
		return nil
	}
	prev := cs.heldLocked(c.Number - 1)
	if prev == nil {
		return nil
	}
	return proto.FitsGroup(c, certGroupOf(prev))
}

// dropPastLocked drops the certificates above n, here and in dir, when the
// one of n+1 no longer fits the group n's certifies, and returns their
// numbers; top goes back to n. Every certificate above n+1 was taken
// against a group that n+1's certified: none of them is certified any
// more. Call with cs.mu held, n's certificate stored.
func (cs *certState) dropPastLocked(n uint64, dir string) []uint64 {
	next := cs.heldLocked(n + 1)
	if next == nil || cs.fitsBelowLocked(next) == nil {
		return nil
	}
	var out []uint64
	for m := range cs.certs {
		if m > n {
			out = append(out, m)
			delete(cs.certs, m)
			_ = os.Remove(filepath.Join(dir, strconv.FormatUint(m, 10)))
		}
	}
	cs.top = n
	return out
}
