package node

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/pir"
)

// What every message may weigh comes from the message table
// (wire.Messages) at the ceilings below. A server reads a request only up
// to the cap of its type on its protocol (the serve side: epochCaps,
// roundCaps, clientCaps, pirCaps; 0 refuses the type), and a caller reads
// a reply only up to the cap replyTo gives for the request it sent.

// wireProto is each protocol's name in the table.
var wireProto = map[protocol.ID]wire.Proto{
	ProtoRoster: wire.ProtoRoster,
	ProtoEpoch:  wire.ProtoEpoch,
	ProtoRound:  wire.ProtoRound,
	ProtoClient: wire.ProtoClient,
	ProtoPIR:    wire.ProtoPIR,
}

// ceilings are the largest parameters a server takes, before it knows the
// epoch: the table's caps are computed from them.
var ceilings = func() wire.Limits {
	l := genericLimits()
	l.MaskSize = pir.MaskBytes(MaxRowsCap)
	return l
}()

func (s *Server) rosterCaps(t wire.Type) int { return wire.RequestCap(wire.ProtoRoster, t, ceilings) }
func (s *Server) epochCaps(t wire.Type) int  { return wire.RequestCap(wire.ProtoEpoch, t, ceilings) }
func (s *Server) roundCaps(t wire.Type) int  { return wire.RequestCap(wire.ProtoRound, t, ceilings) }
func (s *Server) clientCaps(t wire.Type) int { return wire.RequestCap(wire.ProtoClient, t, ceilings) }
func (s *Server) pirCaps(t wire.Type) int    { return wire.RequestCap(wire.ProtoPIR, t, ceilings) }

// reply is what a request gets back: its type and a cap on its body.
type reply struct {
	t   wire.Type
	max int
}

// replies is the reply of every request, by protocol and request type,
// read from the table once (a call looks it up).
var replies = func() map[protocol.ID]map[wire.Type]reply {
	out := map[protocol.ID]map[wire.Type]reply{}
	for id, p := range wireProto {
		out[id] = map[wire.Type]reply{}
		for _, m := range wire.Messages {
			if m.Proto != p || m.Dir != wire.Request {
				continue
			}
			rt, max, err := wire.ReplyTo(p, m.Type, ceilings)
			if err != nil {
				panic(err)
			}
			out[id][m.Type] = reply{rt, max}
		}
	}
	return out
}()

// replyTo returns the reply type and cap of a request of type t on proto.
func replyTo(proto protocol.ID, t wire.Type) (wire.Type, int, error) {
	r, ok := replies[proto][t]
	if !ok {
		return 0, 0, fmt.Errorf("node: no reply known to %s message %d", proto, t)
	}
	return r.t, r.max, nil
}

// takes refuses, before a handler's switch, a request type the table does
// not list for proto (wire.ErrNotTaken).
func takes(proto protocol.ID, t wire.Type) error {
	return wire.Takes(wireProto[proto], t)
}

// errUnhandled is a type the table lists that its handler's switch lacks:
// a bug here, not the peer's.
var errUnhandled = errors.New("node: no handler")

func unhandled(proto protocol.ID, t wire.Type) error {
	return fmt.Errorf("%w for %s message %d", errUnhandled, proto, t)
}
