package certs

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// rank orders the kinds of one number's certificates (Outranks): a final
// certificate over an abort certificate over a timeout one.
func rank(kind uint8) int {
	switch kind {
	case wire.CertFinal:
		return 3
	case wire.CertAbort:
		return 2
	case wire.CertTimeout:
		return 1
	}
	return 0
}

// Outranks is the one rule that decides which of two verified
// certificates of one number is the number's certificate (§3 "One
// certificate per number"): c replaces held only when its kind ranks
// higher, whatever came first, so that every honest server that holds the
// same two keeps the same one. A final certificate shows that the epoch
// ran (every chain server signed its final descriptor), an abort
// certificate that it opened (every chain server signed its open
// descriptor); a timeout only that more than half of the group saw no
// open descriptor in time, which with an opened epoch takes a server that
// signed both (equivocation, charged). Of one kind the certificate held
// stays: two of one kind carry the same epoch (two epochs opened for one
// number need a server that signed both opens), or, two timeouts, no
// epoch and nothing charged.
//
// Two timeouts over different chains name different groups for the number
// after (Group): of those the one whose chain encodes smaller wins, so
// that the one kept depends only on the certificates held, not on their
// order (TestCertOutranks).
func Outranks(c, held *wire.Cert) bool {
	if c.Number != held.Number {
		return false
	}
	if c.Kind == wire.CertTimeout && held.Kind == wire.CertTimeout {
		return bytes.Compare(ChainKey(c.Chain), ChainKey(held.Chain)) < 0
	}
	return rank(c.Kind) > rank(held.Kind)
}

// ChainKey is the encoding of a certificate's chain.
func ChainKey(chain [][]byte) []byte {
	var e wire.Enc
	for _, p := range chain {
		e.Bytes(p)
	}
	return e.B
}

// GroupOf is the group c, the certificate of n−1, certifies for n.
func GroupOf(c *wire.Cert) map[peer.ID]bool {
	g := make(map[peer.ID]bool, len(c.Chain))
	for _, b := range c.Chain {
		g[peer.ID(b)] = true
	}
	return g
}

// ErrChainMinority refuses a Prepare whose chain holds at most half of the
// group certified for its number.
const ErrChainMinority = wire.Refusal("node: prepared chain holds at most half of the previous certificate's chain")

// HoldsGroup reports whether chain holds more than half of prev's
// chain, the group certified for the number after prev's: only then does
// a certificate over chain verify (proto.VerifyCertIn). A leader proposes,
// and a server takes, no other chain: the group took number 9 over two of
// number 8's four servers and a newcomer, and the servers of 8 it had
// left out (down, partitioned) refused 9's certificate when they came
// back, so they never placed an epoch again (the swarm's seed 9;
// TestPrepareChainMinorityRefused). Number 1 (no previous certificate)
// follows the founders' rule instead.
func HoldsGroup(chain [][]byte, prev *wire.Cert) bool {
	if prev.Kind == wire.CertNone || len(prev.Chain) == 0 {
		return true
	}
	group := make(map[string]bool, len(prev.Chain))
	for _, b := range prev.Chain {
		group[string(b)] = true
	}
	in := 0
	for _, b := range chain {
		if group[string(b)] {
			in++
		}
	}
	return 2*in > len(group)
}

// InChain reports whether p is in c's chain.
func InChain(c *wire.Cert, p peer.ID) bool {
	for _, b := range c.Chain {
		if peer.ID(b) == p {
			return true
		}
	}
	return false
}

// Final is the certificate of a final descriptor whose signatures were
// verified.
func Final(sd *wire.Signed, v *proto.View) *wire.Cert {
	c := &wire.Cert{Kind: wire.CertFinal, Number: sd.Desc.Number, Epoch: v.ID, Digest: sha256.Sum256(sd.Desc.Marshal()), Chain: proto.ChainIDs(v.Chain), Cands: sd.Desc.Cands}
	for i, sg := range sd.Sigs {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
	}
	return c
}

// KindName names a certificate's kind for the log.
func KindName(k uint8) string {
	switch k {
	case wire.CertFinal:
		return "final"
	case wire.CertAbort:
		return "abort"
	case wire.CertTimeout:
		return "timeout"
	}
	return fmt.Sprint(k)
}

// Epoch numbers (docs/proto-node.md "Hostile peers and crashes"). A server
// keeps the highest epoch number it signed an open descriptor for, or saw
// certified, in its data directory, so that a restart never counts from 1
// again, and it accepts a proposed number N only in a bounded window above
// it: a leader cannot spend the number space (2^64−1 would leave no epoch
// after it). The certificate of N−1 is the first check; these bounds are
// the second.
const (
	// NumberFile holds the last epoch number in a data directory
	// (decimal, one line), written before this server signs the epoch's
	// open descriptor.
	NumberFile = "epoch-number"
	// MaxEpochGap is how far above its last number a server accepts the
	// next one: room for epochs it missed while it was down (2^20 is
	// about a year of 30-second epochs), yet 2^44 epochs before a leader
	// that always jumps the most could exhaust the numbers.
	MaxEpochGap = 1 << 20
	// MaxFirstEpoch bounds the first number a server with no epoch on
	// record accepts (a new server joining a running group; more than
	// 4,000 years of 30-second epochs).
	MaxFirstEpoch = 1 << 32
)

// CheckNumber is the rule a server applies to a proposed number n when
// its last is last (0: none on record).
func CheckNumber(last, n uint64) error {
	switch {
	case n <= last:
		return fmt.Errorf("node: epoch number %d not above %d", n, last)
	case last == 0 && n > MaxFirstEpoch:
		return fmt.Errorf("node: first epoch number %d above %d", n, uint64(MaxFirstEpoch))
	case last > 0 && n-last > MaxEpochGap:
		return fmt.Errorf("node: epoch number %d more than %d above %d", n, MaxEpochGap, last)
	}
	return nil
}

// LoadNumber reads the last epoch number of dir (0 if none).
func LoadNumber(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, NumberFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("node: read epoch number: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("node: epoch number file %s: %w", filepath.Join(dir, NumberFile), err)
	}
	return n, nil
}

// SaveNumber writes n to dir durably: a temporary file, synced, then
// renamed over the old one, so that a crash leaves the old or the new.
func SaveNumber(dir string, n uint64) error {
	return proto.WriteFileDurably(filepath.Join(dir, NumberFile), []byte(strconv.FormatUint(n, 10)+"\n"))
}
