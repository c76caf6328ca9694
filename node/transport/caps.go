package transport

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/pir"
)

// What every message may weigh comes from the message table
// (wire.Messages) at the Ceilings below. A server reads a request only up
// to the cap of its type on its protocol (the serve side: epochCaps,
// roundCaps, clientCaps, pirCaps; 0 refuses the type), and a caller reads
// a reply only up to the cap ReplyTo gives for the request it sent.

// WireProto is each protocol's name in the table.
var WireProto = map[protocol.ID]wire.Proto{
	ProtoRoster: wire.ProtoRoster,
	ProtoEpoch:  wire.ProtoEpoch,
	ProtoRound:  wire.ProtoRound,
	ProtoClient: wire.ProtoClient,
	ProtoPIR:    wire.ProtoPIR,
}

// Ceilings are the largest parameters a server takes, before it knows the
// epoch: the table's caps are computed from them.
var Ceilings = func() wire.Limits {
	l := proto.GenericLimits()
	l.MaskSize = pir.MaskBytes(proto.MaxRowsCap)
	return l
}()

// Reply is what a request gets back: its type and a cap on its body.
type Reply struct {
	T   wire.Type
	Max int
}

// Replies is the reply of every request, by protocol and request type,
// read from the table once (a call looks it up).
var Replies = func() map[protocol.ID]map[wire.Type]Reply {
	out := map[protocol.ID]map[wire.Type]Reply{}
	for id, p := range WireProto {
		out[id] = map[wire.Type]Reply{}
		for _, m := range wire.Messages {
			if m.Proto != p || m.Dir != wire.Request {
				continue
			}
			rt, max, err := wire.ReplyTo(p, m.Type, Ceilings)
			if err != nil {
				panic(err)
			}
			out[id][m.Type] = Reply{rt, max}
		}
	}
	return out
}()

// ReplyTo returns the reply type and cap of a request of type t on proto.
func ReplyTo(proto protocol.ID, t wire.Type) (wire.Type, int, error) {
	r, ok := Replies[proto][t]
	if !ok {
		return 0, 0, fmt.Errorf("node: no reply known to %s message %d", proto, t)
	}
	return r.T, r.Max, nil
}

// Takes refuses, before a handler's switch, a request type the table does
// not list for proto (wire.ErrNotTaken).
func Takes(proto protocol.ID, t wire.Type) error {
	return wire.Takes(WireProto[proto], t)
}

// ErrUnhandled is a type the table lists that its handler's switch lacks:
// a bug here, not the peer's.
var ErrUnhandled = errors.New("node: no handler")

func Unhandled(proto protocol.ID, t wire.Type) error {
	return fmt.Errorf("%w for %s message %d", ErrUnhandled, proto, t)
}
