package node

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// TestHeadersOnStreamReserveLittle (§3 "Identify first, work later"):
// frame headers that declare bodies up to their caps, sent on streams held
// open, cost a server what arrived, not what they claim: 64 submission
// headers on the client protocol from a peer with no role, and 4 batch
// headers of 1 GiB on the round protocol from a peer that said hello as a
// server (it reserved 276 MiB and 4 GiB, held for the streams' deadlines).
func TestHeadersOnStreamReserveLittle(t *testing.T) {
	s := beaconServer(t)
	h, err := newHost(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.AddAddrs(s.ID(), s.h.Addrs(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name    string
		proto   protocol.ID
		typ     wire.Type
		streams int
		server  bool
	}{
		{"client submissions from a peer with no role", ProtoClient, wire.TypeSubmit, 64, false},
		{"round batches from a roster server", ProtoRound, wire.TypeBatch, 4, true},
	} {
		if c.server {
			s.roster.saw(h.ID(), "hostile", nil)
		}
		declared := clientCaps(c.typ)
		if c.proto == ProtoRound {
			declared = s.peers.Caps(roundCaps)(h.ID(), c.typ)
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var streams []transport.Stream
		for range c.streams {
			st, err := h.NewStream(ctx, s.ID(), c.proto)
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, st)
			hd := []byte{byte(c.typ), 0, 0, 0, 0}
			binary.BigEndian.PutUint32(hd[1:], uint32(declared))
			if _, err := st.Write(append(hd, make([]byte, 1000)...)); err != nil {
				t.Fatal(err)
			}
		}
		// The server reads as bytes arrive; give it time to take what it
		// would for each header.
		var grew uint64
		limit := uint64(c.streams) * 4 * wire.BodyStart
		// Two seconds of the streams' work, or less once it is too much.
		_ = wait.UntilEvery(ctx, 2*time.Second, 100*time.Millisecond, func() bool {
			var now runtime.MemStats
			runtime.ReadMemStats(&now)
			grew = now.TotalAlloc - before.TotalAlloc
			return grew > 16*limit
		})
		for _, st := range streams {
			st.Reset()
		}
		t.Logf("%s: %d headers of %d bytes, 1000 sent each: %d bytes allocated in this process", c.name, c.streams, declared, grew)
		if grew > 16*limit {
			t.Errorf("%s: %d headers grew the heap by %d bytes", c.name, c.streams, grew)
		}
	}
}
