package node

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// What every message may weigh. A server reads a request only up to the
// cap of its type on its protocol (the serve side: epochCaps, roundCaps,
// clientCaps, pirCaps; 0 refuses the type), and a caller reads a reply only
// up to the cap replyTo gives for the request it sent.

func (s *Server) rosterCaps(t wire.Type) int {
	if t == wire.TypeHello {
		return helloCap
	}
	return 0
}

func (s *Server) epochCaps(t wire.Type) int {
	switch t {
	case wire.TypePrepare, wire.TypeCloseReq, wire.TypeAbort:
		return 64 << 10
	case wire.TypeSignReq, wire.TypeSigned, wire.TypeRegList:
		return 256 << 20
	case wire.TypeForward, wire.TypeBadForward:
		return 64 << 10
	case wire.TypeRoute:
		return 64 + wire.MaxRouteProof
	case wire.TypeStep:
		return 512 << 20
	case wire.TypeAccuse:
		return mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 4096
	case wire.TypeBlameReq:
		return 64
	case wire.TypeDropReq:
		return wire.DropReqSize
	case wire.TypeTimeoutVote:
		return wire.MaxCertSize
	case wire.TypeWouldServe:
		return 64 << 10
	case wire.TypeCertReq:
		return 64
	}
	return dupEpochCaps(t)
}

func (s *Server) roundCaps(t wire.Type) int {
	switch t {
	case wire.TypeSubmitBatch, wire.TypeBatch, wire.TypePadAnswers, wire.TypeBadBatch:
		return wire.MaxFrame
	case wire.TypeProposal, wire.TypeRoundList:
		return 64 << 20
	case wire.TypeRoot:
		return 256
	case wire.TypeGetBatch, wire.TypeLack:
		return wire.BatchRefSize
	case wire.TypeClosingProposal, wire.TypeClosing:
		return wire.MaxClosing
	case wire.TypeEquivocation, wire.TypeDoubleSubmit, wire.TypeKeyEvidence:
		return 512
	case wire.TypeGetChunk:
		return 64
	}
	return 0
}

func (s *Server) clientCaps(t wire.Type) int {
	switch t {
	case wire.TypeWaitOpen, wire.TypeWaitList:
		return 1024
	case wire.TypeIndexReq:
		return wire.IndexReqSize
	case wire.TypeWindowReq:
		return 32 + 8 + 4 + 32*wire.MaxWindowItems
	case wire.TypeRegister:
		return 64 << 10
	case wire.TypeReceiptSet:
		return wire.ReceiptSetSize(0)
	case wire.TypeSubmit, wire.TypeHandover:
		return mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 256
	}
	return dupClientCaps(t)
}

func (s *Server) pirCaps(t wire.Type) int {
	if t == wire.TypeQuery {
		return 64 + MaxK*(8+pir.MaskBytes(MaxRowsCap))
	}
	return 0
}

// reply is what a request gets back: its type and a cap on its body.
type reply struct {
	t   wire.Type
	max int
}

// Reply caps that several requests share.
const (
	ackCap       = 16        // an empty acknowledgement
	helloCap     = 4096      // a roster hello, either way
	sigCap       = 256       // one server signature (Sig)
	signedCap    = 256 << 20 // a signed descriptor, open or final, with every client entry
	regListCap   = 256 << 20 // a primary's registrations
	roundListCap = 64 << 20  // a signed request list of up to MaxRowsCap entries
)

var ackReply = reply{wire.TypeAck, ackCap}

// replies is the reply of every request, by protocol and request type.
var replies = map[protocol.ID]map[wire.Type]reply{
	ProtoRoster: {
		wire.TypeHello: {wire.TypeHello, helloCap},
	},
	ProtoEpoch: {
		wire.TypePrepare:    {wire.TypeEntry, 1 << 20},
		wire.TypeSignReq:    {wire.TypeSig, sigCap},
		wire.TypeSigned:     ackReply,
		wire.TypeCloseReq:   {wire.TypeRegList, regListCap},
		wire.TypeRegList:    ackReply,
		wire.TypeForward:    {wire.TypeReceipt, wire.ReceiptSize}, // a primary's signed registration, to every chain server
		wire.TypeBadForward: ackReply,
		wire.TypeStep:       ackReply,
		wire.TypeRoute:      {wire.TypeRoute, 64 + wire.MaxRouteProof},
		wire.TypeAbort:      ackReply,
		wire.TypeAccuse:     ackReply,
		// certs.go: a vote is acknowledged; a request gets one page.
		wire.TypeTimeoutVote: ackReply,
		wire.TypeCertReq:     {wire.TypeCerts, wire.MaxCertsSize},
		wire.TypeWouldServe:  ackReply,
		// a step holds one onion (the caller gives the epoch's tighter cap).
		wire.TypeBlameReq: {wire.TypeBlameStep, mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 4096},
		wire.TypeDropReq:  {wire.TypeDropStep, wire.DropStepSize},
	},
	ProtoRound: {
		wire.TypeSubmitBatch:     ackReply,
		wire.TypeBatch:           ackReply,
		wire.TypeRoot:            ackReply,
		wire.TypeEquivocation:    ackReply,
		wire.TypeDoubleSubmit:    ackReply,
		wire.TypeKeyEvidence:     ackReply,
		wire.TypeBadBatch:        ackReply,
		wire.TypePadAnswers:      ackReply,
		wire.TypeProposal:        {wire.TypeSig, sigCap},
		wire.TypeRoundList:       ackReply,
		wire.TypeGetChunk:        {wire.TypeChunk, MaxChunkSize + 64},
		wire.TypeGetBatch:        {wire.TypeBatch, wire.MaxFrame},
		wire.TypeLack:            ackReply,
		wire.TypeClosingProposal: {wire.TypeSig, sigCap},
		wire.TypeClosing:         ackReply,
	},
	ProtoClient: {
		wire.TypeWaitOpen:   {wire.TypeSigned, signedCap},
		wire.TypeRegister:   {wire.TypeSigned, signedCap},
		wire.TypeReceiptSet: {wire.TypeReceiptSet, wire.ReceiptSetSize(wire.MaxServers)},
		wire.TypeSubmit:     ackReply,
		wire.TypeHandover:   ackReply,
		wire.TypeWaitList:   {wire.TypeRoundList, roundListCap},
		wire.TypeIndexReq:   {wire.TypeIndex, wire.MaxIndexPage},
		wire.TypeWindowReq:  {wire.TypeWindow, windowReplyCap},
	},
	ProtoPIR: {
		// k rows of b bytes: the caller gives the epoch's cap (request.Max).
		wire.TypeQuery: {wire.TypeAnswer, 0},
	},
}

// replyTo returns the reply type and cap of a request of type t on proto.
func replyTo(proto protocol.ID, t wire.Type) (wire.Type, int, error) {
	r, ok := replies[proto][t]
	if !ok {
		return 0, 0, fmt.Errorf("node: no reply known to %s message %d", proto, t)
	}
	return r.t, r.max, nil
}
