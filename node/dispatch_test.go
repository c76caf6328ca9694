package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestDispatchFollowsTable: each protocol's handler refuses every type the
// message table does not list for it (wire.ErrNotTaken), and has a case for
// every type it lists (an empty body fails in its case, never for want of
// one).
func TestDispatchFollowsTable(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := beaconServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		handlers := map[protocol.ID]transport.HandlerFunc{
			ProtoRoster: s.hellos.OnHello, ProtoEpoch: s.handleEpoch, ProtoRound: s.handleRound, ProtoClient: s.handleClient,
			ProtoPIR: func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
				rt, _, err := s.ix.OnPIR(ctx, from, t, body)
				return rt, nil, err
			},
		}
		if len(handlers) != len(transport.WireProto) {
			t.Fatalf("%d handlers for %d protocols", len(handlers), len(transport.WireProto))
		}
		served := map[wire.Proto]bool{wire.ProtoAny: true}
		for _, p := range transport.WireProto {
			served[p] = true
		}
		for _, m := range wire.Messages {
			if !served[m.Proto] {
				t.Errorf("the table's %s protocol has no handler here", m.Proto)
			}
		}
		for pid, h := range handlers {
			for ty := range 256 {
				m, listed := wire.Lookup(transport.WireProto[pid], wire.Request, wire.Type(ty))
				_, _, err := h(ctx, s.ID(), wire.Type(ty), nil)
				// An empty body is malformed, but for a request that has
				// none (StateReq): that one is answered.
				var emptyErr error
				if listed {
					_, emptyErr = m.Decode(nil, proto.GenericLimits())
				}
				switch {
				case listed && ((err == nil && emptyErr != nil) || errors.Is(err, transport.ErrUnhandled) || errors.Is(err, wire.ErrNotTaken)):
					t.Errorf("%s: type %d, listed in the table: %v", pid, ty, err)
				case !listed && !errors.Is(err, wire.ErrNotTaken):
					t.Errorf("%s: type %d, not in the table: %v, want a refusal", pid, ty, err)
				}
			}
		}
	})
}
