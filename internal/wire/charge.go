package wire

import "fmt"

// The evidence of the control-plane log (docs/protocol.md §3, "Charges
// from evidence"): the signed objects that charge a refusal budget, each
// with the absence attestations of the chain's servers, so that every
// server computes the same charge from the same bytes.

const (
	// TypeAttestReq: a chain server → another server of the chain, an
	// AttestReq; the reply is that server's signed Attest (TypeAttest),
	// or an error while the absence is not yet due there.
	TypeAttestReq Type = 105
	// TypeAttest is the reply to an AttestReq.
	TypeAttest Type = 106
	// TypeCharge: any server → the servers of an epoch's chain (and a
	// leader → its chain, for a budget), an Charge; acknowledged.
	TypeCharge Type = 107
)

// Charge kinds.
const (
	// EvAbort: Item is a signed Abort.
	EvAbort uint8 = 0
	// EvVoid: Item is a void RoundList signed by every chain server.
	EvVoid uint8 = 1
	// EvEquiv: Item is one server's final signature of a number and its
	// timeout signature of that number: two Certs (u32 length each), the
	// final one and the timeout one, each with that server's signature
	// alone.
	EvEquiv uint8 = 2
	// EvHeld: Item is a primary's receipt of an onion and its dry
	// statement of the same slot and round (HeldItem), which an honest
	// primary never both signs (§5.4).
	EvHeld uint8 = 3
	// EvSilent: Item is a primary's OnionReceipt, with the chain's
	// attestations of kind AttestSilent of its round: charged to the
	// primary when more than half of the chain's other servers attest
	// that it gave them no account covering it (§5.4).
	EvSilent uint8 = 4
	// EvForward: Item is a primary's OnionReceipt and its ForwardRoot of
	// the same round without the receipt's onion (ForwardItem), which an
	// honest primary never both signs (§5.4).
	EvForward uint8 = 5
	// EvAccount: Item is a primary's OnionReceipt and its final Account
	// (Ended) of the same round without the receipt's onion
	// (AccountItem), which an honest primary never both signs (§5.4).
	EvAccount uint8 = 6
)

// ClaimLack is the kind of an Attest that is a lack claim (TypeLack): its
// signer, at chain position S, lacks its input batch of Round (Lacking =
// 1 << (S−1)). In a void's evidence it names the claimant, which pays for
// a void whose absence no majority backs (§3: a claim the majority does
// not back is its signer's).
const ClaimLack uint8 = 4

// AttestSilent is the kind of an Attest that a primary gave no account:
// bit j of Lacking set, the primary at chain position j gave its signer
// no Account of round Round, or none covering a receipt of it held there,
// while the signer asked for one over a round limit (§5.4, "A silent
// primary").
const AttestSilent uint8 = 8

// AttestReqSize is an AttestReq's fixed size.
const AttestReqSize = 32 + 8 + 1 + 4

// AttestSize is an Attest's fixed size.
const AttestSize = AttestReqSize + 8 + 2 + SigSize

// maxChargeItem bounds an Charge's item of any kind: an EvForward's or
// EvAccount's receipt and forward root or final account of up to 4096
// slots (the client cap).
const maxChargeItem = 160 << 10

// Each kind's item is capped at its own largest encoding (ChargeItemMax),
// so that the forward root's room is not every kind's.
const (
	// voidItemMax is a void RoundList: epoch id, round, three empty
	// lists, flags, no pairs (a void has no entries to pair) and a
	// signature of each chain server.
	voidItemMax = IDSize + 4 + 4 + 4 + 4 + 1 + 4 + 4 + MaxServers*SigSize
	// equivCertMax is a final or timeout certificate with one signature,
	// no abort and no candidates (the final one adds its candidates).
	equivCertMax = certMin + MaxServers*(4+MaxPeerID) + certSigSize
)

// ChargeItemMax is the largest item of a Charge of kind k (0: no such
// kind).
func ChargeItemMax(k uint8) int {
	switch k {
	case EvAbort:
		return maxAbortSize
	case EvVoid:
		return voidItemMax
	case EvEquiv:
		return 2*(4+equivCertMax) + MaxCands*(4+MaxPeerID)
	case EvHeld:
		return OnionReceiptSize + DrySize
	case EvSilent:
		return OnionReceiptSize
	case EvForward, EvAccount:
		return maxChargeItem
	}
	return 0
}

// maxAttests bounds a Charge's attestations: two a chain server (a
// second, different one shows its signer equivocated) and its lack claim.
const maxAttests = 3 * MaxServers

// MaxChargeSize bounds an encoded Charge.
const MaxChargeSize = 1 + 8 + 4 + maxChargeItem + 4 + maxAttests*AttestSize

// AttestReq asks a chain server what it lacks: of round Round's outputs
// (Kind AbortNoPub), the leader's close (Kind AbortNoClose), the server
// at chain position Round, down (Kind AbortDown), or round Round's final
// request list (Kind AbortNoList: bit 0, no list proposed there by its
// ListGone; a note that charges nobody), or the primaries' accounts of
// round Round (Kind AttestSilent).
type AttestReq struct {
	Epoch  [32]byte
	Number uint64
	Kind   uint8
	Round  uint32
}

func (m *AttestReq) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U64(m.Number)
	e.U8(m.Kind)
	e.U32(m.Round)
}

func (m *AttestReq) dec(d *Dec) {
	m.Epoch = d.Array32("epoch id")
	m.Number = d.U64("number")
	m.Kind = d.U8("kind")
	m.Round = d.U32("round")
}

func (m *AttestReq) Marshal() []byte {
	var e Enc
	m.enc(&e)
	return e.B
}

func (m *AttestReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	if err := d.Done("attestation request"); err != nil {
		return err
	}
	if m.Kind != AbortNoPub && m.Kind != AbortNoClose && m.Kind != AbortDown && m.Kind != AbortNoList && m.Kind != AttestSilent {
		return fmt.Errorf("wire: decode attestation request: kind %d", m.Kind)
	}
	return nil
}

// Attest is one chain server's signed statement of what it lacked when
// its own deadline had passed: bit j of Lacking set, "none from the
// server at chain position j" (its batch root of the round, or for the
// last server the publication; for AbortNoClose, the leader's close; for
// AbortNoList, bit 0: no final list of the round, published there, nor
// a proposal of it from S_0, by ListGone; it charges nobody; for
// AttestSilent, the primaries that gave no account of the round).
// Signed over SHA-256("riffle/v3/attest", the encoding before Sig).
type Attest struct {
	AttestReq
	Lacking uint64
	Signer  uint16 // the signer's chain position
	Sig     [64]byte
}

// MarshalBody is the signed part.
func (m *Attest) MarshalBody() []byte {
	var e Enc
	m.enc(&e)
	e.U64(m.Lacking)
	e.U16(m.Signer)
	return e.B
}

func (m *Attest) Marshal() []byte { return append(m.MarshalBody(), m.Sig[:]...) }

func (m *Attest) dec(d *Dec) {
	m.AttestReq.dec(d)
	m.Lacking = d.U64("lacking")
	m.Signer = d.U16("signer")
	m.Sig = d.Array64("signature")
}

func (m *Attest) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	return d.Done("attestation")
}

// Charge is one entry of the log's evidence: a signed abort or void
// list of epoch number Number, with the attestations known of it.
type Charge struct {
	Kind    uint8
	Number  uint64
	Item    []byte
	Attests []Attest
}

func (m *Charge) Marshal() []byte {
	var e Enc
	e.U8(m.Kind)
	e.U64(m.Number)
	e.Bytes(m.Item)
	e.U32(uint32(len(m.Attests)))
	for i := range m.Attests {
		e.Fixed(m.Attests[i].Marshal())
	}
	return e.B
}

func (m *Charge) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Kind = d.U8("evidence kind")
	m.Number = d.U64("evidence number")
	m.Item = d.Bytes(ChargeItemMax(m.Kind), "evidence item")
	n := d.Count(maxAttests, AttestSize, "attestations")
	m.Attests = make([]Attest, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Attests[i].dec(&d)
	}
	if err := d.Done("evidence"); err != nil {
		return err
	}
	if m.Kind > EvAccount {
		return fmt.Errorf("wire: decode evidence: kind %d", m.Kind)
	}
	return nil
}
