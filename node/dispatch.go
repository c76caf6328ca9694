package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The server's two stream protocols of the chain, /riffle/1/epoch and
// /riffle/1/round: each message type to the part that takes it.

var ack = []byte{}

// handleEpoch serves /riffle/1/epoch.
func (s *Server) handleEpoch(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(ProtoEpoch, t); err != nil {
		return 0, nil, err
	}
	switch t {
	case wire.TypePrepare:
		return s.onPrepare(from, body)
	case wire.TypeSignReq:
		return s.onSignReq(from, body)
	case wire.TypeSigned:
		return s.onSigned(from, body)
	case wire.TypeForward:
		return s.regs.OnForwarded(from, body)
	case wire.TypeBadForward:
		return s.onBadForward(from, body)
	case wire.TypeCloseReq:
		return s.regs.OnClose(from, body)
	case wire.TypeRegList:
		return s.regs.OnRegList(from, body)
	case wire.TypeStep:
		return s.onStep(from, body)
	case wire.TypeRoute:
		return s.onRoute(ctx, from, body)
	case wire.TypeDupAbort:
		return s.dups.OnAbort(from, body)
	case wire.TypeDupProof:
		return s.dups.OnProof(ctx, from, body, false)
	case wire.TypeAccuse:
		return s.walks().OnAccuse(from, body)
	case wire.TypeBlameReq:
		return s.walks().OnStepReq(ctx, from, body)
	case wire.TypeDropReq:
		return s.walks().OnDropReq(ctx, from, body)
	case wire.TypeAbort:
		return s.evs().OnAbort(from, body)
	case wire.TypeTimeoutVote:
		return s.cert.OnTimeoutVote(from, body)
	case wire.TypeCertReq:
		return s.cert.OnCertReq(from, body)
	case wire.TypeCertPush:
		return s.cert.OnCertPush(from, body)
	case wire.TypeWouldServe:
		return s.would.OnWouldServe(ctx, from, body)
	case wire.TypeWindowReq:
		return s.wins.OnServerReq(ctx, from, body)
	case wire.TypeIndexReq:
		return s.ix.Pages.OnServerIndexReq(ctx, from, body)
	case wire.TypeAttestReq:
		return s.onAttestReq(from, body)
	case wire.TypeCharge:
		return s.evs().OnCharge(from, body)
	}
	return 0, nil, transport.Unhandled(ProtoEpoch, t)
}

// handleRound serves /riffle/1/round (servers only).
func (s *Server) handleRound(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(ProtoRound, t); err != nil {
		return 0, nil, err
	}
	if from != s.h.ID() && s.roster.get(from) == nil {
		return 0, nil, errors.New("node: round messages are for chain servers")
	}
	switch t {
	case wire.TypeSubmitBatch:
		var b wire.SubmitBatch
		if err := b.Unmarshal(body, proto.GenericLimits()); err != nil {
			return 0, nil, err
		}
		if err := s.submits.takeSubs(from, body, &b); err != nil {
			return 0, nil, err
		}
		return wire.TypeAck, ack, nil
	case wire.TypeBatch:
		return s.mixing.onBatch(from, body)
	case wire.TypeProposal:
		return s.onProposal(ctx, from, body)
	case wire.TypeRoundList:
		return s.onRoundList(from, body)
	case wire.TypeListSig:
		return s.onListSig(from, body)
	case wire.TypePadAnswers:
		return s.ix.PIR.OnPadAnswers(from, body)
	case wire.TypeRoot:
		return s.onRoot(from, body)
	case wire.TypeRootRelay:
		return s.onRootRelay(from, body)
	case wire.TypeGetBatch:
		return s.onGetBatch(from, body)
	case wire.TypeLack:
		return s.onLack(from, body)
	case wire.TypeClosingProposal:
		return s.closing.onProposal(ctx, from, body)
	case wire.TypeClosing:
		return s.closing.onRecord(from, body)
	case wire.TypeClosingSig:
		return s.closing.onSig(from, body)
	case wire.TypeEquivocation:
		return s.walks().OnEquivocation(from, body)
	case wire.TypeDoubleSubmit:
		return s.walks().OnDoubleSubmit(from, body)
	case wire.TypeKeyEvidence:
		return s.evs().OnKeyEvidence(from, body)
	case wire.TypeBadBatch:
		return s.walks().OnBadBatch(from, body)
	case wire.TypeGetChunk:
		var c wire.Chunk
		if err := c.Unmarshal(body, 0); err != nil {
			return 0, nil, err
		}
		data, err := s.store.GetChunk(c.ID)
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: data}).Marshal(), nil
	case wire.TypeListReq:
		if p := s.heldProposal(from, body); p != nil {
			return wire.TypeRoundList, p, nil
		}
		return s.ix.OnListReq(s.listReqBody(body), catchEnv{s}.HeldList)
	case wire.TypeDryReq:
		return s.onDryReq(from, body)
	case wire.TypeDrySet:
		return s.onDrySet(from, body)
	case wire.TypeAccountReq:
		return s.onAccountReq(from, body)
	case wire.TypeForwardRoot:
		return s.onForwardRoot(from, body)
	}
	return 0, nil, transport.Unhandled(ProtoRound, t)
}
