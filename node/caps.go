package node

import (
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

func (s *Server) epochCaps(t wire.Type) int {
	switch t {
	case wire.TypePrepare, wire.TypeCloseReq, wire.TypeAbort:
		return 64 << 10
	case wire.TypeSignReq, wire.TypeSigned, wire.TypeRegList:
		return 256 << 20
	case wire.TypeRegister:
		return 64 << 10
	case wire.TypeRoute:
		return 64 + wire.MaxRouteProof
	case wire.TypeStep:
		return 512 << 20
	case wire.TypeAccuse:
		return mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 4096
	case wire.TypeBlameReq:
		return 64
	}
	return 0
}

func (s *Server) roundCaps(t wire.Type) int {
	switch t {
	case wire.TypeSubmitBatch, wire.TypeBatch, wire.TypePadAnswers:
		return wire.MaxFrame
	case wire.TypeProposal, wire.TypeRoundList:
		return 64 << 20
	case wire.TypeRoot:
		return 256
	case wire.TypeGetChunk:
		return 64
	}
	return 0
}

func (s *Server) clientCaps(t wire.Type) int {
	switch t {
	case wire.TypeWaitOpen, wire.TypeWaitList, wire.TypeIndexReq:
		return 1024
	case wire.TypeRegister:
		return 64 << 10
	case wire.TypeSubmit:
		return mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers) + 256
	}
	return 0
}

func (s *Server) pirCaps(t wire.Type) int {
	if t == wire.TypeQuery {
		return 64 + MaxK*(8+pir.MaskBytes(MaxRowsCap))
	}
	return 0
}
