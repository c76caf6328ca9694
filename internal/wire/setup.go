package wire

// Registration and setup messages (§4).

// Register is a client's registration (§4.1), signed by its registration
// key over SHA-256("riffle/v2/register", epoch id, xkey, reg).
type Register struct {
	Epoch  [32]byte
	RegKey [32]byte
	XKey   [32]byte
	Reg    []byte // mix.Registration encoding
	Sig    [64]byte
}

func (m *Register) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.Fixed(m.RegKey[:])
	e.Fixed(m.XKey[:])
	e.Bytes(m.Reg)
	e.Fixed(m.Sig[:])
}

func (m *Register) dec(d *Dec, l Limits) {
	m.Epoch = d.Array32("epoch id")
	m.RegKey = d.Array32("registration key")
	m.XKey = d.Array32("x25519 key")
	m.Reg = d.Bytes(l.Reg, "registration")
	m.Sig = d.Array64("signature")
}

func (m *Register) Marshal() []byte {
	var e Enc
	m.enc(&e)
	return e.B
}

func (m *Register) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l)
	return d.Done("registration")
}

// RegList is a primary's answer to the close of registration (its
// registrations in its own order, §3, with its signed Order) and the
// leader's list of the chosen ones in slot order: each a Forwarded, signed
// by its primary. (v3) The leader's list also carries every primary's
// signed Order and, in Rest, every listed registration it did not choose,
// so that every server recomputes the selection.
type RegList struct {
	Epoch [32]byte
	// Reveal is the replying server's r_j (v3, §3) in its reply to the
	// close, CommitSize bytes after the epoch id; zero in the leader's
	// ordered list.
	Reveal [CommitSize]byte
	Regs   []Forwarded
	// Orders: the replying primary's own Order in its reply to the
	// close; every primary's in the leader's list (at most one per
	// server, each of at most Limits.Clients keys).
	Orders []Order
	// Rest: in the leader's list, the registrations of the Orders that
	// the selection leaves out (at most Servers·Clients); empty in a
	// reply to the close.
	Rest []Forwarded
}

func (m *RegList) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.Fixed(m.Reveal[:])
	e.U32(uint32(len(m.Regs)))
	for i := range m.Regs {
		m.Regs[i].enc(&e)
	}
	e.U32(uint32(len(m.Orders)))
	for i := range m.Orders {
		m.Orders[i].enc(&e)
	}
	e.U32(uint32(len(m.Rest)))
	for i := range m.Rest {
		m.Rest[i].enc(&e)
	}
	return e.B
}

func (m *RegList) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Reveal = d.Array32("reveal")
	n := d.Count(l.Clients, forwardedMin, "registrations")
	m.Regs = make([]Forwarded, n)
	for i := range m.Regs {
		m.Regs[i].dec(&d, l)
	}
	n = d.Count(l.Servers, orderMin, "orders")
	m.Orders = make([]Order, n)
	for i := range m.Orders {
		m.Orders[i].dec(&d, l.Clients)
	}
	n = d.Count(l.Servers*l.Clients, forwardedMin, "unselected registrations")
	m.Rest = make([]Forwarded, n)
	for i := range m.Rest {
		m.Rest[i].dec(&d, l)
	}
	return d.Done("registration list")
}

// EpochRef names an epoch (close, abort, wait requests) with a reason.
type EpochRef struct {
	Epoch  [32]byte
	Round  uint32
	Reason []byte
}

func (m *EpochRef) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.Bytes(m.Reason)
	return e.B
}

func (m *EpochRef) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Reason = d.Bytes(MaxReason, "reason")
	return d.Done("epoch reference")
}

// MaxRouteProof bounds a route proof (mix.ProveRoute: a Chaum–Pedersen
// proof of two scalars, with room to spare).
const MaxRouteProof = 256

// Route is blame step 1 (§8) for a share fault found at setup (§4.2 step
// 3): the request names server S and its output position Out on the walk;
// the reply adds the input position In and the proof that the output
// vector at Out re-encrypts the input vector at In (mix.ProveRoute).
type Route struct {
	Epoch [32]byte
	S     uint16
	Out   uint32
	In    uint32
	Proof []byte
}

func (m *Route) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U16(m.S)
	e.U32(m.Out)
	e.U32(m.In)
	e.Bytes(m.Proof)
	return e.B
}

func (m *Route) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.S = d.U16("server")
	m.Out = d.U32("output position")
	m.In = d.U32("input position")
	m.Proof = d.Bytes(MaxRouteProof, "route proof")
	return d.Done("route")
}

// Step is one server's setup step (§4.2), signed by that server over
// SHA-256("riffle/v2/step", epoch id, u16 s, result).
type Step struct {
	Epoch  [32]byte
	S      uint16
	Result []byte
	Sig    [64]byte
}

func (m *Step) Marshal() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U16(m.S)
	e.Bytes(m.Result)
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *Step) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.S = d.U16("step")
	m.Result = d.Bytes(l.Step, "step result")
	m.Sig = d.Array64("signature")
	return d.Done("step")
}
