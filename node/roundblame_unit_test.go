package node

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/store"
)

// TestStrikeDoubles: a culprit client's exclusion doubles on each repeat
// (1, 2, 4, … epochs), capped, per key.
func TestStrikeDoubles(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := &Server{}
		want := []uint64{11, 12, 14, 18, 26}
		for i, w := range want {
			if got := s.strikes.Strike("peer a", 10); got != w {
				t.Fatalf("strike %d: excluded up to %d, want %d", i+1, got, w)
			}
		}
		if got := s.strikes.Strike("ip 192.0.2.1", 10); got != 11 {
			t.Fatalf("another key starts at one epoch: %d", got)
		}
		for range 20 {
			s.strikes.Strike("peer a", 10)
		}
		if got := s.strikes.Strike("peer a", 10); got != 10+1<<blame.MaxExcludeShift {
			t.Fatalf("capped exclusion %d", got)
		}
	})
}

// TestBlamedServerSurvivesRestart: a culprit server recorded in the store
// stays out of the chain after a restart (the record is read back).
func TestBlamedServerSurvivesRestart(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		dir := t.TempDir()
		_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		bad, err := peer.IDFromPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := chunks.OpenStore(dir, store.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.PutBlame(store.BlameRecord{Round: 1, Role: "server", Server: 1, PeerID: bad.String(), Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		bs.Close()
		bs, err = chunks.OpenStore(dir, store.Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer bs.Close()
		s := &Server{store: bs, log: quietLogger()}
		s.rb.St, s.rb.Log = s.store, s.log
		if !s.rb.Has(bad) {
			t.Fatal("a recorded culprit server is not excluded after a restart")
		}
		_, pub2, _ := crypto.GenerateEd25519Key(rand.Reader)
		honest, _ := peer.IDFromPublicKey(pub2)
		if s.rb.Has(honest) {
			t.Fatal("an unrecorded server is excluded")
		}
	})
}
