package node

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"sort"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// scalarReader yields one chosen scalar to mix.NewServerSecret (its
// 64-byte uniform read of the canonical encoding and 32 zero bytes
// reduces to the scalar itself), then crypto/rand.
type scalarReader struct{ first []byte }

func (r *scalarReader) Read(p []byte) (int, error) {
	if r.first != nil && len(p) == 64 {
		n := copy(p, r.first)
		clear(p[n:])
		r.first = nil
		return len(p), nil
	}
	return rand.Read(p)
}

// A descriptor whose servers' keys are each valid, with a proof of
// knowledge, but sum to the identity over a range (X_2 = −(X_0 + X_1), so
// A_{0,2} = 0: two colluding servers can make it) is refused by
// checkDescriptor, which clients (at registration) and servers run on
// every descriptor (docs/protocol.md §4).
func TestDescriptorAggregateIdentity(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(2).Wire()
		build := func(colluding bool) *wire.Descriptor {
			d := &wire.Descriptor{Number: 7, Params: p}
			rand.Read(d.Nonce[:])
			var xs []*group.Scalar
			var ids [][]byte
			for range 3 {
				k := newPeerKey(t)
				ids = append(ids, []byte(k.id))
			}
			sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i], ids[j]) < 0 })
			for j := range 3 {
				var r *scalarReader
				if colluding && j == 2 {
					x := group.NewScalar().Add(xs[0], xs[1])
					x.Negate(x)
					r = &scalarReader{first: x.Bytes()}
				} else {
					x, err := group.RandomScalar(rand.Reader)
					if err != nil {
						t.Fatal(err)
					}
					xs = append(xs, x)
					r = &scalarReader{first: x.Bytes()}
				}
				sk, err := mix.NewServerSecret(r)
				if err != nil {
					t.Fatal(err)
				}
				pok, err := sk.ProveKey(mix.KeyContext(d.Number, d.Nonce, ids[j]), rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				dk, err := ecdh.X25519().GenerateKey(rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				g := wire.GroupEntry{PeerID: ids[j], Nick: []byte("s"), PoK: pok}
				copy(g.X[:], sk.Public().Bytes())
				copy(g.D[:], dk.PublicKey().Bytes())
				for range p.Rounds {
					var y, yp [32]byte
					copy(y[:], group.NewElement().ScalarBaseMult(group.ScalarFromUint64(3)).Bytes())
					copy(yp[:], group.NewElement().ScalarBaseMult(group.ScalarFromUint64(5)).Bytes())
					g.Y, g.Yp = append(g.Y, y), append(g.Yp, yp)
				}
				d.Group = append(d.Group, g)
			}
			return d
		}
		if _, err := proto.CheckDescriptor(build(false), DefaultPIRRate); err != nil {
			t.Fatalf("honest descriptor refused: %v", err)
		}
		if _, err := proto.CheckDescriptor(build(true), DefaultPIRRate); !errors.Is(err, group.ErrIdentity) {
			t.Fatalf("descriptor with A_{0,2} = identity: %v", err)
		}
	})
}
