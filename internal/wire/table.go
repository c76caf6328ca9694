package wire

import (
	"errors"
	"fmt"
)

// The message table: every message type, the protocol it travels on, which
// way, its size cap and its decoder. The node's read caps, its
// request → reply table and its dispatch come from here, so do the vector
// test and the table in docs/proto-node.md (Markdown).

// Proto names a node protocol, /riffle/1/<name>: wire does not import
// libp2p, the node maps its protocol ids onto these.
type Proto string

const (
	ProtoRoster Proto = "roster"
	ProtoEpoch  Proto = "epoch"
	ProtoRound  Proto = "round"
	ProtoClient Proto = "client"
	ProtoPIR    Proto = "pir"
	// ProtoAny is a refusal's (TypeError): it may replace any reply.
	ProtoAny Proto = "any"
)

// Dir is which way a message goes on its protocol.
type Dir uint8

const (
	Request Dir = iota // to the server of the protocol
	Reply              // back from it
)

// Body is a decoded message.
type Body interface{ Marshal() []byte }

// Decoder decodes a body within l.
type Decoder func(b []byte, l Limits) (Body, error)

// Message is one message type on one protocol, one way.
type Message struct {
	Type  Type
	Proto Proto
	Dir   Dir
	Name  string
	// Cap is the most body bytes its reader takes, from the largest
	// parameters the reader allows; nil: the caller gives the epoch's.
	Cap func(l Limits) int
	// Reply is a request's reply type.
	Reply  Type
	Decode Decoder
}

// Raw is a body without a layout: an Ack's (empty) or a refusal's text.
type Raw []byte

func (r Raw) Marshal() []byte { return append([]byte{}, r...) }

func decoder[M any, P interface {
	*M
	Body
}](f func(P, []byte, Limits) error) Decoder {
	return func(b []byte, l Limits) (Body, error) {
		m := P(new(M))
		return m, f(m, b, l)
	}
}

// One decoder per Go type; a type with bounds of its own takes them from l
// as the node does.
var (
	decHello        = decoder(func(m *Hello, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decPrepare      = decoder(func(m *Prepare, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decEntry        = decoder(func(m *GroupEntry, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decSigned       = decoder(func(m *Signed, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decSig          = decoder(func(m *Sig, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decEpochRef     = decoder(func(m *EpochRef, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decRegList      = decoder(func(m *RegList, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decRoute        = decoder(func(m *Route, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decStep         = decoder(func(m *Step, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decAbort        = decoder(func(m *Abort, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decCert         = decoder(func(m *Cert, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decCertReq      = decoder(func(m *CertReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decCerts        = decoder(func(m *Certs, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decRegister     = decoder(func(m *ClientRegister, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decForwarded    = decoder(func(m *Forwarded, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decReceipt      = decoder(func(m *Receipt, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decReceiptSet   = decoder(func(m *ReceiptSet, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decKeyEvidence  = decoder(func(m *KeyEvidence, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDropReq      = decoder(func(m *DropReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDropStep     = decoder(func(m *DropStep, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decSubmit       = decoder(func(m *Submit, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decOnionReceipt = decoder(func(m *OnionReceipt, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDrySet       = decoder(func(m *DrySet, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decAccount      = decoder(func(m *Account, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decForwardRoot  = decoder(func(m *ForwardRoot, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decSubmitBatch  = decoder(func(m *SubmitBatch, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decBatch        = decoder(func(m *Batch, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decRoot         = decoder(func(m *Root, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decRootRelay    = decoder(func(m *RootRelay, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decBatchRef     = decoder(func(m *BatchRef, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decRoundList    = decoder(func(m *RoundList, b []byte, l Limits) error { return m.Unmarshal(b, l) })
	decClosingProp  = decoder(func(m *ClosingProposal, b []byte, l Limits) error { return m.Unmarshal(b, l.Rounds) })
	decClosing      = decoder(func(m *Closing, b []byte, l Limits) error { return m.Unmarshal(b, l.Rounds) })
	decListSig      = decoder(func(m *ListSig, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decClosingSig   = decoder(func(m *ClosingSig, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decPadAnswers   = decoder(func(m *Rows, b []byte, l Limits) error { return m.Unmarshal(b, l.Clients, l.K, l.Chunk) })
	decQuery        = decoder(func(m *Rows, b []byte, l Limits) error { return m.Unmarshal(b, 1, l.K, l.MaskSize) })
	decAnswer       = decoder(func(m *Rows, b []byte, l Limits) error { return m.Unmarshal(b, 1, l.K, l.Chunk) })
	decGetChunk     = decoder(func(m *Chunk, b []byte, _ Limits) error { return m.Unmarshal(b, 0) })
	decChunk        = decoder(func(m *Chunk, b []byte, l Limits) error { return m.Unmarshal(b, l.Chunk) })
	decIndexReq     = decoder(func(m *IndexReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decWindowReq    = decoder(func(m *WindowReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decWindow       = decoder(func(m *Window, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decState        = decoder(func(m *State, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decIndex        = decoder(func(m *Index, b []byte, l Limits) error { return m.Unmarshal(b, l.Index) })
	decAccuse       = decoder(func(m *Accuse, b []byte, l Limits) error { return m.Unmarshal(b, l.Onion) })
	decBlameReq     = decoder(func(m *BlameReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decBlameStep    = decoder(func(m *BlameStep, b []byte, l Limits) error { return m.Unmarshal(b, l.Onion) })
	decEquivocation = decoder(func(m *Equivocation, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDoubleSubmit = decoder(func(m *DoubleSubmit, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDupAbort     = decoder(func(m *DupAbort, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decDupProof     = decoder(func(m *DupProof, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decAttestReq    = decoder(func(m *AttestReq, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decAttest       = decoder(func(m *Attest, b []byte, _ Limits) error { return m.Unmarshal(b) })
	decCharge       = decoder(func(m *Charge, b []byte, _ Limits) error { return m.Unmarshal(b) })
)

func decEmpty(b []byte, _ Limits) (Body, error) {
	if len(b) != 0 {
		return nil, fmt.Errorf("wire: %d bytes in an empty body", len(b))
	}
	return Raw{}, nil
}

func decError(b []byte, _ Limits) (Body, error) {
	if len(b) > MaxErrorText {
		return nil, ErrTooLarge
	}
	return Raw(b), nil
}

// size is a cap that no epoch parameter changes.
func size(n int) func(Limits) int { return func(Limits) int { return n } }

// Caps shared by several messages.
var (
	ackCap    = size(16)
	sigCap    = size(256)       // one server signature (Sig)
	signedCap = size(256 << 20) // a signed descriptor, open or final, with every client entry
	listCap   = size(64 << 20)  // a signed request list of up to the cap on rows
	// one dry statement a slot
	drySetCap = func(l Limits) int { return 32 + 4 + 4 + l.Clients*DrySize }
	// one entry a slot
	accountCap = slotDigestsCap
	// an account's own entries and flag, and its forward root
	rootedAccountCap = func(l Limits) int { return 1 + 2*slotDigestsCap(l) + 4 }
	onionCap         = func(extra int) func(Limits) int { return func(l Limits) int { return l.Onion + extra } }
)

func req(p Proto, t Type, name string, c func(Limits) int, reply Type, d Decoder) Message {
	return Message{Type: t, Proto: p, Dir: Request, Name: name, Cap: c, Reply: reply, Decode: d}
}

func rep(p Proto, t Type, name string, c func(Limits) int, d Decoder) Message {
	return Message{Type: t, Proto: p, Dir: Reply, Name: name, Cap: c, Decode: d}
}

// Messages is the table, by protocol: its requests, then its replies.
var Messages = []Message{
	req(ProtoRoster, TypeHello, "Hello", size(4096), TypeHello, decHello),
	rep(ProtoRoster, TypeHello, "Hello", size(4096), decHello),

	req(ProtoEpoch, TypePrepare, "Prepare", size(MaxPrepare), TypeEntry, decPrepare),
	req(ProtoEpoch, TypeSignReq, "SignReq", signedCap, TypeSig, decSigned),
	req(ProtoEpoch, TypeSigned, "Signed", signedCap, TypeAck, decSigned),
	req(ProtoEpoch, TypeCloseReq, "CloseReq", size(64<<10), TypeRegList, decEpochRef),
	req(ProtoEpoch, TypeRegList, "RegList", size(256<<20), TypeAck, decRegList),
	// A primary's signed registration, to every chain server.
	req(ProtoEpoch, TypeForward, "Forward", size(64<<10), TypeReceipt, decForwarded),
	req(ProtoEpoch, TypeBadForward, "BadForward", size(64<<10), TypeAck, decForwarded),
	req(ProtoEpoch, TypeRoute, "Route", size(64+MaxRouteProof), TypeRoute, decRoute),
	req(ProtoEpoch, TypeStep, "Step", size(512<<20), TypeAck, decStep),
	req(ProtoEpoch, TypeAbort, "Abort", size(64<<10), TypeAck, decAbort),
	req(ProtoEpoch, TypeTimeoutVote, "TimeoutVote", size(MaxCertSize), TypeAck, decCert),
	req(ProtoEpoch, TypeCertReq, "CertReq", size(64), TypeCerts, decCertReq),
	req(ProtoEpoch, TypeCertPush, "CertPush", size(MaxCertSize), TypeAck, decCert),
	req(ProtoEpoch, TypeWouldServe, "WouldServe", size(MaxPrepare), TypeAck, decPrepare),
	req(ProtoEpoch, TypeAccuse, "Accuse", onionCap(4096), TypeAck, decAccuse),
	req(ProtoEpoch, TypeBlameReq, "BlameReq", size(64), TypeBlameStep, decBlameReq),
	req(ProtoEpoch, TypeDropReq, "DropReq", size(DropReqSize), TypeDropStep, decDropReq),
	req(ProtoEpoch, TypeDupAbort, "DupAbort", size(DupAbortSize(MaxServers)), TypeAck, decDupAbort),
	req(ProtoEpoch, TypeDupProof, "DupProof", size(64+DupProofSize), TypeAck, decDupProof),
	// Absence attestations and the evidence that charges a budget (§3).
	req(ProtoEpoch, TypeAttestReq, "AttestReq", size(AttestReqSize), TypeAttest, decAttestReq),
	req(ProtoEpoch, TypeCharge, "Charge", size(MaxChargeSize), TypeAck, decCharge),
	// The decoy window between the group's servers (node/window.go).
	req(ProtoEpoch, TypeWindowReq, "WindowReq", size(32+8), TypeWindow, decWindowReq),
	// Index pages to a server of the group catching up (node/catchup.go).
	req(ProtoEpoch, TypeIndexReq, "IndexReq", size(IndexReqSize), TypeIndex, decIndexReq),
	rep(ProtoEpoch, TypeEntry, "Entry", size(1<<20), decEntry),
	rep(ProtoEpoch, TypeSig, "Sig", sigCap, decSig),
	rep(ProtoEpoch, TypeRegList, "RegList", size(256<<20), decRegList),
	rep(ProtoEpoch, TypeReceipt, "Receipt", size(ReceiptSize), decReceipt),
	rep(ProtoEpoch, TypeRoute, "Route", size(64+MaxRouteProof), decRoute),
	rep(ProtoEpoch, TypeCerts, "Certs", size(MaxCertsSize), decCerts),
	// One onion (the caller gives the epoch's tighter cap).
	rep(ProtoEpoch, TypeBlameStep, "BlameStep", onionCap(4096), decBlameStep),
	rep(ProtoEpoch, TypeDropStep, "DropStep", size(DropStepSize), decDropStep),
	rep(ProtoEpoch, TypeAttest, "Attest", size(AttestSize), decAttest),
	rep(ProtoEpoch, TypeWindow, "Window", size(64<<20), decWindow),
	rep(ProtoEpoch, TypeIndex, "Index", size(MaxIndexPage), decIndex),
	rep(ProtoEpoch, TypeAck, "Ack", ackCap, decEmpty),

	req(ProtoRound, TypeSubmitBatch, "SubmitBatch", size(MaxFrame), TypeAck, decSubmitBatch),
	req(ProtoRound, TypeBatch, "Batch", size(MaxFrame), TypeAck, decBatch),
	req(ProtoRound, TypeProposal, "Proposal", listCap, TypeSig, decRoundList),
	req(ProtoRound, TypeRoundList, "RoundList", listCap, TypeAck, decRoundList),
	// A chain server's signature of S_0's proposal, to every chain server.
	req(ProtoRound, TypeListSig, "ListSig", size(ListSigSize), TypeAck, decListSig),
	req(ProtoRound, TypePadAnswers, "PadAnswers", size(MaxFrame), TypeAck, decPadAnswers),
	req(ProtoRound, TypeRoot, "Root", size(256), TypeAck, decRoot),
	req(ProtoRound, TypeRootRelay, "RootRelay", size(RootRelaySize(MaxServers)), TypeAck, decRootRelay),
	req(ProtoRound, TypeGetBatch, "GetBatch", size(BatchRefSize), TypeBatch, decBatchRef),
	req(ProtoRound, TypeLack, "Lack", size(AttestSize), TypeAck, decAttest),
	req(ProtoRound, TypeClosingProposal, "ClosingProposal", size(MaxClosing), TypeSig, decClosingProp),
	req(ProtoRound, TypeClosing, "Closing", size(MaxClosing), TypeAck, decClosing),
	req(ProtoRound, TypeClosingSig, "ClosingSig", size(ClosingSigSize), TypeAck, decClosingSig),
	req(ProtoRound, TypeEquivocation, "Equivocation", size(512), TypeAck, decEquivocation),
	req(ProtoRound, TypeDoubleSubmit, "DoubleSubmit", size(512), TypeAck, decDoubleSubmit),
	req(ProtoRound, TypeKeyEvidence, "KeyEvidence", size(512), TypeAck, decKeyEvidence),
	req(ProtoRound, TypeBadBatch, "BadBatch", size(MaxFrame), TypeAck, decBatch),
	req(ProtoRound, TypeGetChunk, "GetChunk", size(64), TypeChunk, decGetChunk),
	// A round's final list, to a server catching up (§7 v3).
	req(ProtoRound, TypeListReq, "ListReq", size(1024), TypeRoundList, decEpochRef),
	// A round S_0 could not fill: the primaries' dry statements (§5.4).
	req(ProtoRound, TypeDryReq, "DryReq", size(1024), TypeDrySet, decEpochRef),
	req(ProtoRound, TypeDrySet, "DrySet", drySetCap, TypeAck, decDrySet),
	rep(ProtoRound, TypeDrySet, "DrySet", drySetCap, decDrySet),
	// A primary's account of a round, to a chain server (§5.4).
	req(ProtoRound, TypeAccountReq, "AccountReq", size(1024), TypeAccount, decEpochRef),
	rep(ProtoRound, TypeAccount, "Account", rootedAccountCap, decAccount),
	req(ProtoRound, TypeForwardRoot, "ForwardRoot", accountCap, TypeAck, decForwardRoot),
	rep(ProtoRound, TypeSig, "Sig", sigCap, decSig),
	rep(ProtoRound, TypeChunk, "Chunk", func(l Limits) int { return l.Chunk + 64 }, decChunk),
	rep(ProtoRound, TypeBatch, "Batch", size(MaxFrame), decBatch),
	rep(ProtoRound, TypeRoundList, "RoundList", listCap, decRoundList),
	rep(ProtoRound, TypeAck, "Ack", ackCap, decEmpty),

	req(ProtoClient, TypeWaitOpen, "WaitOpen", size(1024), TypeSigned, decEpochRef),
	req(ProtoClient, TypeRegister, "Register", size(64<<10), TypeSigned, decRegister),
	req(ProtoClient, TypeSubmit, "Submit", onionCap(256), TypeOnionReceipt, decSubmit),
	req(ProtoClient, TypeHandover, "Handover", onionCap(256), TypeAck, decSubmit),
	req(ProtoClient, TypeDupQuery, "DupQuery", size(1024), TypeDupAbort, decEpochRef),
	req(ProtoClient, TypeDupProof, "DupProof", size(64+DupProofSize), TypeAck, decDupProof),
	req(ProtoClient, TypeWaitList, "WaitList", size(1024), TypeRoundList, decEpochRef),
	req(ProtoClient, TypeIndexReq, "IndexReq", size(IndexReqSize), TypeIndex, decIndexReq),
	req(ProtoClient, TypeReceiptSet, "ReceiptSet", size(ReceiptSetSize(0)), TypeReceiptSet, decReceiptSet),
	req(ProtoClient, TypeWindowReq, "WindowReq", size(32+8), TypeWindow, decWindowReq),
	// What the group is doing, for a client in no epoch (state.go).
	req(ProtoClient, TypeStateReq, "StateReq", ackCap, TypeState, decEmpty),
	// A receipt of a round the client's epoch ended before (§5.4).
	req(ProtoClient, TypeShowReceipt, "ShowReceipt", size(OnionReceiptSize), TypeAck, decOnionReceipt),
	rep(ProtoClient, TypeOnionReceipt, "OnionReceipt", size(OnionReceiptSize), decOnionReceipt),
	rep(ProtoClient, TypeSigned, "Signed", signedCap, decSigned),
	rep(ProtoClient, TypeDupAbort, "DupAbort", size(DupAbortSize(MaxServers)), decDupAbort),
	rep(ProtoClient, TypeRoundList, "RoundList", listCap, decRoundList),
	rep(ProtoClient, TypeIndex, "Index", size(MaxIndexPage), decIndex),
	rep(ProtoClient, TypeWindow, "Window", size(64<<20), decWindow),
	rep(ProtoClient, TypeState, "State", size(StateSize), decState),
	rep(ProtoClient, TypeReceiptSet, "ReceiptSet", size(ReceiptSetSize(MaxServers)), decReceiptSet),
	rep(ProtoClient, TypeAck, "Ack", ackCap, decEmpty),

	req(ProtoPIR, TypeQuery, "Query", func(l Limits) int { return 64 + l.K*(8+l.MaskSize) }, TypeAnswer, decQuery),
	// k rows of b bytes: the caller gives the epoch's cap.
	rep(ProtoPIR, TypeAnswer, "Answer", nil, decAnswer),

	rep(ProtoAny, TypeError, "Error", size(MaxErrorText), decError),
}

type tableKey struct {
	p Proto
	d Dir
	t Type
}

var table = func() map[tableKey]*Message {
	m := make(map[tableKey]*Message, len(Messages))
	for i := range Messages {
		x := &Messages[i]
		m[tableKey{x.Proto, x.Dir, x.Type}] = x
	}
	return m
}()

// Lookup returns the message of type t that goes way d on p.
func Lookup(p Proto, d Dir, t Type) (Message, bool) {
	m := table[tableKey{p, d, t}]
	if m == nil {
		return Message{}, false
	}
	return *m, true
}

// ErrNotTaken is a request type its protocol does not take.
var ErrNotTaken = errors.New("wire: message type not taken")

// Takes refuses a request of type t unless p takes it.
func Takes(p Proto, t Type) error {
	if table[tableKey{p, Request, t}] == nil {
		return fmt.Errorf("%w: the %s protocol takes no request of type %d", ErrNotTaken, p, t)
	}
	return nil
}

// RequestCap is the cap on a request of type t on p within l; 0 if p does
// not take it.
func RequestCap(p Proto, t Type, l Limits) int {
	m := table[tableKey{p, Request, t}]
	if m == nil {
		return 0
	}
	return m.Cap(l)
}

// ReplyTo returns the reply type of a request of type t on p and the cap
// on its body within l (0: the caller gives the epoch's).
func ReplyTo(p Proto, t Type, l Limits) (Type, int, error) {
	m := table[tableKey{p, Request, t}]
	if m == nil {
		return 0, 0, fmt.Errorf("%w: no reply known to %s message %d", ErrNotTaken, p, t)
	}
	r := table[tableKey{p, Reply, m.Reply}]
	if r == nil || r.Cap == nil {
		return m.Reply, 0, nil
	}
	return m.Reply, r.Cap(l), nil
}
