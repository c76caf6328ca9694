package wire

import "fmt"

// The closing record of an epoch (docs/protocol.md §5.2 and §7 v3): at an
// epoch's end its first chain server proposes, for every round of the
// epoch, whether it was published, void or neither, with the digest of
// the round's final request list; every chain server checks it against
// the lists it signed and signs it; the record with all m signatures is
// stored and carried in the index log, so that clients get it with their
// index sync.
const (
	// TypeClosingProposal: the epoch's first chain server → every chain
	// server, a ClosingProposal to sign; the reply is a Sig.
	TypeClosingProposal Type = 90
	// TypeClosing: the first chain server → every chain server, the
	// Closing with all m signatures.
	TypeClosing Type = 91
	// TypeClosingSig: each chain server → every other chain server, its
	// signature of the proposal it signed (a ClosingSig), so that each
	// assembles the record itself, whoever S_0 hands it to.
	TypeClosingSig Type = 97
)

// Round states of a closing record.
const (
	// ClosedNone: the round gave no final list (it was never run, or
	// did not finish before the epoch ended).
	ClosedNone uint8 = 0
	// ClosedPublished: the round's final request list, signed by all m
	// servers, has the digest given.
	ClosedPublished uint8 = 1
	// ClosedVoid: the round's signed void list has the digest given.
	ClosedVoid uint8 = 2
)

// ClosingRound is one round of a closing record: its state and the digest
// of its final list (the tagged hash every server signed; zero for
// ClosedNone).
type ClosingRound struct {
	State uint8
	List  [32]byte
}

// MaxClosingRounds bounds the rounds of a closing record.
const MaxClosingRounds = 1 << 12

// MaxClosing bounds a closing record's encoding: epoch id, u32 count and
// MaxClosingRounds rounds of 33 bytes, the decoy pool's count and digest,
// u32 count and MaxServers signatures.
const MaxClosing = 32 + 4 + 33*MaxClosingRounds + 4 + 32 + 4 + 64*MaxServers

// Closing is an epoch's closing record:
//
//	epoch id 32 ‖ u32 R ‖ R × (u8 state ‖ list digest 32)
//	‖ u32 pairs ‖ pool digest 32 ‖ u32 m ‖ m × signature 64
//
// pairs counts the distinct (position, id) pairs of the published lists
// and the pool digest is that of the epoch's decoy pool (DecoyPool, §6.3
// v3), both computed by every signer from the lists it holds. The
// signatures are over the tagged hash of everything before them
// (ClosingProposal's encoding), one per chain position.
type Closing struct {
	Epoch  [32]byte
	Rounds []ClosingRound
	Pairs  uint32
	Pool   [32]byte
	Sigs   [][64]byte
}

// MarshalBody encodes everything but the signatures: the proposal.
func (m *Closing) MarshalBody() []byte {
	e := Enc{B: make([]byte, 0, 32+4+33*len(m.Rounds)+36+4+64*len(m.Sigs))}
	e.Fixed(m.Epoch[:])
	e.U32(uint32(len(m.Rounds)))
	for _, r := range m.Rounds {
		e.U8(r.State)
		e.Fixed(r.List[:])
	}
	e.U32(m.Pairs)
	e.Fixed(m.Pool[:])
	return e.B
}

func (m *Closing) Marshal() []byte {
	e := Enc{B: m.MarshalBody()}
	encSigs(&e, m.Sigs)
	return e.B
}

func (m *Closing) decBody(d *Dec, maxRounds int) {
	m.Epoch = d.Array32("epoch id")
	n := d.Count(min(maxRounds, MaxClosingRounds), 33, "closing rounds")
	m.Rounds = nil
	if n > 0 {
		m.Rounds = make([]ClosingRound, n)
	}
	for i := range m.Rounds {
		m.Rounds[i].State = d.U8("round state")
		m.Rounds[i].List = d.Array32("list digest")
		if d.Err == nil {
			switch r := m.Rounds[i]; {
			case r.State > ClosedVoid:
				d.Err = fmt.Errorf("wire: closing: round %d state %d", i, r.State)
			case r.State == ClosedNone && r.List != [32]byte{}:
				d.Err = fmt.Errorf("wire: closing: round %d has no list but a digest", i)
			}
		}
	}
	m.Pairs = d.U32("pool pairs")
	m.Pool = d.Array32("pool digest")
}

// Unmarshal decodes a closing record of at most maxRounds rounds.
func (m *Closing) Unmarshal(b []byte, maxRounds int) error {
	d := Dec{B: b}
	m.decBody(&d, maxRounds)
	m.Sigs = decSigs(&d, MaxServers)
	return d.Done("closing")
}

// ClosingSigSize is a ClosingSig's encoding.
const ClosingSigSize = 32 + 32 + 2 + 64

// ClosingSig is one chain server's signature of an epoch's closing
// record, sent to every other chain server:
//
//	epoch id 32 ‖ closing digest 32 ‖ u16 chain position ‖ signature 64
type ClosingSig struct {
	Epoch  [32]byte
	Digest [32]byte
	Index  uint16
	Sig    [64]byte
}

func (m *ClosingSig) Marshal() []byte {
	e := Enc{B: make([]byte, 0, ClosingSigSize)}
	e.Fixed(m.Epoch[:])
	e.Fixed(m.Digest[:])
	e.U16(m.Index)
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *ClosingSig) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Digest = d.Array32("closing digest")
	m.Index = d.U16("chain position")
	m.Sig = d.Array64("signature")
	return d.Done("closing signature")
}

// ClosingProposal is a closing record to sign: a Closing's encoding
// without the signatures.
type ClosingProposal struct{ Closing }

func (m *ClosingProposal) Marshal() []byte { return m.MarshalBody() }

// Unmarshal decodes a proposal of at most maxRounds rounds.
func (m *ClosingProposal) Unmarshal(b []byte, maxRounds int) error {
	d := Dec{B: b}
	m.decBody(&d, maxRounds)
	m.Sigs = nil
	return d.Done("closing proposal")
}
