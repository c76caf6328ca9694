package wire

// A round's request list signed by every chain server (docs/protocol.md
// §5.3): each signer sends its signature to every other chain server, so
// that any server holding S_0's proposal and every signature assembles
// the final list itself, whoever S_0 hands it to.
const (
	// TypeListSig: each chain server → every other chain server, its
	// signature of the proposal of a round it signed (a ListSig).
	TypeListSig Type = 99
)

// ListSigSize is a ListSig's encoding.
const ListSigSize = 32 + 4 + 32 + 2 + 64

// ListSig is one chain server's signature of S_0's proposed request list
// of a round:
//
//	epoch id 32 ‖ u32 round ‖ list digest 32 ‖ u16 chain position ‖ signature 64
//
// The digest is the tagged hash of the proposal's RoundList body, the
// one every server signs.
type ListSig struct {
	Epoch  [32]byte
	Round  uint32
	Digest [32]byte
	Index  uint16
	Sig    [64]byte
}

func (m *ListSig) Marshal() []byte {
	e := Enc{B: make([]byte, 0, ListSigSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.Fixed(m.Digest[:])
	e.U16(m.Index)
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *ListSig) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Digest = d.Array32("list digest")
	m.Index = d.U16("chain position")
	m.Sig = d.Array64("signature")
	return d.Done("list signature")
}
