package proto

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// groupKeys are the decoded keys of one server's group entry that
// checked: its ElGamal key, its proof and X25519 key verified, its 2·R
// round keys decoded. Shared by every view that holds the entry: read
// only.
type groupKeys struct {
	X     *group.Element
	Y, Yp []*group.Element
}

// groupCacheElems bounds the elements the cache holds (about 3 MiB):
// a few epochs' entries at R = 256.
const groupCacheElems = 1 << 14

// groupCache remembers the group entries that checked, by a hash of the
// entry and of what its key proof binds (number, nonce): every party
// checks an epoch's descriptor several times (open and final, each
// message that carries it), an entry is the same in the open and the
// final descriptor, and decoding its round keys is most of a check (a
// process that runs several parties, as node's simulated networks do,
// checks each entry once). A check is a pure function of those bytes.
// Only entries that checked are kept; the oldest go first.
var groupCache struct {
	sync.Mutex
	m     map[[32]byte]*groupKeys
	order [][32]byte
	elems int
}

func groupEntryKey(d *wire.Descriptor, g *wire.GroupEntry) [32]byte {
	h := sha256.New()
	var b [8 + 32 + 4]byte
	binary.BigEndian.PutUint64(b[:], d.Number)
	copy(b[8:], d.Nonce[:])
	binary.BigEndian.PutUint32(b[40:], d.Params.Rounds)
	h.Write(b[:])
	h.Write(g.Marshal())
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// checkGroupEntry checks d's group entry j (the key, its proof bound to
// d's number and nonce and to the entry's peer id, the X25519 key, R
// non-identity round keys of each kind) and returns its decoded keys.
func checkGroupEntry(d *wire.Descriptor, j int) (*groupKeys, error) {
	g := &d.Group[j]
	R := int(d.Params.Rounds)
	k := groupEntryKey(d, g)
	groupCache.Lock()
	gk := groupCache.m[k]
	groupCache.Unlock()
	if gk != nil {
		return gk, nil
	}
	X, err := group.DecodeNonIdentity(g.X[:])
	if err != nil {
		return nil, fmt.Errorf("node: descriptor server %d key: %w", j, err)
	}
	if err := mix.VerifyKey(X, mix.KeyContext(d.Number, d.Nonce, g.PeerID), g.PoK); err != nil {
		return nil, fmt.Errorf("node: descriptor server %d key proof: %w", j, err)
	}
	if err := CheckX25519(g.D[:]); err != nil {
		return nil, fmt.Errorf("node: descriptor server %d x25519 key: %w", j, err)
	}
	if len(g.Y) != R || len(g.Yp) != R {
		return nil, fmt.Errorf("node: descriptor server %d has %d/%d round keys, want %d", j, len(g.Y), len(g.Yp), R)
	}
	gk = &groupKeys{X: X, Y: make([]*group.Element, R), Yp: make([]*group.Element, R)}
	for r := 0; r < R; r++ {
		if gk.Y[r], err = group.DecodeNonIdentity(g.Y[r][:]); err == nil {
			gk.Yp[r], err = group.DecodeNonIdentity(g.Yp[r][:])
		}
		if err != nil {
			return nil, fmt.Errorf("node: descriptor server %d round %d key: %w", j, r, err)
		}
	}
	groupCache.Lock()
	defer groupCache.Unlock()
	if groupCache.m == nil {
		groupCache.m = map[[32]byte]*groupKeys{}
	}
	if _, ok := groupCache.m[k]; !ok {
		groupCache.m[k] = gk
		groupCache.order = append(groupCache.order, k)
		groupCache.elems += 1 + 2*R
		for groupCache.elems > groupCacheElems && len(groupCache.order) > 1 {
			old := groupCache.order[0]
			groupCache.order = groupCache.order[1:]
			groupCache.elems -= 1 + 2*len(groupCache.m[old].Y)
			delete(groupCache.m, old)
		}
	}
	return gk, nil
}
