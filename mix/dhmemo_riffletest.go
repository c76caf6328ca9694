//go:build riffletest

package mix

import (
	"sync"
	"sync/atomic"

	"github.com/riffle-net/riffle/internal/group"
)

// A process that runs a whole network (node's tests) derives every layer
// key twice, the client from u·Y and the server from y·U: the same
// element, the Diffie–Hellman function of the pair's public elements
// U = u·G and Y = y·G, each party's own computed from its own secret. With
// SetDHMemo(true) the first keeps ENC(Z) under ENC(U) || ENC(Y) and the
// second takes it; a party whose secret does not match the other's view
// (a cheat's keys) names another pair and computes its own. The two
// scalar multiplications a pair and round were the larger part of a
// simulated epoch's CPU.
var dhMemo struct {
	on       atomic.Bool
	hits     atomic.Int64
	mu       sync.Mutex
	cur, old map[[2 * group.ElementSize]byte][group.ElementSize]byte
}

// dhMemoGen bounds a generation: shares whose second party never comes
// (an onion that never reached a server) leave with the older one.
const dhMemoGen = 1 << 14

// SetDHMemo(true), called before any key is derived, turns the memo on
// for this process (riffletest builds only).
func SetDHMemo(on bool) { dhMemo.on.Store(on) }

// DHMemoHits is how many layer-key shares were taken from the memo.
func DHMemoHits() int64 { return dhMemo.hits.Load() }

func dhMemoOn() bool { return dhMemo.on.Load() }

func dhPair(u, y []byte) *[2 * group.ElementSize]byte {
	var k [2 * group.ElementSize]byte
	copy(k[copy(k[:], u):], y)
	return &k
}

// dhMemoTake moves the share of pair k into z: a share is taken once.
func dhMemoTake(k *[2 * group.ElementSize]byte, z *[group.ElementSize]byte) bool {
	dhMemo.mu.Lock()
	defer dhMemo.mu.Unlock()
	for _, m := range []map[[2 * group.ElementSize]byte][group.ElementSize]byte{dhMemo.cur, dhMemo.old} {
		if v, ok := m[*k]; ok {
			*z = v
			delete(m, *k)
			dhMemo.hits.Add(1)
			return true
		}
	}
	return false
}

func dhMemoPut(k *[2 * group.ElementSize]byte, z *[group.ElementSize]byte) {
	dhMemo.mu.Lock()
	defer dhMemo.mu.Unlock()
	if dhMemo.cur == nil || len(dhMemo.cur) >= dhMemoGen {
		dhMemo.old, dhMemo.cur = dhMemo.cur, make(map[[2 * group.ElementSize]byte][group.ElementSize]byte)
	}
	dhMemo.cur[*k] = *z
}
