package proto

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"sort"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// cacheTestDescriptor is a descriptor of m servers with R rounds whose
// every entry checks.
func cacheTestDescriptor(t *testing.T, m int, R uint32) *wire.Descriptor {
	t.Helper()
	p := DefaultParams()
	p.Rounds = R
	d := &wire.Descriptor{Number: 7, Params: p.Wire()}
	rand.Read(d.Nonce[:])
	var ids [][]byte
	for range m {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, []byte(id))
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i], ids[j]) < 0 })
	for _, id := range ids {
		sk, err := mix.NewServerSecret(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pok, err := sk.ProveKey(mix.KeyContext(d.Number, d.Nonce, id), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		dk, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		g := wire.GroupEntry{PeerID: id, Nick: []byte("s"), PoK: pok}
		copy(g.X[:], sk.Public().Bytes())
		copy(g.D[:], dk.PublicKey().Bytes())
		for r := range R {
			var y, yp [32]byte
			copy(y[:], group.NewElement().ScalarBaseMult(group.ScalarFromUint64(uint64(3+2*r))).Bytes())
			copy(yp[:], group.NewElement().ScalarBaseMult(group.ScalarFromUint64(uint64(4+2*r))).Bytes())
			g.Y, g.Yp = append(g.Y, y), append(g.Yp, yp)
		}
		d.Group = append(d.Group, g)
	}
	return d
}

// TestGroupEntriesChecked: a descriptor checked a second time reuses its
// entries' decoded keys (the same elements), and an entry changed in any
// checked part after its first check is checked again and refused: a
// round key that is the identity, a proof for another number, another
// X25519 key of low order.
func TestGroupEntriesChecked(t *testing.T) {
	d := cacheTestDescriptor(t, 3, 8)
	v1, err := CheckDescriptor(d, DefaultPIRRate)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := CheckDescriptor(d, DefaultPIRRate)
	if err != nil {
		t.Fatal(err)
	}
	for j := range d.Group {
		if v1.ServerKeys[j] != v2.ServerKeys[j] || v1.Y[j][5] != v2.Y[j][5] || v1.Yp[j][7] != v2.Yp[j][7] {
			t.Errorf("entry %d decoded again", j)
		}
	}
	bad := map[string]func(d *wire.Descriptor){
		"identity round key": func(d *wire.Descriptor) { d.Group[1].Y[3] = [32]byte{} },
		"other number":       func(d *wire.Descriptor) { d.Number++ },
		"other nonce":        func(d *wire.Descriptor) { d.Nonce[0] ^= 1 },
		"low-order x25519":   func(d *wire.Descriptor) { d.Group[2].D = [32]byte{} },
		"round keys cut":     func(d *wire.Descriptor) { d.Group[0].Y = d.Group[0].Y[:7] },
	}
	for name, f := range bad {
		c := *d
		c.Group = append([]wire.GroupEntry(nil), d.Group...)
		for j := range c.Group {
			c.Group[j].Y = append([][32]byte(nil), d.Group[j].Y...)
		}
		f(&c)
		if _, err := CheckDescriptor(&c, DefaultPIRRate); err == nil {
			t.Errorf("%s: accepted after the valid descriptor was checked", name)
		}
	}
}

// TestGroupCacheBounded: the cache holds at most groupCacheElems
// elements (the entry just added excepted), the oldest going first.
func TestGroupCacheBounded(t *testing.T) {
	const R = 256
	for range groupCacheElems/(3*(1+2*R)) + 2 {
		if _, err := CheckDescriptor(cacheTestDescriptor(t, 3, R), DefaultPIRRate); err != nil {
			t.Fatal(err)
		}
	}
	groupCache.Lock()
	defer groupCache.Unlock()
	n := 0
	for _, gk := range groupCache.m {
		n += 1 + len(gk.Y) + len(gk.Yp)
	}
	if n != groupCache.elems || n > groupCacheElems {
		t.Errorf("%d elements held (counted %d), bound %d", n, groupCache.elems, groupCacheElems)
	}
	if len(groupCache.m) != len(groupCache.order) {
		t.Errorf("%d entries, %d in order", len(groupCache.m), len(groupCache.order))
	}
}
