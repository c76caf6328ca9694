package node

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// TestRoundWindow: a server keeps the bulk state of the last roundsKept
// rounds only, and takes no state for rounds that are over or too far
// ahead, so that an epoch's memory does not grow with its rounds.
func TestRoundWindow(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(256)
		v := &proto.View{Desc: &wire.Descriptor{Params: p.Wire()}}
		e := &sepoch{v: v, final: v}
		e.rounds = map[uint32]*sround{}
		var pool transport.BufPool
		for r := uint32(0); r < 21; r++ {
			x := e.round(r)
			body := make([]byte, transport.PoolMin)
			x.subs[0] = wire.Submit{Onion: body[10:100]}
			x.bodies = append(x.bodies, body)
			if _, over, err := e.pir.Query(r, 0, [][]byte{make([]byte, 100)}); over || err != nil {
				t.Fatalf("round %d's query: over %v, %v", r, over, err)
			}
			e.listed(&pool, r)
		}
		// The dropped rounds' frames went back to the pool.
		if pool.Free() != int(e.pruned)*transport.PoolMin {
			t.Fatalf("pool holds %d bytes, want the %d dropped rounds' frames", pool.Free(), e.pruned)
		}
		if e.listHigh != 21 || e.pruned != 21-roundsKept {
			t.Fatalf("listHigh %d pruned %d, want 21 and %d", e.listHigh, e.pruned, 21-roundsKept)
		}
		for r := uint32(0); r < 21; r++ {
			x := e.rounds[r]
			queries, _, _, _ := e.pir.Sizes(r)
			gone := len(x.subs) == 0 && queries == 0 && x.pruned
			if want := r < e.pruned; gone != want {
				t.Fatalf("round %d: dropped %v, want %v", r, gone, want)
			}
		}
		ahead := e.listHigh + uint32(p.W) + roundsAhead
		for r, ok := range map[uint32]bool{0: false, e.pruned - 1: false, e.pruned: true, 20: true, ahead - 1: true, ahead: false, 1 << 30: false} {
			if err := e.admit(r); (err == nil) != ok {
				t.Errorf("admit(%d) = %v, want ok %v", r, err, ok)
			}
		}
	})
}
