package wire

// The signed orders and receipts of the client selection (docs/protocol.md
// §3 v3 "Receipts and a checkable selection of clients").

const (
	// TypeReceipt: a chain server's signed receipt of a forwarded
	// registration, its answer to TypeForward.
	TypeReceipt Type = 83
	// TypeReceiptSet: client → primary, a ReceiptSet without receipts
	// (the epoch and its registration key); the primary answers with the
	// receipts it gathered for that registration.
	TypeReceiptSet Type = 84
)

// ReceiptSize is the fixed size of a Receipt.
const ReceiptSize = 32 + 2 + 32 + 32 + 64

// Receipt is server Server's signature over H("riffle/v3/receipt", epoch
// id, u16 server, registration key, registration hash): the registration
// whose key and SHA-256 of its Register encoding these are reached that
// server before its registration closed.
type Receipt struct {
	Epoch   [32]byte
	Server  uint16
	RegKey  [32]byte
	RegHash [32]byte
	Sig     [64]byte
}

func (m *Receipt) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U16(m.Server)
	e.Fixed(m.RegKey[:])
	e.Fixed(m.RegHash[:])
	e.Fixed(m.Sig[:])
}

func (m *Receipt) dec(d *Dec) {
	m.Epoch = d.Array32("epoch id")
	m.Server = d.U16("server")
	m.RegKey = d.Array32("registration key")
	m.RegHash = d.Array32("registration hash")
	m.Sig = d.Array64("receipt signature")
}

func (m *Receipt) Marshal() []byte {
	e := Enc{B: make([]byte, 0, ReceiptSize)}
	m.enc(&e)
	return e.B
}

func (m *Receipt) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	return d.Done("receipt")
}

// ReceiptSet is a registration's receipts, at most one per chain server.
type ReceiptSet struct {
	Epoch    [32]byte
	RegKey   [32]byte
	Receipts []Receipt
}

// ReceiptSetSize is the encoded size of a ReceiptSet of n receipts.
func ReceiptSetSize(n int) int { return 32 + 32 + 4 + n*ReceiptSize }

func (m *ReceiptSet) Marshal() []byte {
	e := Enc{B: make([]byte, 0, ReceiptSetSize(len(m.Receipts)))}
	e.Fixed(m.Epoch[:])
	e.Fixed(m.RegKey[:])
	e.U32(uint32(len(m.Receipts)))
	for i := range m.Receipts {
		m.Receipts[i].enc(&e)
	}
	return e.B
}

func (m *ReceiptSet) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.RegKey = d.Array32("registration key")
	n := d.Count(MaxServers, ReceiptSize, "receipts")
	m.Receipts = make([]Receipt, n)
	for i := range m.Receipts {
		m.Receipts[i].dec(&d)
	}
	return d.Done("receipt set")
}

// Order is a primary's signed order of the registrations it took: its
// chain position, their registration keys in its admission order (§3,
// returning clients first), and its signature over
// H("riffle/v3/order", epoch id, u16 primary, u32 count ‖ the keys). The
// leader fills the primary's quota from the front of it, and every server
// checks that it did, so the leader can neither reorder nor shorten it.
type Order struct {
	Epoch   [32]byte
	Primary uint16
	Keys    [][32]byte
	Sig     [64]byte
}

// orderMin is the smallest Order: an empty one.
const orderMin = 32 + 2 + 4 + 64

// OrderSize is the encoded size of an Order of n keys.
func OrderSize(n int) int { return orderMin + 32*n }

func (m *Order) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U16(m.Primary)
	e.U32(uint32(len(m.Keys)))
	for i := range m.Keys {
		e.Fixed(m.Keys[i][:])
	}
	e.Fixed(m.Sig[:])
}

func (m *Order) dec(d *Dec, maxKeys int) {
	m.Epoch = d.Array32("epoch id")
	m.Primary = d.U16("primary")
	n := d.Count(maxKeys, 32, "order keys")
	m.Keys = make([][32]byte, n)
	for i := range m.Keys {
		m.Keys[i] = d.Array32("order key")
	}
	m.Sig = d.Array64("order signature")
}

func (m *Order) Marshal() []byte {
	e := Enc{B: make([]byte, 0, OrderSize(len(m.Keys)))}
	m.enc(&e)
	return e.B
}

func (m *Order) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l.Clients)
	return d.Done("order")
}

// Signed returns the bytes a primary signs for its order (after the tag):
// u16 primary ‖ u32 count ‖ the keys; the epoch id is hashed before them.
func (m *Order) Signed() []byte {
	e := Enc{B: make([]byte, 0, 6+32*len(m.Keys))}
	e.U16(m.Primary)
	e.U32(uint32(len(m.Keys)))
	for i := range m.Keys {
		e.Fixed(m.Keys[i][:])
	}
	return e.B
}
