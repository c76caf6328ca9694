package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// TestReplyTable: every request a node sends has a reply in the table with
// a cap (PIR's is per epoch), and the server side of its protocol accepts
// the request type; an unknown request has no reply.
func TestReplyTable(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		serveCaps := map[protocol.ID]func(wire.Type) int{
			ProtoRoster: rosterCaps, ProtoEpoch: epochCaps, ProtoRound: roundCaps,
			ProtoClient: clientCaps, ProtoPIR: pirCaps,
		}
		if len(transport.Replies) != len(serveCaps) {
			t.Fatalf("reply table covers %d protocols, servers serve %d", len(transport.Replies), len(serveCaps))
		}
		for proto, types := range transport.Replies {
			for rt, r := range types {
				if serveCaps[proto](rt) <= 0 {
					t.Errorf("%s: servers refuse request type %d that the reply table lists", proto, rt)
				}
				if r.Max <= 0 && proto != ProtoPIR {
					t.Errorf("%s: reply to %d has no cap", proto, rt)
				}
				if want, _, err := transport.ReplyTo(proto, rt); err != nil || want != r.T {
					t.Errorf("%s: replyTo(%d) = %d, %v", proto, rt, want, err)
				}
			}
		}
		if _, _, err := transport.ReplyTo(ProtoRound, wire.TypeHello); err == nil {
			t.Fatal("a hello on the round protocol has a reply")
		}
	})
}
