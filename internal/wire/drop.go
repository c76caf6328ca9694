package wire

// Dead slots (docs/protocol.md §8 "A dead slot"): once a round blame named
// a client, the route of its slot through the chain is revealed forward,
// one signed step per server, so that every server skips it for the rest
// of the epoch.

// Message types of the forward route reveal.
const (
	// TypeDropReq: a chain server asks server T for its drop step at
	// input position In (the named slot's route at T's input).
	TypeDropReq Type = 78
	// TypeDropStep: server T's signed drop step.
	TypeDropStep Type = 79
)

// Sizes of the drop messages (both fixed).
const (
	DropReqSize   = 32 + 4 + 2 + 4
	DropRouteSize = 64 // a Chaum–Pedersen proof (mix.DLEQProofSize)
	DropStepSize  = 32 + 4 + 2 + 4 + 4 + DropRouteSize + 64
)

// DropReq asks server T for the output position its permutation sends
// input position In to, in the epoch whose blame of round Round named the
// client of the slot the route starts at.
type DropReq struct {
	Epoch [32]byte
	Round uint32
	T     uint16
	In    uint32
}

func (m *DropReq) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.T)
	e.U32(m.In)
	return e.B
}

func (m *DropReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.T = d.U16("server")
	m.In = d.U32("input position")
	return d.Done("drop request")
}

// DropStep is server T's step of the forward reveal: input position In
// becomes output position Out at T, with the route proof against T's setup
// shuffle (mix.ProveRoute at Out, which names In). Sig is T's signature over
// SHA-256("riffle/v3/drop-step", the encoding before Sig).
type DropStep struct {
	Epoch [32]byte
	Round uint32
	T     uint16
	In    uint32
	Out   uint32
	Route [DropRouteSize]byte
	Sig   [64]byte
}

// Marshal encodes the step; the last 64 bytes are Sig.
func (m *DropStep) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.T)
	e.U32(m.In)
	e.U32(m.Out)
	e.Fixed(m.Route[:])
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *DropStep) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.T = d.U16("server")
	m.In = d.U32("input position")
	m.Out = d.U32("output position")
	copy(m.Route[:], d.Fixed(DropRouteSize, "route proof"))
	m.Sig = d.Array64("signature")
	return d.Done("drop step")
}
