package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
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
		handlers := map[protocol.ID]handlerFunc{
			ProtoRoster: s.handleHello, ProtoEpoch: s.handleEpoch, ProtoRound: s.handleRound, ProtoClient: s.handleClient,
			ProtoPIR: func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
				rt, _, err := s.handlePIR(ctx, from, t, body)
				return rt, nil, err
			},
		}
		if len(handlers) != len(wireProto) {
			t.Fatalf("%d handlers for %d protocols", len(handlers), len(wireProto))
		}
		served := map[wire.Proto]bool{wire.ProtoAny: true}
		for _, p := range wireProto {
			served[p] = true
		}
		for _, m := range wire.Messages {
			if !served[m.Proto] {
				t.Errorf("the table's %s protocol has no handler here", m.Proto)
			}
		}
		for proto, h := range handlers {
			for ty := range 256 {
				m, listed := wire.Lookup(wireProto[proto], wire.Request, wire.Type(ty))
				_, _, err := h(ctx, s.ID(), wire.Type(ty), nil)
				// An empty body is malformed, but for a request that has
				// none (StateReq): that one is answered.
				var emptyErr error
				if listed {
					_, emptyErr = m.Decode(nil, genericLimits())
				}
				switch {
				case listed && ((err == nil && emptyErr != nil) || errors.Is(err, errUnhandled) || errors.Is(err, wire.ErrNotTaken)):
					t.Errorf("%s: type %d, listed in the table: %v", proto, ty, err)
				case !listed && !errors.Is(err, wire.ErrNotTaken):
					t.Errorf("%s: type %d, not in the table: %v, want a refusal", proto, ty, err)
				}
			}
		}
	})
}
