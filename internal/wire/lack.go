package wire

// Fetching a missing input batch and claiming its lack (docs/protocol.md
// §5.2 v3, "a void that names nobody does not end the epoch";
// docs/proto-node.md "Missing input batches").

const (
	// TypeGetBatch: a chain server → its predecessor, a BatchRef for the
	// signed batch it was to receive and has not; the reply is that Batch
	// (TypeBatch), or an error.
	TypeGetBatch Type = 88
	// TypeLack: a chain server → every other chain server, its signed
	// claim (an Attest of kind ClaimLack) that it still lacks its own
	// input batch after the fetch window: it passes on nothing for the
	// round, and a void of the round that no part's absence backs is
	// charged to it.
	TypeLack Type = 89
)

// BatchRefSize is a BatchRef's fixed size: 32-byte epoch id ‖ u32 round ‖
// u16 S.
const BatchRefSize = 32 + 4 + 2

// BatchRef names one batch of a round: the batch S of round Round of the
// epoch, the one server S−1 signs and passes to server S (Batch.S).
type BatchRef struct {
	Epoch [32]byte
	Round uint32
	S     uint16
}

func (m *BatchRef) Marshal() []byte {
	e := Enc{B: make([]byte, 0, BatchRefSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	return e.B
}

func (m *BatchRef) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	return d.Done("batch reference")
}
