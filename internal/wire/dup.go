package wire

// Messages of a duplicate U or P at setup (docs/protocol.md §4.1 v3, §8):
// the servers' signed abort naming the two slots, and each client's proof
// that it knows the discrete log of the repeated value.

const (
	// TypeDupAbort: chain server → chain servers (its own signature
	// only), and primary → client (every signature), the abort of a
	// duplicate share.
	TypeDupAbort Type = 80
	// TypeDupQuery: client → primary, an EpochRef: wait for the
	// duplicate-share abort of that epoch.
	TypeDupQuery Type = 81
	// TypeDupProof: client → primary, and primary → chain servers, a
	// proof of knowledge of the repeated value's discrete log.
	TypeDupProof Type = 82
)

// DupProofSize is the size of a share proof: ENC(R) 32 || SC(s) 32.
const DupProofSize = 64

// DupAbort says that the value Value of component Comp (U_{·,Comp} for
// Comp < m, the pseudonym for Comp = m) repeats in server S's proven list,
// and that the walk back of its two positions reached slots SlotA (the
// earlier position) and SlotB. Sigs holds one signature per chain server
// in chain order (all zero where not yet seen), each over
// SHA-256("riffle/v3/dup-abort", epoch id, u16 S, u16 Comp, value,
// u32 SlotA, u32 SlotB).
type DupAbort struct {
	Epoch        [32]byte
	S, Comp      uint16
	Value        [32]byte
	SlotA, SlotB uint32
	Sigs         [][64]byte
}

// DupAbortSize is the encoded size of a DupAbort with m signatures.
func DupAbortSize(m int) int { return 32 + 2 + 2 + 32 + 4 + 4 + 4 + 64*m }

func (m *DupAbort) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U16(m.S)
	e.U16(m.Comp)
	e.Fixed(m.Value[:])
	e.U32(m.SlotA)
	e.U32(m.SlotB)
	encSigs(&e, m.Sigs)
	return e.B
}

func (m *DupAbort) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.S = d.U16("server")
	m.Comp = d.U16("component")
	m.Value = d.Array32("value")
	m.SlotA = d.U32("slot a")
	m.SlotB = d.U32("slot b")
	m.Sigs = decSigs(&d, MaxServers)
	return d.Done("duplicate abort")
}

// DupProof is a client's proof for its slot in a duplicate-share abort.
type DupProof struct {
	Epoch [32]byte
	Slot  uint32
	Proof [DupProofSize]byte
}

func (m *DupProof) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Slot)
	e.Fixed(m.Proof[:])
	return e.B
}

func (m *DupProof) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Slot = d.U32("slot")
	m.Proof = d.Array64("share proof")
	return d.Done("duplicate proof")
}
