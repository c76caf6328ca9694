package indexsync

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// manifest is the root manifest chunk of a small file named name.
func manifest(t *testing.T, name string) ([32]byte, []byte) {
	t.Helper()
	var last []byte
	_, err := chunker.Share(bytes.NewReader([]byte("contents of "+name)), name, "", proto.MinChunkSize, chunker.ShareOptions{}, func(_ chunker.ID, b []byte) error {
		last = bytes.Clone(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return chunker.Sum(last), last
}

func group(ids ...peer.ID) []wire.GroupEntry {
	var g []wire.GroupEntry
	for _, p := range ids {
		g = append(g, wire.GroupEntry{PeerID: []byte(p)})
	}
	return g
}

// TestAtOthersSkipsPrimaryAndSelf (§6.4 v3): the chain's other servers
// are every server of the group but the primary and this client, each
// told where it listens.
func TestAtOthersSkipsPrimaryAndSelf(t *testing.T) {
	h := &server{primary: prim}
	ic := &Copy{Host: h}
	asked := make(chan peer.ID, 8)
	ic.AtOthers(group(prim, self, other, third), func(p peer.ID) { asked <- p })
	close(asked)
	var got []peer.ID
	for p := range asked {
		got = append(got, p)
	}
	slices.Sort(got)
	slices.Sort(h.listens)
	want := []peer.ID{other, third}
	slices.Sort(want)
	if !slices.Equal(got, want) || !slices.Equal(h.listens, want) {
		t.Fatalf("asked %v, told %v; want %v", got, h.listens, want)
	}
}

// TestSyncNamedGaps (§6.4 v3, "Checkpoints"): a named manifest the
// primary's copy lacks is asked of the others; with the primary's sync
// through, each id it lacked is a gap, and with its sync failed, each id
// another server gave.
func TestSyncNamedGaps(t *testing.T) {
	idA, a := manifest(t, "a")
	idB, b := manifest(t, "b")
	idC, _ := manifest(t, "c") // no server has it
	for _, c := range []struct {
		name      string
		primaryUp bool
		wantGaps  [][32]byte
	}{
		{"primary through", true, [][32]byte{idB, idC}},
		{"primary failed", false, [][32]byte{idB}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &server{primary: prim, serve: func(p peer.ID, cur uint64) (*wire.Index, error) {
				switch {
				case p == prim && !c.primaryUp:
					return nil, errors.New("stalled")
				case p == prim:
					return &wire.Index{Next: 1, Manifests: [][]byte{a}}, nil
				}
				// The other server has b, and a chunk no get could open.
				return &wire.Index{Next: 1, Manifests: [][]byte{b, bytes.Repeat([]byte("not a manifest "), 4)}}, nil
			}}
			ic := &Copy{Host: h}
			held, gaps := ic.SyncNamed(context.Background(), group(prim, other), [][32]byte{idA, idB, idC})
			wantHeld := 2
			if !c.primaryUp {
				wantHeld = 1 // a came from the primary only
			}
			if len(held) != wantHeld || !bytes.Equal(held[idB], b) {
				t.Fatalf("held %d manifests, want %d with b", len(held), wantHeld)
			}
			if !slices.Equal(gaps, c.wantGaps) {
				t.Fatalf("gaps %x, want %x", gaps, c.wantGaps)
			}
			ic.Lock()
			defer ic.Unlock()
			if _, ok := ic.Manifest(idB); !ok {
				t.Fatal("the manifest the others gave is not in the copy")
			}
		})
	}
}
