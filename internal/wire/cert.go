package wire

import (
	"bytes"
	"fmt"
)

// Certified epoch numbers (docs/protocol.md §3, "A leader with bounded
// power"; docs/proto-node.md "Certified epoch numbers"). Every setup
// attempt of a number ends in a certificate signed by servers: the final
// descriptor's signatures, an abort certificate (the open descriptor's
// signatures with one chain server's signed Abort) or a timeout
// certificate. The descriptor of number N carries the certificate of N−1.

// Certificate kinds.
const (
	// CertNone: no certificate, the previous of epoch number 1 only. Every
	// other field is zero or empty.
	CertNone uint8 = 0
	// CertFinal: every chain server signed the final descriptor of the
	// number (Digest is the SHA-256 of its encoding).
	CertFinal uint8 = 1
	// CertAbort: every chain server signed the open descriptor of the
	// number, and one of them signed an Abort of it (Abort).
	CertAbort uint8 = 2
	// CertTimeout: servers of the group chain Chain each signed that no
	// open descriptor of the number came within T_lead.
	CertTimeout uint8 = 3
)

const (
	// TypeTimeoutVote: server → the servers of its group chain, its own
	// signed timeout of a number (a CertTimeout with one signature).
	TypeTimeoutVote Type = 21
	// TypeCertReq: server → roster server, the certificates from a number.
	TypeCertReq Type = 22
	// TypeCerts: the reply to TypeCertReq, one page of certificates.
	TypeCerts Type = 23
	// TypeWouldServe: server → a server of the previous certificate that a
	// Prepare left out, that Prepare with the asked server added to its
	// chain (a Prepare encoding, Previous empty). The answer is an ack when
	// the asked server would serve in that chain, else its withdrawal.
	TypeWouldServe Type = 24
	// TypeCertPush: server → the servers of its group, a certificate that
	// replaced the one of its number there or that outranks one a peer
	// showed (Outranks in node/internal/certs), so that every server keeps
	// the same certificate of every number.
	TypeCertPush Type = 25
)

// Fixed sizes of a certificate.
const (
	// MaxCertPage is the most certificates a page (Certs) holds.
	MaxCertPage = 32
	// certSigSize is one signature of a certificate: u16 chain position,
	// 64-byte Ed25519 signature.
	certSigSize = 2 + SigSize
	// maxAbortSize is the longest Abort encoding: epoch id, u64 number,
	// u32 round, u8 kind, signer (u32 length, at most MaxPeerID), reason
	// (u32 length, at most MaxReason), signature.
	maxAbortSize = IDSize + 8 + 4 + 1 + 4 + MaxPeerID + 4 + MaxReason + SigSize
	// MaxCands bounds the candidacies a number's Prepare, descriptor
	// and certificate record (docs/protocol.md §3, "Who may serve"):
	// m_max of them.
	MaxCands = 8
	// certMin is the shortest certificate: kind, number, epoch id,
	// digest and four empty lists.
	certMin = 1 + 8 + IDSize + IDSize + 4 + 4 + 4 + 4
	// MaxCertSize is the longest certificate: certMin, MaxServers peer
	// ids and as many signatures, an abort and MaxCands candidates.
	MaxCertSize = certMin + MaxServers*(4+MaxPeerID) + MaxServers*certSigSize + maxAbortSize + MaxCands*(4+MaxPeerID)
)

// CertSig is one server's signature in a certificate, by chain position.
type CertSig struct {
	Index uint16
	Sig   [64]byte
}

// Cert is a certificate of one epoch number:
//
//	u8 kind ‖ u64 number ‖ epoch id[32] ‖ digest[32]
//	‖ u32 n ‖ n × (u32 len ‖ peer id)        chain, sorted, n ≤ MaxServers
//	‖ u32 s ‖ s × (u16 position ‖ sig[64])   positions ascending, < n
//	‖ u32 len ‖ abort                        an Abort encoding, CertAbort only
//	‖ u32 c ‖ c × (u32 len ‖ peer id)        candidates, sorted, c ≤ MaxCands,
//	                                         final and abort only
type Cert struct {
	Kind   uint8
	Number uint64
	Epoch  [32]byte // the epoch id (final, abort); zero for a timeout
	Digest [32]byte // final: SHA-256 of the final descriptor; else zero
	Chain  [][]byte // peer ids in chain order
	Sigs   []CertSig
	Abort  []byte // CertAbort: the signed Abort; else empty
	// Cands are the candidates the number's Prepare recorded (final and
	// abort; in their signed digests): a server's probation counts from
	// the first certificate that names it (§3, "Who may serve").
	Cands [][]byte
}

func (m *Cert) enc(e *Enc) {
	e.U8(m.Kind)
	e.U64(m.Number)
	e.Fixed(m.Epoch[:])
	e.Fixed(m.Digest[:])
	encAddrs2(e, m.Chain)
	e.U32(uint32(len(m.Sigs)))
	for _, s := range m.Sigs {
		e.U16(s.Index)
		e.Fixed(s.Sig[:])
	}
	e.Bytes(m.Abort)
	encAddrs2(e, m.Cands)
}

func (m *Cert) dec(d *Dec) {
	m.Kind = d.U8("certificate kind")
	m.Number = d.U64("certificate number")
	m.Epoch = d.Array32("certificate epoch id")
	m.Digest = d.Array32("certificate digest")
	n := d.Count(MaxServers, 4, "certificate chain")
	m.Chain = make([][]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Chain = append(m.Chain, d.Bytes(MaxPeerID, "certificate peer id"))
	}
	s := d.Count(MaxServers, certSigSize, "certificate signatures")
	m.Sigs = make([]CertSig, s)
	for i := range m.Sigs {
		m.Sigs[i].Index = d.U16("certificate signature position")
		m.Sigs[i].Sig = d.Array64("certificate signature")
	}
	m.Abort = d.Bytes(maxAbortSize, "certificate abort")
	m.Cands = DecCands(d)
	if d.Err == nil {
		d.Err = m.check()
	}
}

// check is the structure every certificate has, whatever its signatures:
// a known kind, a sorted chain without repeats, signature positions
// ascending within it, an abort exactly for CertAbort, and nothing at all
// for CertNone.
func (m *Cert) check() error {
	switch m.Kind {
	case CertNone:
		if m.Number != 0 || m.Epoch != ([32]byte{}) || m.Digest != ([32]byte{}) || len(m.Chain) != 0 || len(m.Sigs) != 0 || len(m.Abort) != 0 || len(m.Cands) != 0 {
			return fmt.Errorf("an empty certificate with fields")
		}
		return nil
	case CertFinal, CertAbort, CertTimeout:
	default:
		return fmt.Errorf("unknown certificate kind %d", m.Kind)
	}
	if m.Number == 0 || len(m.Chain) == 0 {
		return fmt.Errorf("certificate of number %d with %d servers", m.Number, len(m.Chain))
	}
	for i := 1; i < len(m.Chain); i++ {
		if bytes.Compare(m.Chain[i-1], m.Chain[i]) >= 0 {
			return fmt.Errorf("certificate chain not sorted at %d", i)
		}
	}
	for i, s := range m.Sigs {
		if int(s.Index) >= len(m.Chain) || (i > 0 && s.Index <= m.Sigs[i-1].Index) {
			return fmt.Errorf("certificate signature position %d out of order", s.Index)
		}
	}
	if (m.Kind == CertAbort) != (len(m.Abort) > 0) {
		return fmt.Errorf("certificate of kind %d with %d abort bytes", m.Kind, len(m.Abort))
	}
	if m.Kind != CertFinal && m.Digest != ([32]byte{}) {
		return fmt.Errorf("certificate of kind %d with a digest", m.Kind)
	}
	if m.Kind == CertTimeout && m.Epoch != ([32]byte{}) {
		return fmt.Errorf("timeout certificate with an epoch id")
	}
	if m.Kind == CertTimeout && len(m.Cands) != 0 {
		return fmt.Errorf("timeout certificate with candidates")
	}
	return nil
}

// DecCands decodes a list of candidates: at most MaxCands peer ids,
// strictly ascending, so that one list has one encoding.
func DecCands(d *Dec) [][]byte {
	n := d.Count(MaxCands, 4, "candidates")
	out := make([][]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		out = append(out, d.Bytes(MaxPeerID, "candidate"))
	}
	for i := 1; i < len(out) && d.Err == nil; i++ {
		if bytes.Compare(out[i-1], out[i]) >= 0 {
			d.Err = fmt.Errorf("wire: candidates not sorted at %d", i)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (m *Cert) Marshal() []byte {
	var e Enc
	m.enc(&e)
	return e.B
}

func (m *Cert) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	return d.Done("certificate")
}

// MaxGapCerts bounds a Prepare's and a descriptor's Gap: the certificates
// that carry the decoy window's walk past a timeout (§6.3 v3), at most
// one a number of the window's look-back.
const MaxGapCerts = 16

// MaxPrepare bounds a Prepare's encoding (and a WouldServe's): 64 KiB for
// everything but the Gap (at most about 23 KB of it), and a full Gap.
const MaxPrepare = 64<<10 + 4 + MaxGapCerts*MaxCertSize

// encGap and decGap encode a Gap: u32 n ‖ n × Cert, n ≤ MaxGapCerts.
func encGap(e *Enc, l []Cert) {
	e.U32(uint32(len(l)))
	for i := range l {
		l[i].enc(e)
	}
}

func decGap(d *Dec) []Cert {
	n := d.Count(MaxGapCerts, certMin, "gap certificates")
	out := make([]Cert, n)
	for i := 0; i < n && d.Err == nil; i++ {
		out[i].dec(d)
	}
	return out
}

// CertReq asks a roster server for its certificates of the numbers from
// From on, oldest first (body: u64 from).
type CertReq struct{ From uint64 }

func (m *CertReq) Marshal() []byte {
	var e Enc
	e.U64(m.From)
	return e.B
}

func (m *CertReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.From = d.U64("from")
	return d.Done("certificate request")
}

// Certs is a page of certificates, ascending numbers (body: u32 count, at
// most MaxCertPage, then each certificate).
type Certs struct{ Certs []Cert }

// MaxCertsSize bounds a page's encoding.
const MaxCertsSize = 4 + MaxCertPage*MaxCertSize

func (m *Certs) Marshal() []byte {
	var e Enc
	e.U32(uint32(len(m.Certs)))
	for i := range m.Certs {
		m.Certs[i].enc(&e)
	}
	return e.B
}

func (m *Certs) Unmarshal(b []byte) error {
	d := Dec{B: b}
	n := d.Count(MaxCertPage, certMin, "certificates")
	m.Certs = make([]Cert, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Certs[i].dec(&d)
		if d.Err == nil && i > 0 && m.Certs[i].Number <= m.Certs[i-1].Number {
			d.Err = fmt.Errorf("certificate numbers not ascending at %d", i)
		}
	}
	return d.Done("certificates")
}
