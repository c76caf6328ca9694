package index

import (
	"log/slog"
	"testing"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/manifests"
)

func testIndex(t *testing.T) (*Index, *int) {
	t.Helper()
	ran := new(int)
	ix := &Index{Store: chunks.NewMemStore(), log: slog.New(slog.DiscardHandler), goFn: func(f func()) { *ran++; f() }}
	return ix, ran
}

// TestListReq: a list held in memory is served first, else the stored
// one; a list neither holds is an error, not an empty list.
func TestListReq(t *testing.T) {
	ix, _ := testIndex(t)
	ep := [32]byte{7}
	if err := ix.Store.PutList(ep, 2, []byte("stored")); err != nil {
		t.Fatal(err)
	}
	ask := func(r uint32, held []byte) (string, error) {
		_, b, err := ix.OnListReq((&wire.EpochRef{Epoch: ep, Round: r}).Marshal(), func(ref wire.EpochRef) []byte {
			if ref.Epoch != ep || ref.Round != r {
				t.Fatalf("held asked for %x/%d", ref.Epoch[:2], ref.Round)
			}
			return held
		})
		return string(b), err
	}
	if b, err := ask(2, []byte("held")); err != nil || b != "held" {
		t.Fatalf("held list: %q %v", b, err)
	}
	if b, err := ask(2, nil); err != nil || b != "stored" {
		t.Fatalf("stored list: %q %v", b, err)
	}
	if b, err := ask(3, nil); err == nil {
		t.Fatalf("a list held nowhere served: %q", b)
	}
	if _, _, err := ix.OnListReq([]byte{1}, func(wire.EpochRef) []byte { return nil }); err == nil {
		t.Fatal("a malformed request served")
	}
}

// TestManifestsWake: the server's waits are woken when a round is indexed
// and only then; an epoch's end stores the waiting rounds in the
// background, and says so only when there were any.
func TestManifestsWake(t *testing.T) {
	ix, ran := testIndex(t)
	var m manifests.Index
	woke := 0
	wake := func() { woke++ }
	c := manifests.Cand{Pos: 1, ID: [32]byte{1}, Data: []byte{1}, Man: &chunker.Manifest{}}
	ix.TakeManifests(&m, [32]byte{9}, 8, 1024, 1, []manifests.Cand{c}, wake)
	if woke != 0 {
		t.Fatal("woken for round 1 while round 0 is not published")
	}
	ix.TakeManifests(&m, [32]byte{9}, 8, 1024, 0, nil, wake)
	if woke != 1 {
		t.Fatalf("rounds 0 and 1 indexed: woken %d times", woke)
	}
	var idle manifests.Index
	if ix.FlushManifests(&idle, [32]byte{8}) || *ran != 0 {
		t.Fatalf("an end with no round waiting: stored %d times", *ran)
	}
	ix.TakeManifests(&m, [32]byte{9}, 8, 1024, 3, []manifests.Cand{{Pos: 2, ID: [32]byte{3}, Data: []byte{1}, Man: &chunker.Manifest{}}}, wake)
	if woke != 1 {
		t.Fatal("woken for round 3 while round 2 is not published")
	}
	if !ix.FlushManifests(&m, [32]byte{9}) || *ran != 1 {
		t.Fatalf("an end with round 3 waiting: flushed, stored %d times", *ran)
	}
}

// TestUsage: the in-memory store counts nothing and applies no retention.
func TestUsage(t *testing.T) {
	ix, _ := testIndex(t)
	if ix.Usage() != 0 || ix.Prunes() {
		t.Fatalf("memory store: usage %d, prunes %v", ix.Usage(), ix.Prunes())
	}
}
