package wire

// The decoy window (docs/protocol.md §6.3 v3). A client asks every server
// of its epoch's chain for the epochs before it: for each, the descriptor
// without its clients (which links it to the one before, through the
// certificate it carries), its closing record and its decoy pool. The
// client checks each against what it already holds (the link from the
// epoch after, the record's signatures, the record's pool digest), so a
// server can leave things out but cannot make anything up.

const (
	// TypeWindowReq: client → any chain server (client protocol), or a
	// server of the group → another (epoch protocol), a WindowReq; the
	// reply is a Window.
	TypeWindowReq Type = 92
	// TypeWindow: the reply to TypeWindowReq.
	TypeWindow Type = 93
)

// Bounds of the decoy window's messages.
const (
	// MaxWindowItems bounds the epochs of one Window.
	MaxWindowItems = 32
	// MaxPoolPairs bounds an epoch's decoy pool: whatever demand an epoch
	// had, a client fetches at most this many pairs for it.
	MaxPoolPairs = 4096
	// MaxPoolManifests bounds the manifest ids a DecoyPool names: above
	// what the index takes in one epoch at the smallest chunk (its byte
	// ceiling per R rounds over 1 KiB, plus one; node/internal/proto
	// checks it).
	MaxPoolManifests = 1<<16 + 1
	// MaxPool bounds a DecoyPool's encoding.
	MaxPool = 32 + 4 + 4 + 36*MaxPoolPairs + 4 + 32*MaxPoolManifests
	// MaxWindowGroup bounds a descriptor without clients in a Window.
	MaxWindowGroup = 1 << 22
	// MaxWindow bounds a Window's encoding.
	MaxWindow = 4 + MaxWindowItems*(8+32+4+MaxWindowGroup+4+MaxClosing+4+MaxPool)
)

// MaxWindowRefs bounds the window a Prepare and a descriptor pin.
const MaxWindowRefs = 8

// WindowRef pins one epoch of an epoch's decoy window in its Prepare and
// descriptor (§6.3 v3, the certified window):
//
//	u64 number ‖ epoch id 32 ‖ closing digest 32
//
// The closing digest is what the epoch's chain signed (the record without
// its signatures). Every member of the chain holds the record and its
// pool before it signs the open descriptor.
type WindowRef struct {
	Number  uint64
	Epoch   [32]byte
	Closing [32]byte
}

const windowRefSize = 8 + 32 + 32

func encWindowRefs(e *Enc, l []WindowRef) {
	e.U32(uint32(len(l)))
	for _, r := range l {
		e.U64(r.Number)
		e.Fixed(r.Epoch[:])
		e.Fixed(r.Closing[:])
	}
}

func decWindowRefs(d *Dec) []WindowRef {
	n := d.Count(MaxWindowRefs, windowRefSize, "window refs")
	out := make([]WindowRef, n)
	for i := range out {
		out[i] = WindowRef{Number: d.U64("window number"), Epoch: d.Array32("window epoch"), Closing: d.Array32("window closing digest")}
	}
	return out
}

// WindowReq asks for the epochs before the open epoch Epoch of number
// Number:
//
//	epoch id 32 ‖ u64 number
//
// Every client of the epoch sends the same request: nothing in it says
// what the client held before, which would follow the epochs it attended.
type WindowReq struct {
	Epoch  [32]byte
	Number uint64
}

func (m *WindowReq) Marshal() []byte {
	e := Enc{B: make([]byte, 0, 32+8)}
	e.Fixed(m.Epoch[:])
	e.U64(m.Number)
	return e.B
}

func (m *WindowReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Number = d.U64("number")
	return d.Done("window request")
}

// WindowItem is one epoch of a Window: its number and id, the descriptor
// of that id without clients or reveals (a Descriptor encoding; empty if
// the server lacks it), its closing record and its
// decoy pool (each empty if the server lacks it).
type WindowItem struct {
	Number  uint64
	Epoch   [32]byte
	Group   []byte
	Closing []byte
	Pool    []byte
}

// Window is the reply to a WindowReq, newest epoch first:
//
//	u32 n ‖ n × (u64 number ‖ epoch id 32 ‖ u32 len ‖ group
//	           ‖ u32 len ‖ closing ‖ u32 len ‖ pool)
type Window struct {
	Items []WindowItem
}

func (m *Window) Marshal() []byte {
	var e Enc
	e.U32(uint32(len(m.Items)))
	for _, it := range m.Items {
		e.U64(it.Number)
		e.Fixed(it.Epoch[:])
		e.Bytes(it.Group)
		e.Bytes(it.Closing)
		e.Bytes(it.Pool)
	}
	return e.B
}

func (m *Window) Unmarshal(b []byte) error {
	d := Dec{B: b}
	n := d.Count(MaxWindowItems, 8+32+12, "window items")
	m.Items = make([]WindowItem, n)
	for i := range m.Items {
		it := &m.Items[i]
		it.Number = d.U64("number")
		it.Epoch = d.Array32("epoch id")
		it.Group = d.Bytes(MaxWindowGroup, "descriptor")
		it.Closing = d.Bytes(MaxClosing, "closing record")
		it.Pool = d.Bytes(MaxPool, "decoy pool")
	}
	return d.Done("window")
}

// PoolPair is one (output position, requested id) pair of a decoy pool.
type PoolPair struct {
	Pos uint32
	ID  [32]byte
}

// DecoyPool is an epoch's decoy pool (§6.3 v3): of the distinct
// (position, id) pairs of its published lists, the Pairs (Closing.Pairs)
// of them, the at most MaxPoolPairs with the lowest sampling keys, in key
// order; and the manifest ids its published lists named (§6.4 v3), in
// round order, which a client that was not in the epoch checks its index
// copy against:
//
//	epoch id 32 ‖ u32 pairs ‖ u32 n ‖ n × (u32 position ‖ id 32)
//	‖ u32 m ‖ m × manifest id 32
//
// Version PoolV1, the layout older builds signed and stored, ends after
// the sample: it names no manifest ids. The sample's count fixes where it
// ends, so a decoder tells the two apart; the record's pool digest is
// over the bytes, so a record signed over one layout checks only a pool
// of that layout.
type DecoyPool struct {
	// Version is PoolV1 or PoolV2 (zero encodes as PoolV2).
	Version   uint8
	Epoch     [32]byte
	Total     uint32
	Sample    []PoolPair
	Manifests [][32]byte
}

// The layouts of a DecoyPool.
const (
	PoolV1 = 1 // no manifest ids (before §6.4's ids were carried)
	PoolV2 = 2 // with the manifest ids
)

// IDLess reports whether the pool is of the layout that names no
// manifest ids.
func (m *DecoyPool) IDLess() bool { return m.Version == PoolV1 }

func (m *DecoyPool) Marshal() []byte {
	e := Enc{B: make([]byte, 0, 32+8+36*len(m.Sample)+4+32*len(m.Manifests))}
	e.Fixed(m.Epoch[:])
	e.U32(m.Total)
	e.U32(uint32(len(m.Sample)))
	for _, p := range m.Sample {
		e.U32(p.Pos)
		e.Fixed(p.ID[:])
	}
	if m.IDLess() {
		return e.B
	}
	e.U32(uint32(len(m.Manifests)))
	for _, id := range m.Manifests {
		e.Fixed(id[:])
	}
	return e.B
}

func (m *DecoyPool) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Total = d.U32("pool pairs")
	n := d.Count(MaxPoolPairs, 36, "pool pairs")
	m.Sample = make([]PoolPair, n)
	for i := range m.Sample {
		m.Sample[i].Pos = d.U32("position")
		m.Sample[i].ID = d.Array32("id")
	}
	m.Version, m.Manifests = PoolV2, nil
	if len(d.B) == 0 && d.Err == nil {
		m.Version = PoolV1
		return nil
	}
	k := d.Count(MaxPoolManifests, 32, "pool manifests")
	if k > 0 {
		m.Manifests = make([][32]byte, k)
	}
	for i := range m.Manifests {
		m.Manifests[i] = d.Array32("manifest id")
	}
	return d.Done("decoy pool")
}
