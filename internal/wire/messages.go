package wire

import (
	"errors"
	"fmt"
)

// Message types. Numbers are part of protocol version 1 (/riffle/1/...).
const (
	TypeHello    Type = 1  // roster hello, both directions
	TypePrepare  Type = 10 // leader → server: start an epoch
	TypeEntry    Type = 11 // server → leader: its group entry
	TypeSignReq  Type = 12 // leader → server: sign this descriptor
	TypeSig      Type = 13 // one server signature
	TypeSigned   Type = 14 // a descriptor with all signatures (open or final)
	TypeCloseReq Type = 15 // leader → primary: close registration
	TypeRegList  Type = 16 // primary → leader: every registration it accepted
	TypeStep     Type = 18 // setup step result, broadcast by its server
	TypeRoute    Type = 17 // blame step 1 of a setup share fault: request and proof
	TypeAbort    Type = 19 // any chain server → all: the epoch ends
	TypeWaitOpen Type = 20 // client → primary: wait for an open descriptor
	TypeRegister Type = 30 // client → primary: registration
	TypeSubmit   Type = 40 // client → primary: one onion
	// TypeHandover: client → primary, a cover onion for a later round
	// that a client leaving mid-epoch hands over (§5.4); its body is a
	// Submit's.
	TypeHandover    Type = 58
	TypeSubmitBatch Type = 41 // primary → S_0: its clients' onions of one round
	TypeBatch       Type = 42 // S_s → S_{s+1}, and S_{m-1} → all (payloads)
	TypeProposal    Type = 43 // leader → server: request list to sign
	TypeRoundList   Type = 44 // the signed request list
	TypePadAnswers  Type = 45 // non-primary → primary: padded PIR answers
	TypeQuery       Type = 46 // client → primary: k masks
	TypeAnswer      Type = 47 // primary → client: k combined rows
	TypeGetChunk    Type = 48 // fetch a public chunk by id
	TypeChunk       Type = 49
	TypeWaitList    Type = 50 // client → primary: wait for a round's list
	TypeIndexReq    Type = 60 // client → any server: the index changes after a cursor (IndexReq)
	TypeIndex       Type = 61 // server → client: one page of them (Index)
	TypeAck         Type = 62 // empty acknowledgement
	TypeRoot        Type = 51 // a signed batch root, broadcast to every server (§5.2)
)

// Fixed sizes.
const (
	IDSize     = 32 // SHA-256 ids, epoch ids, X25519 and Ed25519 public keys
	SigSize    = 64 // Ed25519 signature
	MaxNick    = 64
	MaxAddrs   = 16
	MaxAddr    = 256
	MaxPeerID  = 128
	MaxPoK     = 256
	MaxReason  = 512
	MaxName    = 1024
	MaxServers = 64
)

// Limits bounds every variable-length field. The node derives it from the
// epoch parameters (or, before an epoch is known, from the configured caps).
type Limits struct {
	Servers  int // m
	Clients  int // cap on n
	Rounds   int // R
	Rows     int // cap on L
	K        int // request slots
	Chunk    int // b
	Onion    int // onion size (upper bound on any mix entry)
	Reg      int // registration bytes
	Step     int // setup step result bytes
	Index    int // index entries
	MaskSize int // bytes of one PIR mask
	Frame    int // cap on a message rebuilt from its body (a Batch with its zero runs); 0: MaxFrame
}

// Params are the epoch parameters published in the descriptor (§3).
type Params struct {
	ChunkSize    uint32 // b
	K            uint16 // request slots per round
	W            uint16 // cover window
	Rounds       uint32 // R
	MaxClients   uint32 // cap on n
	MaxRows      uint32 // cap on L
	RegWindowMs  uint32 // registration window after opening
	RoundLimitMs uint32 // a round not filled in this time ends the epoch
	// IndexHours is how long a manifest stays in the public index after
	// it was indexed, in hours (0: for good): a group constant, so that
	// every server holds the same index (§7 v3).
	IndexHours uint32
}

// paramsSize: u32 chunk size, u16 k, u16 w, u32 rounds, u32 max clients,
// u32 max rows, u32 registration window, u32 round limit, u32 index hours.
const paramsSize = 4 + 2 + 2 + 4 + 4 + 4 + 4 + 4 + 4

func (p *Params) enc(e *Enc) {
	e.U32(p.ChunkSize)
	e.U16(p.K)
	e.U16(p.W)
	e.U32(p.Rounds)
	e.U32(p.MaxClients)
	e.U32(p.MaxRows)
	e.U32(p.RegWindowMs)
	e.U32(p.RoundLimitMs)
	e.U32(p.IndexHours)
}

func (p *Params) dec(d *Dec) {
	p.ChunkSize = d.U32("chunk size")
	p.K = d.U16("k")
	p.W = d.U16("w")
	p.Rounds = d.U32("rounds")
	p.MaxClients = d.U32("max clients")
	p.MaxRows = d.U32("max rows")
	p.RegWindowMs = d.U32("registration window")
	p.RoundLimitMs = d.U32("round limit")
	p.IndexHours = d.U32("index hours")
}

func encAddrs(e *Enc, addrs [][]byte) {
	e.U32(uint32(len(addrs)))
	for _, a := range addrs {
		e.Bytes(a)
	}
}

func decAddrs(d *Dec) [][]byte {
	n := d.Count(MaxAddrs, 4, "addresses")
	out := make([][]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		out = append(out, d.Bytes(MaxAddr, "address"))
	}
	return out
}

// Hello is exchanged on /riffle/1/roster. Peers gossips the live servers
// the sender knows (full multiaddrs with /p2p/), so that a server given one
// bootstrap address learns the whole roster.
type Hello struct {
	Version uint16
	Role    uint8 // 1 = server
	Nick    []byte
	Addrs   [][]byte // binary multiaddrs
	Peers   [][]byte // binary multiaddrs with /p2p/, at most MaxGossip
}

// MaxGossip bounds the servers named in one hello.
const MaxGossip = 32

func (m *Hello) Marshal() []byte {
	var e Enc
	e.U16(m.Version)
	e.U8(m.Role)
	e.Bytes(m.Nick)
	encAddrs(&e, m.Addrs)
	encAddrs(&e, m.Peers)
	return e.B
}

func (m *Hello) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Version = d.U16("version")
	m.Role = d.U8("role")
	m.Nick = d.Bytes(MaxNick, "nick")
	m.Addrs = decAddrs(&d)
	n := d.Count(MaxGossip, 4, "gossiped servers")
	m.Peers = make([][]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Peers = append(m.Peers, d.Bytes(MaxAddr, "gossiped server"))
	}
	return d.Done("hello")
}

// Prepare asks a chain member for its group entry of a new epoch.
type Prepare struct {
	Number uint64
	Nonce  [32]byte
	Params Params
	Chain  [][]byte // peer ids in chain order
	// Previous is the certificate of Number−1 (CertNone for number 1):
	// a server prepares N only when it verifies (§3 (v3)).
	Previous Cert
}

func (m *Prepare) Marshal() []byte {
	var e Enc
	e.U64(m.Number)
	e.Fixed(m.Nonce[:])
	m.Params.enc(&e)
	encAddrs2(&e, m.Chain)
	m.Previous.enc(&e)
	return e.B
}

func encAddrs2(e *Enc, l [][]byte) {
	e.U32(uint32(len(l)))
	for _, a := range l {
		e.Bytes(a)
	}
}

func (m *Prepare) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Number = d.U64("number")
	m.Nonce = d.Array32("nonce")
	m.Params.dec(&d)
	n := d.Count(MaxServers, 4, "chain")
	m.Chain = make([][]byte, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Chain = append(m.Chain, d.Bytes(MaxPeerID, "peer id"))
	}
	m.Previous.dec(&d)
	return d.Done("prepare")
}

// GroupEntry is one server's part of the descriptor (§3).
type GroupEntry struct {
	PeerID []byte
	Nick   []byte
	Addrs  [][]byte
	X      [32]byte // ElGamal key
	PoK    []byte   // Schnorr proof of x bound to (number, nonce, peer id)
	D      [32]byte // X25519 key of this epoch
	Y, Yp  [][32]byte
	// Commit is H(r_j) of the selection of §3 (v3): a commitment to the
	// server's fresh random value, revealed after the deadline.
	Commit [CommitSize]byte
}

// CommitSize is the size of a commitment H(r_j) and of a revealed r_j
// (§3): 32 bytes each.
const CommitSize = 32

func (g *GroupEntry) enc(e *Enc) {
	e.Bytes(g.PeerID)
	e.Bytes(g.Nick)
	encAddrs(e, g.Addrs)
	e.Fixed(g.X[:])
	e.Bytes(g.PoK)
	e.Fixed(g.D[:])
	e.U32(uint32(len(g.Y)))
	for i := range g.Y {
		e.Fixed(g.Y[i][:])
	}
	e.U32(uint32(len(g.Yp)))
	for i := range g.Yp {
		e.Fixed(g.Yp[i][:])
	}
	e.Fixed(g.Commit[:])
}

func decKeys(d *Dec, max int, what string) [][32]byte {
	n := d.Count(max, 32, what)
	out := make([][32]byte, n)
	for i := range out {
		out[i] = d.Array32(what)
	}
	return out
}

// groupEntryMin is the smallest group entry: six empty byte strings or
// lists (a u32 each), the two 32-byte keys and the commitment.
const groupEntryMin = 6*4 + 32 + 32 + CommitSize

func (g *GroupEntry) dec(d *Dec, maxRounds int) {
	g.PeerID = d.Bytes(MaxPeerID, "peer id")
	g.Nick = d.Bytes(MaxNick, "nick")
	g.Addrs = decAddrs(d)
	g.X = d.Array32("elgamal key")
	g.PoK = d.Bytes(MaxPoK, "key proof")
	g.D = d.Array32("x25519 key")
	g.Y = decKeys(d, maxRounds, "round keys")
	g.Yp = decKeys(d, maxRounds, "mac round keys")
	g.Commit = d.Array32("commitment")
}

// Marshal encodes a group entry alone (the reply to Prepare).
func (g *GroupEntry) Marshal() []byte {
	var e Enc
	g.enc(&e)
	return e.B
}

func (g *GroupEntry) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	g.dec(&d, l.Rounds)
	return d.Done("group entry")
}

// ClientEntry is one input slot of the final descriptor.
type ClientEntry struct {
	RegKey  [32]byte // Ed25519 registration key
	Primary uint16   // chain position of the client's primary
	XKey    [32]byte // X25519 key for PIR seeds
	RegHash [32]byte // SHA-256 of the registration bytes
}

const clientEntrySize = 32 + 2 + 32 + 32

// Descriptor is the epoch descriptor of §3. Clients and Reveals are
// empty in the open descriptor and filled in the final one.
type Descriptor struct {
	Number uint64
	Nonce  [32]byte
	Params Params
	Group  []GroupEntry
	// Previous is the certificate of Number−1 (v3; CertNone for 1).
	Previous Cert
	Clients  []ClientEntry
	// Reveals are the servers' r_j in chain order (v3, §3), each
	// CommitSize bytes, after the clients: not in the epoch id, which
	// covers their commitments.
	Reveals [][CommitSize]byte
}

// MarshalGroup encodes the part hashed into the epoch id: number, nonce,
// parameters, group and the previous number's certificate (no clients).
func (m *Descriptor) MarshalGroup() []byte {
	var e Enc
	e.U64(m.Number)
	e.Fixed(m.Nonce[:])
	m.Params.enc(&e)
	e.U32(uint32(len(m.Group)))
	for i := range m.Group {
		m.Group[i].enc(&e)
	}
	m.Previous.enc(&e)
	return e.B
}

func (m *Descriptor) Marshal() []byte {
	e := Enc{B: m.MarshalGroup()}
	e.U32(uint32(len(m.Clients)))
	for _, c := range m.Clients {
		e.Fixed(c.RegKey[:])
		e.U16(c.Primary)
		e.Fixed(c.XKey[:])
		e.Fixed(c.RegHash[:])
	}
	e.U32(uint32(len(m.Reveals)))
	for i := range m.Reveals {
		e.Fixed(m.Reveals[i][:])
	}
	return e.B
}

func (m *Descriptor) dec(d *Dec, l Limits) {
	m.Number = d.U64("number")
	m.Nonce = d.Array32("nonce")
	m.Params.dec(d)
	n := d.Count(MaxServers, groupEntryMin, "group entries")
	m.Group = make([]GroupEntry, n)
	for i := range m.Group {
		m.Group[i].dec(d, l.Rounds)
	}
	m.Previous.dec(d)
	c := d.Count(l.Clients, clientEntrySize, "clients")
	m.Clients = make([]ClientEntry, c)
	for i := range m.Clients {
		m.Clients[i].RegKey = d.Array32("registration key")
		m.Clients[i].Primary = d.U16("primary")
		m.Clients[i].XKey = d.Array32("x25519 key")
		m.Clients[i].RegHash = d.Array32("registration hash")
	}
	m.Reveals = decKeys(d, MaxServers, "reveals")
}

func (m *Descriptor) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l)
	return d.Done("descriptor")
}

// Signed is a descriptor with one Ed25519 signature per chain position.
type Signed struct {
	Final bool
	Desc  Descriptor
	Sigs  [][64]byte
}

func (m *Signed) Marshal() []byte {
	var e Enc
	if m.Final {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.Bytes(m.Desc.Marshal())
	encSigs(&e, m.Sigs)
	return e.B
}

func encSigs(e *Enc, s [][64]byte) {
	e.U32(uint32(len(s)))
	for i := range s {
		e.Fixed(s[i][:])
	}
}

func decSigs(d *Dec, max int) [][64]byte {
	n := d.Count(max, 64, "signatures")
	out := make([][64]byte, n)
	for i := range out {
		out[i] = d.Array64("signature")
	}
	return out
}

func (m *Signed) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	f := d.U8("final flag")
	if f > 1 {
		return fmt.Errorf("wire: decode signed descriptor: final flag %d", f)
	}
	m.Final = f == 1
	db := d.Bytes(MaxFrame, "descriptor")
	if d.Err == nil {
		dd := Dec{B: db}
		m.Desc.dec(&dd, l)
		if err := dd.Done("descriptor"); err != nil {
			return err
		}
	}
	m.Sigs = decSigs(&d, MaxServers)
	return d.Done("signed descriptor")
}

// Sig is one server's signature, with its chain position.
type Sig struct {
	Index uint16
	Sig   [64]byte
}

func (m *Sig) Marshal() []byte {
	var e Enc
	e.U16(m.Index)
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *Sig) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Index = d.U16("index")
	m.Sig = d.Array64("signature")
	return d.Done("signature")
}

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

// Submit is one onion for one round and input slot, signed by the client's
// registration key (§5.1, mix.SignSubmission).
type Submit struct {
	Epoch [32]byte
	Round uint32
	Slot  uint32
	Onion []byte
	Sig   [64]byte
}

func (m *Submit) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(m.Slot)
	e.Bytes(m.Onion)
	e.Fixed(m.Sig[:])
}

func (m *Submit) dec(d *Dec, l Limits) {
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Slot = d.U32("slot")
	m.Onion = d.Bytes(l.Onion, "onion")
	m.Sig = d.Array64("signature")
}

func (m *Submit) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 4 + 4 + len(m.Onion) + 64)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the onion (Enc.Refs).
func (m *Submit) Segments() [][]byte { return refSegments(m.enc) }

func (m *Submit) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l)
	return d.Done("submission")
}

// SubmitBatch carries a primary's submissions of one round to S_0.
type SubmitBatch struct {
	Epoch [32]byte
	Round uint32
	Subs  []Submit
}

func (m *SubmitBatch) Marshal() []byte {
	var e Enc
	size := 32 + 4 + 4
	for i := range m.Subs {
		size += 32 + 4 + 4 + 4 + len(m.Subs[i].Onion) + 64
	}
	e.Grow(size)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the onions (Enc.Refs).
func (m *SubmitBatch) Segments() [][]byte { return refSegments(m.enc) }

func (m *SubmitBatch) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Subs)))
	for i := range m.Subs {
		m.Subs[i].enc(e)
	}
}

func (m *SubmitBatch) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(l.Clients, 32+8+4+64, "submissions")
	m.Subs = make([]Submit, n)
	for i := range m.Subs {
		m.Subs[i].dec(&d, l)
	}
	return d.Done("submission batch")
}

// refSegments runs an encoder with Enc.Refs and returns the segments.
func refSegments(enc func(*Enc)) [][]byte {
	e := Enc{Refs: true}
	enc(&e)
	return e.Segments()
}

// Batch is a mix batch: the input of S_{S} (S ≤ m-1), or for S = m the
// published payloads. Root is the Merkle root of Entries, Sig the sender's
// signature over it (§5.2). Every batch carries, in input-slot order, each
// client's submission signature and the SHA-256 of the onion it signs
// (ClientSigs, ClientHashes), passed on unchanged from S_0, so that every
// server checks that every slot of the round held an onion its client
// signed (§5.2: any server can check any position).
type Batch struct {
	Epoch   [32]byte
	Round   uint32
	S       uint16
	Entries [][]byte
	// Zeros, if set, has one ZeroRun per entry: bytes of the entry that
	// are all zero and are not sent (a published payload's padding: a
	// cover is b zero bytes). The receiver puts them back, so Entries and
	// everything signed over them are the same on both sides.
	Zeros        []ZeroRun
	ClientSigs   [][64]byte
	ClientHashes [][32]byte
	Root         [32]byte
	Sig          [64]byte
}

// ZeroRun is a run of N zero bytes at offset At of a batch entry, left out
// of the encoding (N = 0: nothing left out).
type ZeroRun struct{ At, N uint32 }

// zeros is entry i's run (none if Zeros is unset). A decoder puts a run
// back only while its sum with the bytes sent stays within Limits.Onion,
// so an elided batch never costs the receiver more memory than the same
// batch sent whole.
func (m *Batch) zeros(i int) ZeroRun {
	if i < len(m.Zeros) {
		return m.Zeros[i]
	}
	return ZeroRun{}
}

func (m *Batch) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 2 + sizeOfBytes(m.Entries) + 8*len(m.Entries) + 4 + 64*len(m.ClientSigs) + 4 + 32*len(m.ClientHashes) + 32 + 64)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the entries (Enc.Refs).
func (m *Batch) Segments() [][]byte { return refSegments(m.enc) }

func (m *Batch) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	e.U32(uint32(len(m.Entries)))
	for i, x := range m.Entries {
		z := m.zeros(i)
		if z.N == 0 || uint64(z.At)+uint64(z.N) > uint64(len(x)) {
			z = ZeroRun{}
		}
		e.U32(z.At)
		e.U32(z.N)
		e.Bytes2(x[:z.At], x[z.At+z.N:])
	}
	encSigs(e, m.ClientSigs)
	e.U32(uint32(len(m.ClientHashes)))
	for i := range m.ClientHashes {
		e.Fixed(m.ClientHashes[i][:])
	}
	e.Fixed(m.Root[:])
	e.Fixed(m.Sig[:])
}

func (m *Batch) Unmarshal(b []byte, l Limits) error { return m.UnmarshalAlloc(b, l, nil) }

// UnmarshalAlloc is Unmarshal with the entries whose zero runs it puts back
// built in alloc(n) (a recycled buffer of length n, which it fills in
// full), or new slices if alloc is nil. Other entries alias b.
//
// Nothing is rebuilt before the whole body has been read and found well
// formed, and what is rebuilt is bounded by the limits, not by the body: at
// most l.Clients entries of at most l.Onion bytes each, and all entries
// together at most l.Frame bytes (MaxFrame if unset), so that a batch sent
// without its zero runs never costs the receiver more memory than the same
// batch sent whole in a frame under that cap. A few hundred bytes of zero
// runs cannot make a receiver allocate gigabytes.
func (m *Batch) UnmarshalAlloc(b []byte, l Limits, alloc func(n int) []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	// An entry is at least 12 bytes (run offset, run length, bytes
	// length), so the slice headers cost at most twice the body.
	n := d.Count(l.Clients, 12, "entries")
	m.Entries = make([][]byte, n)
	m.Zeros = nil
	frame := int64(l.Frame)
	if frame <= 0 || frame > MaxFrame {
		frame = MaxFrame
	}
	var total int64 // the entries' size once rebuilt
	for i := 0; i < n && d.Err == nil; i++ {
		z := ZeroRun{At: d.U32("zero run offset"), N: d.U32("zero run length")}
		rest := d.Bytes(l.Onion, "entry")
		if d.Err != nil {
			break
		}
		if z.N == 0 && z.At != 0 {
			return fmt.Errorf("wire: decode batch: entry %d: empty zero run at %d", i, z.At)
		}
		if uint64(z.At) > uint64(len(rest)) || uint64(len(rest))+uint64(z.N) > uint64(l.Onion) {
			return fmt.Errorf("wire: decode batch: entry %d: zero run of %d at %d with %d bytes sent (cap %d)", i, z.N, z.At, len(rest), l.Onion)
		}
		if total += int64(len(rest)) + int64(z.N); total > frame {
			return fmt.Errorf("%w: batch entries rebuilt to more than %d bytes", ErrTooLarge, frame)
		}
		// The sent bytes only, for now: the run is put back below.
		m.Entries[i] = rest
		if z.N == 0 {
			continue
		}
		if m.Zeros == nil {
			m.Zeros = make([]ZeroRun, n) // 8 bytes per entry of at least 12
		}
		m.Zeros[i] = z
	}
	m.ClientSigs = decSigs(&d, l.Clients)
	nh := d.Count(l.Clients, 32, "onion hashes")
	m.ClientHashes = make([][32]byte, nh)
	for i := range m.ClientHashes {
		m.ClientHashes[i] = d.Array32("onion hash")
	}
	m.Root = d.Array32("root")
	m.Sig = d.Array64("signature")
	if err := d.Done("batch"); err != nil {
		return err
	}
	for i, z := range m.Zeros {
		if z.N == 0 {
			continue
		}
		rest := m.Entries[i]
		var x []byte
		if alloc != nil {
			x = alloc(len(rest) + int(z.N))
			clear(x[z.At : z.At+z.N])
		} else {
			x = make([]byte, len(rest)+int(z.N))
		}
		copy(x, rest[:z.At])
		copy(x[z.At+z.N:], rest[z.At:])
		m.Entries[i] = x
	}
	return nil
}

// BatchHead is what a receiver checks of a Batch before decoding it: the
// epoch, round and sending position, and the root and signature that the
// sender signed over them (§5.2).
type BatchHead struct {
	Epoch [32]byte
	Round uint32
	S     uint16
	Root  [32]byte
	Sig   [64]byte
}

// batchMin is the smallest Batch body: the head, three empty counts, the
// root and the signature.
const batchMin = 32 + 4 + 2 + 4 + 4 + 4 + 32 + 64

// PeekBatch reads a Batch body's head without decoding or allocating
// anything: the epoch, round and position at its start, and the root and
// signature in its last 96 bytes (where every well-formed Batch has them;
// a later UnmarshalAlloc that succeeds has read the same root and
// signature). A receiver checks the sender, the epoch and the signature
// with it before it lets the body cost anything.
func PeekBatch(b []byte) (BatchHead, error) {
	var h BatchHead
	if len(b) < batchMin {
		return h, fmt.Errorf("wire: peek batch: %w: %d bytes, at least %d", ErrShort, len(b), batchMin)
	}
	d := Dec{B: b[:32+4+2]}
	h.Epoch = d.Array32("epoch id")
	h.Round = d.U32("round")
	h.S = d.U16("server")
	t := Dec{B: b[len(b)-32-64:]}
	h.Root = t.Array32("root")
	h.Sig = t.Array64("signature")
	return h, nil
}

// ListEntry is one row of a request list.
type ListEntry struct {
	ID  [32]byte
	Len uint32
}

// RoundList is the request list of a round (§5.3) with the ids published;
// Sigs is empty in a proposal and holds one signature per chain position in
// the final list.
type RoundList struct {
	Epoch     [32]byte
	Round     uint32
	Entries   []ListEntry
	Published [][32]byte
	// Manifests are the published ids that the index took as manifests
	// (§6.4 v3): signed with the rest, so that a client can check that
	// the index it syncs holds every one of them.
	Manifests [][32]byte
	// Flags (u8, after Manifests, signed with the rest): ListVoid marks
	// a round that published nothing and is never run again (§5.2 v3);
	// a void list has no entries, published ids or manifests.
	Flags uint8
	// Pairs (after Flags, signed with the rest; §6.3 v3) are the round's
	// public demand: for each output position, in order, each listed id
	// that its payload requested, as (position, index into Entries),
	// sorted by position then index, each pair once. Decoys are drawn
	// from them. A void list has none.
	Pairs []ListPair
	Sigs  [][64]byte
}

// ListPair is one (output position, requested id) pair of a request list:
// Entry indexes the list's Entries.
type ListPair struct {
	Pos   uint32
	Entry uint32
}

// PairID returns the id of pair i.
func (m *RoundList) PairID(i int) [32]byte { return m.Entries[m.Pairs[i].Entry].ID }

// ListVoid is the RoundList flag of a void round; no other flag exists.
const ListVoid uint8 = 1

// Void reports whether the list records a void round.
func (m *RoundList) Void() bool { return m.Flags&ListVoid != 0 }

// MarshalBody encodes everything but the signatures.
func (m *RoundList) MarshalBody() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Entries)))
	for _, x := range m.Entries {
		e.Fixed(x.ID[:])
		e.U32(x.Len)
	}
	e.U32(uint32(len(m.Published)))
	for _, x := range m.Published {
		e.Fixed(x[:])
	}
	e.U32(uint32(len(m.Manifests)))
	for _, x := range m.Manifests {
		e.Fixed(x[:])
	}
	e.U8(m.Flags)
	e.U32(uint32(len(m.Pairs)))
	for _, x := range m.Pairs {
		e.U32(x.Pos)
		e.U32(x.Entry)
	}
	return e.B
}

func (m *RoundList) Marshal() []byte {
	e := Enc{B: m.MarshalBody()}
	encSigs(&e, m.Sigs)
	return e.B
}

func (m *RoundList) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(l.Rows, 36, "list entries")
	m.Entries = make([]ListEntry, n)
	for i := range m.Entries {
		m.Entries[i].ID = d.Array32("chunk id")
		m.Entries[i].Len = d.U32("chunk length")
	}
	m.Published = decKeys(&d, l.Clients, "published ids")
	m.Manifests = decKeys(&d, l.Clients, "manifest ids")
	m.Flags = d.U8("list flags")
	np := d.Count(l.Clients*l.K, 8, "list pairs")
	m.Pairs = nil
	if np > 0 {
		m.Pairs = make([]ListPair, np)
	}
	for i := range m.Pairs {
		m.Pairs[i].Pos = d.U32("pair position")
		m.Pairs[i].Entry = d.U32("pair entry")
	}
	m.Sigs = decSigs(&d, MaxServers)
	if err := d.Done("request list"); err != nil {
		return err
	}
	if m.Flags&^ListVoid != 0 {
		return fmt.Errorf("wire: request list: unknown flags %#x", m.Flags)
	}
	if m.Void() && (len(m.Entries) > 0 || len(m.Published) > 0 || len(m.Manifests) > 0) {
		return errors.New("wire: request list: a void round with entries, published ids or manifests")
	}
	for i, x := range m.Pairs {
		if int(x.Pos) >= l.Clients || int(x.Entry) >= len(m.Entries) {
			return fmt.Errorf("wire: request list: pair %d (%d, %d) out of range", i, x.Pos, x.Entry)
		}
		if i > 0 {
			if p := m.Pairs[i-1]; p.Pos > x.Pos || (p.Pos == x.Pos && p.Entry >= x.Entry) {
				return fmt.Errorf("wire: request list: pair %d not after pair %d", i, i-1)
			}
		}
	}
	return nil
}

// Rows carries PIR masks (Query), answers (Answer) or padded answers
// (PadAnswers) for a set of input slots of one round: Rows[i] belongs to
// Slots[i/k], query slot i%k.
type Rows struct {
	Epoch [32]byte
	Round uint32
	Slots []uint32
	Rows  [][]byte
}

func (m *Rows) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 4 + 4*len(m.Slots) + sizeOfBytes(m.Rows))
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the rows (Enc.Refs).
func (m *Rows) Segments() [][]byte { return refSegments(m.enc) }

func (m *Rows) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Slots)))
	for _, s := range m.Slots {
		e.U32(s)
	}
	e.U32(uint32(len(m.Rows)))
	for _, r := range m.Rows {
		e.Bytes(r)
	}
}

// Unmarshal decodes with at most maxSlots slots, k rows per slot, each row
// at most rowMax bytes.
func (m *Rows) Unmarshal(b []byte, maxSlots, k, rowMax int) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(maxSlots, 4, "slots")
	m.Slots = make([]uint32, n)
	for i := range m.Slots {
		m.Slots[i] = d.U32("slot")
	}
	r := d.Count(n*k, 4, "rows")
	if d.Err == nil && r != n*k {
		return fmt.Errorf("wire: decode rows: %d rows for %d slots of %d", r, n, k)
	}
	m.Rows = make([][]byte, 0, r)
	for i := 0; i < r && d.Err == nil; i++ {
		m.Rows = append(m.Rows, d.Bytes(rowMax, "row"))
	}
	return d.Done("rows")
}

// Chunk is a chunk by id (request: Data empty).
type Chunk struct {
	ID   [32]byte
	Data []byte
}

func (m *Chunk) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + len(m.Data))
	e.Fixed(m.ID[:])
	e.Bytes(m.Data)
	return e.B
}

func (m *Chunk) Unmarshal(b []byte, max int) error {
	d := Dec{B: b}
	m.ID = d.Array32("chunk id")
	m.Data = d.Bytes(max, "chunk")
	return d.Done("chunk")
}

// IndexEntry is one file of the public index (§7).
type IndexEntry struct {
	FileID [32]byte
	Name   []byte
	Size   uint64
	Chunks uint32
	Round  uint32
	Time   int64 // unix seconds, first publication
}

// MaxManifest bounds one manifest chunk of the index: the largest chunk
// size b (§3). MinManifest is the shortest one, a continuation node's
// header (docs/proto-chunker.md): a count of manifests is checked against
// it before anything is allocated.
const (
	MaxManifest = 4 << 20
	MinManifest = 19
)

// Index sync (§7 v3): a client asks any server for the changes to the
// public index after a cursor, and reads them page by page.
const (
	// IndexReqSize is an IndexReq's fixed size: u64 cursor.
	IndexReqSize = 8
	// IndexPageBytes bounds what a server puts in one page: the entries,
	// manifests and removed ids it adds stop once the next would pass it
	// (a page holds at least one). A single manifest (at most MaxManifest)
	// with its entry always fits.
	IndexPageBytes = 8 << 20
	// MaxIndexPage caps the body of one Index page: IndexPageBytes, the
	// page header (u64 next, u8 more, three u32 counts) and slack.
	MaxIndexPage = IndexPageBytes + 1024
	// indexEntryMin is an entry's size with an empty name: file id 32,
	// name length 4, size 8, chunks 4, round 4, time 8.
	indexEntryMin = 32 + 4 + 8 + 4 + 4 + 8
)

// IndexReq asks for the index changes a server logged after Cursor (0: all
// of them). Fixed size: IndexReqSize.
type IndexReq struct {
	Cursor uint64
}

func (m *IndexReq) Marshal() []byte {
	var e Enc
	e.U64(m.Cursor)
	return e.B
}

func (m *IndexReq) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Cursor = d.U64("cursor")
	return d.Done("index request")
}

// Index is one page of the public index (§7): the files (one entry per
// root manifest in clear), the bytes of the manifest chunks indexed, roots
// and inner nodes alike (§6.4 v3), and the ids of manifests that left the
// index, all logged by the server after the request's cursor and up to
// Next. More says that changes follow Next. A manifest's id is the SHA-256
// of its bytes: the receiver computes it, and checks that the bytes parse.
// The local control socket sends the whole index of entries as one Index
// with Next 0 and no manifests.
//
//	u64 next ‖ u8 more (0 or 1)
//	‖ u32 n ‖ n × (file id 32 ‖ bytes name ‖ u64 size ‖ u32 chunks ‖ u32 round ‖ u64 unix time)
//	‖ u32 n ‖ n × bytes manifest
//	‖ u32 n ‖ n × removed manifest id 32
//	‖ u32 n ‖ n × bytes closing record (§7 v3, Closing)
type Index struct {
	Next      uint64
	More      bool
	Entries   []IndexEntry
	Manifests [][]byte
	Removed   [][32]byte
	Closings  [][]byte
}

func (m *Index) Marshal() []byte {
	var e Enc
	e.U64(m.Next)
	if m.More {
		e.U8(1)
	} else {
		e.U8(0)
	}
	e.U32(uint32(len(m.Entries)))
	for _, x := range m.Entries {
		e.Fixed(x.FileID[:])
		e.Bytes(x.Name)
		e.U64(x.Size)
		e.U32(x.Chunks)
		e.U32(x.Round)
		e.U64(uint64(x.Time))
	}
	e.U32(uint32(len(m.Manifests)))
	for _, x := range m.Manifests {
		e.Bytes(x)
	}
	e.U32(uint32(len(m.Removed)))
	for _, x := range m.Removed {
		e.Fixed(x[:])
	}
	e.U32(uint32(len(m.Closings)))
	for _, x := range m.Closings {
		e.Bytes(x)
	}
	return e.B
}

// Unmarshal decodes an index page of at most max entries, max manifests
// and max removed ids, each manifest of at most MaxManifest bytes; every
// count is checked against the bytes left before anything is allocated,
// and the caller bounds the whole message (its reply cap).
func (m *Index) Unmarshal(b []byte, max int) error {
	d := Dec{B: b}
	m.Next = d.U64("next")
	more := d.U8("more flag")
	if d.Err == nil && more > 1 {
		return fmt.Errorf("wire: decode index: more flag %d", more)
	}
	m.More = more == 1
	n := d.Count(max, indexEntryMin, "index entries")
	m.Entries = nil
	if n > 0 {
		m.Entries = make([]IndexEntry, n)
	}
	for i := range m.Entries {
		x := &m.Entries[i]
		x.FileID = d.Array32("file id")
		x.Name = d.Bytes(MaxName, "name")
		x.Size = d.U64("size")
		x.Chunks = d.U32("chunks")
		x.Round = d.U32("round")
		x.Time = int64(d.U64("time"))
	}
	n = d.Count(max, 4+MinManifest, "index manifests")
	m.Manifests = nil
	if n > 0 {
		m.Manifests = make([][]byte, n)
		for i := range m.Manifests {
			m.Manifests[i] = d.Bytes(MaxManifest, "manifest")
			if d.Err == nil && len(m.Manifests[i]) < MinManifest {
				d.Err = fmt.Errorf("%w: manifest of %d bytes < %d", ErrShort, len(m.Manifests[i]), MinManifest)
			}
		}
	}
	n = d.Count(max, IDSize, "removed manifests")
	m.Removed = nil
	if n > 0 {
		m.Removed = make([][32]byte, n)
		for i := range m.Removed {
			m.Removed[i] = d.Array32("removed id")
		}
	}
	// A closing record is at least an epoch id and two counts.
	n = d.Count(max, 4+32+8, "closing records")
	m.Closings = nil
	if n > 0 {
		m.Closings = make([][]byte, n)
		for i := range m.Closings {
			m.Closings[i] = d.Bytes(MaxClosing, "closing record")
			if d.Err == nil && len(m.Closings[i]) < 32+8 {
				d.Err = fmt.Errorf("%w: closing record of %d bytes", ErrShort, len(m.Closings[i]))
			}
		}
	}
	return d.Done("index")
}

// MaxIndexPageItems bounds the items of one page of at most MaxIndexPage
// bytes: no entry, manifest or removed id is shorter than MinManifest+4.
const MaxIndexPageItems = MaxIndexPage / (MinManifest + 4)

// Root is a server's signed Merkle root of one batch (§5.2), broadcast to
// every chain server so that two different roots signed for one (round,
// server) are evidence of equivocation. S and the signature are those of
// the Batch it summarises.
type Root struct {
	Epoch [32]byte
	Round uint32
	S     uint16
	Root  [32]byte
	Sig   [64]byte
}

const rootSize = 32 + 4 + 2 + 32 + 64

func (m *Root) Marshal() []byte {
	e := Enc{B: make([]byte, 0, rootSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	e.Fixed(m.Root[:])
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *Root) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	m.Root = d.Array32("root")
	m.Sig = d.Array64("signature")
	return d.Done("root")
}
