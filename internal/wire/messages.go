package wire

import (
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
	TypeProposal    Type = 98 // leader → server: request list to sign, with the leader's signature (43: unsigned, no longer taken)
	TypeRoundList   Type = 44 // the signed request list
	TypePadAnswers  Type = 45 // non-primary → primary: padded PIR answers
	TypeQuery       Type = 46 // client → primary: k masks
	TypeAnswer      Type = 47 // primary → client: k combined rows
	TypeGetChunk    Type = 48 // fetch a public chunk by id
	TypeChunk       Type = 49
	TypeWaitList    Type = 50 // client → primary: wait for a round's list
	TypeIndexReq    Type = 60 // client → any server, or a server of the group → another (epoch protocol): the index changes after a cursor (IndexReq)
	TypeIndex       Type = 61 // the reply: one page of them (Index)
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
	// RoundIntervalMs is the group pace: no server starts its part of a
	// round before it started its part of the previous one plus this
	// interval, so that what a client sends follows from the group's
	// constants alone (§5 v3).
	RoundIntervalMs uint32
}

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
	e.U32(p.RoundIntervalMs)
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
	p.RoundIntervalMs = d.U32("round interval")
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
	// Window pins N's decoy window (§6.3 v3): the member holds each
	// record and pool before it answers.
	Window []WindowRef
	// Gap carries the walk past a timeout (§6.3 v3): when Previous is a
	// timeout, the certificates of Number−2 down to the newest that
	// names an epoch, within the window's look-back; else empty.
	Gap []Cert
	// Cands are the candidates the leader records at Number: servers in
	// no chain nor candidacy of the probation window (§3, "Who may
	// serve"), sorted, at most MaxCands.
	Cands [][]byte
}

func (m *Prepare) Marshal() []byte {
	var e Enc
	e.U64(m.Number)
	e.Fixed(m.Nonce[:])
	m.Params.enc(&e)
	encAddrs2(&e, m.Chain)
	m.Previous.enc(&e)
	encWindowRefs(&e, m.Window)
	encGap(&e, m.Gap)
	encAddrs2(&e, m.Cands)
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
	m.Window = decWindowRefs(&d)
	m.Gap = decGap(&d)
	m.Cands = DecCands(&d)
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
	// Window is the epoch's decoy window, as its Prepare pinned it
	// (§6.3 v3): in the epoch id.
	Window []WindowRef
	// Gap is the Prepare's (§6.3 v3): in the epoch id.
	Gap []Cert
	// Cands are the Prepare's (§3): in the epoch id.
	Cands   [][]byte
	Clients []ClientEntry
	// Reveals are the servers' r_j in chain order (v3, §3), each
	// CommitSize bytes, after the clients: not in the epoch id, which
	// covers their commitments.
	Reveals [][CommitSize]byte
}

// MarshalGroup encodes the part hashed into the epoch id: number, nonce,
// parameters, group, the previous number's certificate, the window, the
// gap and the candidates (no clients).
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
	encWindowRefs(&e, m.Window)
	encGap(&e, m.Gap)
	encAddrs2(&e, m.Cands)
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
	m.Window = decWindowRefs(d)
	m.Gap = decGap(d)
	m.Cands = DecCands(d)
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
