package proto

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Certified epoch numbers (§3 (v3) "Epoch numbers and leaders";
// docs/proto-node.md "Certified epoch numbers"): the digests servers sign
// and the checks of a certificate, which a client runs too.

const (
	// TagTimeout is the domain tag of a timeout signature.
	TagTimeout = "riffle/v3/timeout"
	// TagAbort is the domain tag of an abort's signature.
	TagAbort = "riffle/v2/abort"
)

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// OpenCertDigest is what a server signs for the open descriptor of number
// n with epoch id id recording candidates cands (each a part after the
// id; none: the digest without them).
func OpenCertDigest(n uint64, id [32]byte, cands [][]byte) [32]byte {
	return TaggedHash(TagDescOpen, append([][]byte{u64(n), id[:]}, cands...)...)
}

// FinalCertDigest is what a server signs for the final descriptor of
// number n, epoch id id, whose encoding hashes to dg, recording
// candidates cands: a final certificate carries the four and is checked
// without the descriptor. The candidates are signed as parts of their
// own (the epoch id covers them too) so that every server reads them off
// the certificate (§3, "Who may serve").
func FinalCertDigest(n uint64, id, dg [32]byte, cands [][]byte) [32]byte {
	return TaggedHash(TagDescFinal, append([][]byte{u64(n), id[:], dg[:]}, cands...)...)
}

// TimeoutDigest is what a server signs when no open descriptor of n came
// within T_lead, chain being its group chain.
func TimeoutDigest(n uint64, chain [][]byte) [32]byte {
	return TaggedHash(TagTimeout, append([][]byte{u64(n)}, chain...)...)
}

// TimeoutQuorum is the signatures a timeout certificate over a chain of m
// servers needs: as many as more than half of the m−1 servers other than
// the number's leader, whose own signature counts as any other's. A
// silent leader cannot stop it (the others suffice), a late one can end
// its own number with one other server (at m = 3 the third may never
// vote: TestLateLeaderTimedOut), and one server alone can neither make it
// (it needs at least two signers from m = 3 on) nor stop it (from m = 4
// on). Every final and abort certificate needs all m signatures and the
// quorum exceeds any corrupt minority, so an honest timeout signer always
// stands between a timeout and a final certificate of one number. At
// m = 2 either server alone times the number out.
func TimeoutQuorum(m int) int { return (m-1)/2 + 1 }

// ChainIDs is chain as the bytes of its peer ids.
func ChainIDs(chain []peer.ID) [][]byte {
	out := make([][]byte, len(chain))
	for i, p := range chain {
		out[i] = []byte(p)
	}
	return out
}

// VerifyCertIn checks c against group, the group certified for its
// number (FitsGroup), then every signature, as VerifyCert.
func VerifyCertIn(c *wire.Cert, group map[peer.ID]bool) error {
	chain, err := CertChain(c)
	if err != nil {
		return err
	}
	if err := fitsGroup(c, chain, group); err != nil {
		return err
	}
	return CheckCertSigs(c, chain)
}

// FitsGroup is VerifyCertIn without the signatures: more than half of
// group in c's chain, and for a timeout, signers of group only, as many
// as more than half of group's servers other than the number's leader. A certificate whose signatures were checked is checked again so
// against a group that changed (node/internal/certs keep.go).
func FitsGroup(c *wire.Cert, group map[peer.ID]bool) error {
	chain, err := CertChain(c)
	if err != nil {
		return err
	}
	return fitsGroup(c, chain, group)
}

func fitsGroup(c *wire.Cert, chain []peer.ID, group map[peer.ID]bool) error {
	in := 0
	for _, p := range chain {
		if group[p] {
			in++
		}
	}
	if 2*in <= len(group) {
		return fmt.Errorf("node: certificate of %d: %d of the %d servers certified for it in its chain", c.Number, in, len(group))
	}
	if c.Kind == wire.CertTimeout && len(c.Chain) >= 2 {
		lead := chain[c.Number%uint64(len(chain))]
		voters := len(group)
		if group[lead] {
			voters--
		}
		n := 0
		for _, sg := range c.Sigs {
			if p := chain[sg.Index]; !group[p] {
				return fmt.Errorf("node: timeout certificate of %d signed by %s, outside the group certified for it", c.Number, p.ShortString())
			}
			n++
		}
		if 2*n <= voters {
			return fmt.Errorf("node: timeout certificate of %d has %d signatures of the group's %d voters", c.Number, n, voters)
		}
	}
	return nil
}

// VerifyCert checks a certificate against the known servers: a majority of
// its chain known here, and the signatures its kind needs (every chain
// server's for final and abort, TimeoutQuorum known servers' for a
// timeout), each by its chain position's key.
func VerifyCert(c *wire.Cert, known map[peer.ID]bool) error {
	chain, err := CertChain(c)
	if err != nil {
		return err
	}
	m := len(chain)
	nKnown := 0
	for _, p := range chain {
		if known[p] {
			nKnown++
		}
	}
	if nKnown < m/2+1 {
		return fmt.Errorf("node: certificate of %d: %d of its %d servers known here", c.Number, nKnown, m)
	}
	if c.Kind == wire.CertTimeout && m >= 2 {
		n := 0
		for _, sg := range c.Sigs {
			if p := chain[sg.Index]; !known[p] {
				return fmt.Errorf("node: timeout certificate of %d signed by %s, unknown here", c.Number, p.ShortString())
			}
			n++
		}
		if n < TimeoutQuorum(m) {
			return fmt.Errorf("node: timeout certificate of %d has %d signatures, needs %d", c.Number, n, TimeoutQuorum(m))
		}
	}
	return CheckCertSigs(c, chain)
}

// CertChain decodes c's chain after checking its encoding.
func CertChain(c *wire.Cert) ([]peer.ID, error) {
	if c.Kind == wire.CertNone {
		return nil, errors.New("node: no certificate")
	}
	// Checked on a copy: c may be a held certificate other goroutines
	// read at the same time.
	var chk wire.Cert
	if err := chk.Unmarshal(c.Marshal()); err != nil {
		return nil, fmt.Errorf("node: certificate: %w", err)
	}
	chain := make([]peer.ID, len(c.Chain))
	for i, b := range c.Chain {
		p, err := peer.IDFromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("node: certificate peer id %d: %w", i, err)
		}
		chain[i] = p
	}
	return chain, nil
}

// CheckCertSigs checks what a certificate's kind needs whoever counts:
// every chain server's signature for final and abort (with a chain
// server's signed abort), each by its chain position's key.
func CheckCertSigs(c *wire.Cert, chain []peer.ID) error {
	m := len(chain)
	var dg [32]byte
	switch c.Kind {
	case wire.CertFinal:
		dg = FinalCertDigest(c.Number, c.Epoch, c.Digest, c.Cands)
	case wire.CertAbort:
		dg = OpenCertDigest(c.Number, c.Epoch, c.Cands)
	}
	if c.Kind == wire.CertTimeout {
		if m < 2 {
			return errors.New("node: timeout certificate of one server")
		}
		dg = TimeoutDigest(c.Number, c.Chain)
	} else if len(c.Sigs) != m {
		return fmt.Errorf("node: certificate of %d has %d signatures for %d servers", c.Number, len(c.Sigs), m)
	}
	for _, sg := range c.Sigs {
		if err := VerifyPeerSig(chain[sg.Index], dg, sg.Sig); err != nil {
			return fmt.Errorf("node: certificate of %d: %w", c.Number, err)
		}
	}
	if c.Kind == wire.CertAbort {
		var a wire.Abort
		if err := a.Unmarshal(c.Abort); err != nil {
			return fmt.Errorf("node: certificate abort: %w", err)
		}
		signer := peer.ID(a.Signer)
		if a.Epoch != c.Epoch || a.Number != c.Number || !InChain(chain, signer) {
			return fmt.Errorf("node: certificate of %d holds an abort of another epoch or signer", c.Number)
		}
		if err := VerifyPeerSig(signer, AbortDigest(&a), a.Sig); err != nil {
			return fmt.Errorf("node: certificate abort: %w", err)
		}
	}
	return nil
}

// AbortDigest is what the signer of an abort signs (§3).
func AbortDigest(a *wire.Abort) [32]byte { return TaggedHash(TagAbort, a.MarshalBody()) }

// InChain reports whether p is in chain.
func InChain(chain []peer.ID, p peer.ID) bool {
	for _, q := range chain {
		if q == p {
			return true
		}
	}
	return false
}
