package wire

import "fmt"

// Round blame (docs/protocol.md §8): an accusation of a MAC failure and the
// steps of the walk back along one position of one round.

// Message types of round blame.
const (
	TypeAccuse    Type = 70 // accuser → every chain server: a MAC failure with its revealed MAC share
	TypeBlameReq  Type = 71 // a server asks server t for its walk step at one output position
	TypeBlameStep Type = 72 // server t's signed walk step
)

// Sizes of round-blame fields.
const (
	// MaxMerklePath bounds a Merkle path: 32 levels hold 2^32 entries.
	MaxMerklePath = 32
)

// Evidence is one entry of a signed batch, provable alone: the entry, its
// Merkle path to the batch root and the sender's signature over the root
// (§5.2). At S_0's input it is a client's submission instead: the onion and
// the client's signature over (epoch id, round, slot, SHA-256 of the onion),
// with no path and a zero root.
type Evidence struct {
	Entry []byte
	Path  [][32]byte
	Root  [32]byte
	Sig   [64]byte
}

func (v *Evidence) enc(e *Enc) {
	e.Bytes(v.Entry)
	e.U8(uint8(len(v.Path)))
	for _, h := range v.Path {
		e.Fixed(h[:])
	}
	e.Fixed(v.Root[:])
	e.Fixed(v.Sig[:])
}

func (v *Evidence) dec(d *Dec, maxEntry int) {
	v.Entry = d.Bytes(maxEntry, "evidence entry")
	n := int(d.U8("merkle path length"))
	if d.Err == nil && n > MaxMerklePath {
		d.Err = fmt.Errorf("%w: merkle path of %d nodes > cap %d", ErrTooLarge, n, MaxMerklePath)
		return
	}
	v.Path = make([][32]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		v.Path = append(v.Path, d.Array32("merkle path node"))
	}
	v.Root = d.Array32("batch root")
	v.Sig = d.Array64("evidence signature")
}

// Accuse is server S's accusation of a MAC failure at its input position
// Pos in one round (§8): its MAC share Z' = y'_{S,r}·U_{Pos,S} with the DLEQ
// proof, and the entry at Pos as its predecessor signed it. Sig is S's
// signature over SHA-256("riffle/v2/accuse", the encoding before Sig).
type Accuse struct {
	Epoch   [32]byte
	Round   uint32
	S       uint16
	Pos     uint32
	Zp      [32]byte
	ZpProof [64]byte
	In      Evidence
	Sig     [64]byte
}

// Marshal encodes the accusation; the last 64 bytes are Sig.
func (m *Accuse) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	e.U32(m.Pos)
	e.Fixed(m.Zp[:])
	e.Fixed(m.ZpProof[:])
	m.In.enc(&e)
	e.Fixed(m.Sig[:])
	return e.B
}

// Unmarshal decodes an accusation whose entry is at most maxEntry bytes.
func (m *Accuse) Unmarshal(b []byte, maxEntry int) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	m.Pos = d.U32("position")
	m.Zp = d.Array32("mac share")
	m.ZpProof = d.Array64("mac share proof")
	m.In.dec(&d, maxEntry)
	m.Sig = d.Array64("signature")
	return d.Done("accuse")
}

// BlameReq asks server T for its walk step at output position Out of the
// round under blame.
type BlameReq struct {
	Epoch [32]byte
	Round uint32
	T     uint16
	Out   uint32
}

func (m *BlameReq) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.T)
	e.U32(m.Out)
	return e.B
}

func (m *BlameReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.T = d.U16("server")
	m.Out = d.U32("output position")
	return d.Done("blame request")
}

// BlameStep is server T's step of the walk (§8 steps 1–2): the input
// position In that became its output position Out, the route proof against
// its setup shuffle, both shares Z = y_{T,r}·U_{In,T} and
// Z' = y'_{T,r}·U_{In,T} with their DLEQ proofs, and its input entry at In as
// evidence. Sig is T's signature over SHA-256("riffle/v2/blame-step", the
// encoding before Sig).
type BlameStep struct {
	Epoch   [32]byte
	Round   uint32
	T       uint16
	Out     uint32
	In      uint32
	Route   []byte
	Z       [32]byte
	ZProof  [64]byte
	Zp      [32]byte
	ZpProof [64]byte
	Input   Evidence
	Sig     [64]byte
}

// Marshal encodes the step; the last 64 bytes are Sig.
func (m *BlameStep) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.T)
	e.U32(m.Out)
	e.U32(m.In)
	e.Bytes(m.Route)
	e.Fixed(m.Z[:])
	e.Fixed(m.ZProof[:])
	e.Fixed(m.Zp[:])
	e.Fixed(m.ZpProof[:])
	m.Input.enc(&e)
	e.Fixed(m.Sig[:])
	return e.B
}

// Unmarshal decodes a step whose entry is at most maxEntry bytes.
func (m *BlameStep) Unmarshal(b []byte, maxEntry int) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.T = d.U16("server")
	m.Out = d.U32("output position")
	m.In = d.U32("input position")
	m.Route = d.Bytes(MaxRouteProof, "route proof")
	m.Z = d.Array32("enc share")
	m.ZProof = d.Array64("enc share proof")
	m.Zp = d.Array32("mac share")
	m.ZpProof = d.Array64("mac share proof")
	m.Input.dec(&d, maxEntry)
	m.Sig = d.Array64("signature")
	return d.Done("blame step")
}

// TypeEquivocation carries two roots one server signed for one batch.
const TypeEquivocation Type = 73

// Equivocation is the evidence that a server signed two different roots
// for one (epoch, round, S) (§5.2): both signed roots, as Root encodes them.
type Equivocation struct {
	A, B Root
}

// Marshal encodes the two roots, each at its fixed size.
func (m *Equivocation) Marshal() []byte {
	return append(m.A.Marshal(), m.B.Marshal()...)
}

// Unmarshal decodes two roots.
func (m *Equivocation) Unmarshal(b []byte) error {
	if len(b) != 2*rootSize {
		return fmt.Errorf("wire: decode equivocation: %d bytes, want %d", len(b), 2*rootSize)
	}
	if err := m.A.Unmarshal(b[:rootSize]); err != nil {
		return err
	}
	return m.B.Unmarshal(b[rootSize:])
}

// TypeBadBatch carries a signed batch whose entries match its signed root
// but whose shape is wrong (a missing entry, or one of the wrong size): the
// body is the Batch as its sender sent it.
const TypeBadBatch Type = 75

// TypeDoubleSubmit carries two onions' signatures by one client for one slot.
const TypeDoubleSubmit Type = 74

// DoubleSubmit is the evidence that a client signed two different onions
// for one (epoch, round, slot) (§5.1): the SHA-256 of each onion and the
// client's submission signature over it.
type DoubleSubmit struct {
	Epoch [32]byte
	Round uint32
	Slot  uint32
	HashA [32]byte
	SigA  [64]byte
	HashB [32]byte
	SigB  [64]byte
}

// doubleSubmitSize is the fixed size of a DoubleSubmit.
const doubleSubmitSize = 32 + 4 + 4 + 2*(32+64)

func (m *DoubleSubmit) Marshal() []byte {
	e := Enc{B: make([]byte, 0, doubleSubmitSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(m.Slot)
	e.Fixed(m.HashA[:])
	e.Fixed(m.SigA[:])
	e.Fixed(m.HashB[:])
	e.Fixed(m.SigB[:])
	return e.B
}

func (m *DoubleSubmit) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Slot = d.U32("slot")
	m.HashA = d.Array32("onion hash")
	m.SigA = d.Array64("signature")
	m.HashB = d.Array32("onion hash")
	m.SigB = d.Array64("signature")
	return d.Done("double submit")
}
