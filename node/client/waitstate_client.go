package client

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A client's view of its group's state between epochs (waitstate.go).

// askState asks the primary for the group's state at random intervals
// until ctx ends, keeping the last answer for WaitReason.
func (c *Client) askState(ctx context.Context) {
	for {
		// Uniform in [½, 1½]·stateEvery, from fresh randomness.
		d := proto.StateEvery/2 + time.Duration(rand.Int64N(int64(proto.StateEvery)))
		rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeStateReq, Timeout: transport.ShortTimeout})
		if err == nil {
			var st wire.State
			if st.Unmarshal(rep) == nil {
				c.notes.SetState(st)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
}
