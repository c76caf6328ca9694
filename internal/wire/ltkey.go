package wire

// Long-term client keys and signed forwarding (docs/protocol.md §8 "After
// a blame", §4.1; docs/proto-node.md "Long-term client keys").

const (
	// TypeForward: primary → leader, one registration it took, signed by
	// the primary (a Forwarded).
	TypeForward Type = 31
	// TypeKeyEvidence: a culprit client's primary → every chain server,
	// after a blame named the client's slot: the long-term key and its
	// signature over the slot's registration key.
	TypeKeyEvidence Type = 76
	// TypeBadForward: any chain server → the others, a Forwarded whose
	// primary signed it and whose registration does not verify: the
	// evidence that names that primary.
	TypeBadForward Type = 77
)

// LongTermSize is the fixed trailer a client adds to its registration for
// its primary: 32-byte long-term Ed25519 key ‖ 64-byte signature.
const LongTermSize = 32 + 64

// ClientRegister is what a client sends its primary (TypeRegister on the
// client protocol): its registration, then its long-term key and that
// key's signature over (epoch id, registration key). The primary keeps the
// trailer to itself; it forwards the Register alone.
type ClientRegister struct {
	Reg   Register
	LTKey [32]byte
	LTSig [64]byte
}

func (m *ClientRegister) Marshal() []byte {
	var e Enc
	m.Reg.enc(&e)
	e.Fixed(m.LTKey[:])
	e.Fixed(m.LTSig[:])
	return e.B
}

func (m *ClientRegister) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Reg.dec(&d, l)
	m.LTKey = d.Array32("long-term key")
	m.LTSig = d.Array64("long-term signature")
	return d.Done("client registration")
}

// forwardedMin is the smallest Forwarded: u16 primary ‖ an empty Register
// (32·3 + u32 length + 64) ‖ 64 signature.
const forwardedMin = 2 + 32*3 + 4 + 64 + 64

// Forwarded is a registration as a primary passes it on (to the leader,
// and in the leader's list to every server): the primary's chain position,
// the client's Register, and the primary's Ed25519 signature over
// H("riffle/v3/forward", u16 primary ‖ Register encoding). A forwarded
// registration whose proofs fail is thus evidence against its primary.
type Forwarded struct {
	Primary uint16
	Reg     Register
	Sig     [64]byte
}

func (m *Forwarded) enc(e *Enc) {
	e.U16(m.Primary)
	m.Reg.enc(e)
	e.Fixed(m.Sig[:])
}

func (m *Forwarded) dec(d *Dec, l Limits) {
	m.Primary = d.U16("primary")
	m.Reg.dec(d, l)
	m.Sig = d.Array64("primary signature")
}

func (m *Forwarded) Marshal() []byte {
	var e Enc
	m.enc(&e)
	return e.B
}

func (m *Forwarded) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l)
	return d.Done("forwarded registration")
}

// Signed returns the bytes a primary signs: u16 primary ‖ the Register.
func (m *Forwarded) Signed() []byte {
	var e Enc
	e.U16(m.Primary)
	m.Reg.enc(&e)
	return e.B
}

// keyEvidenceSize is the fixed size of a KeyEvidence.
const keyEvidenceSize = 32 + 4 + 32 + 64

// KeyEvidence is what a primary publishes once a blame named one of its
// clients' slots: the epoch, the slot, the client's long-term key and its
// signature over (epoch id, the slot's registration key). It needs no
// signature of the primary: the final descriptor gives the slot's
// registration key, so anyone checks it.
type KeyEvidence struct {
	Epoch [32]byte
	Slot  uint32
	LTKey [32]byte
	LTSig [64]byte
}

func (m *KeyEvidence) Marshal() []byte {
	e := Enc{B: make([]byte, 0, keyEvidenceSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Slot)
	e.Fixed(m.LTKey[:])
	e.Fixed(m.LTSig[:])
	return e.B
}

func (m *KeyEvidence) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Slot = d.U32("slot")
	m.LTKey = d.Array32("long-term key")
	m.LTSig = d.Array64("long-term signature")
	return d.Done("key evidence")
}
