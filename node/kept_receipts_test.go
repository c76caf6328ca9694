//go:build riffletest

package node

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestKeptReceiptsOutliveShortEpochs: a primary keeps an ended epoch's
// receipts for accountKeep after its end however many epochs end here
// meanwhile, so that an ask within the askers' windows never finds them
// gone and an honest primary is never attested for "not held here". Nine
// short epochs with receipts end 30 s apart (a silent client ends an epoch
// within a minute); the first's account is still given and held, and
// once past its keep it is gone. Before (the rev44 review), at most eight
// epochs were kept and the ninth evicted the first 4 m 30 s after its end.
func TestKeptReceiptsOutliveShortEpochs(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		asker := newPeerID(t)
		chain := []peer.ID{newPeerID(t), s.ID(), asker}
		p := testParams(8).Wire()
		limit := time.Duration(p.RoundLimitMs) * time.Millisecond
		const epochs = 9
		var first [32]byte
		for i := range epochs {
			v := &proto.View{ID: [32]byte{0xab, byte(i)}, Chain: chain,
				Desc: &wire.Descriptor{Number: uint64(i + 1), Params: p, Clients: []wire.ClientEntry{{Primary: 1}}}}
			e := &sepoch{pos: 1, v: v, final: v}
			e.receipted = map[dryKey][32]byte{{0, 0}: {byte(i)}}
			s.mu.Lock()
			s.keepAccountsLocked(e) // its end here
			s.mu.Unlock()
			if i == 0 {
				first = v.ID
			}
			time.Sleep(30 * time.Second) // virtual
		}
		if keep, since := accountKeep(limit), epochs*30*time.Second; since >= keep {
			t.Fatalf("the test's epochs span %v, not within accountKeep %v", since, keep)
		}
		s.mu.Lock()
		k := s.accountsOfLocked(first, 0)
		s.mu.Unlock()
		if k == nil {
			t.Fatalf("epoch 1's receipts gone %v after its end, within accountKeep %v", epochs*30*time.Second, accountKeep(limit))
		}
		if _, _, err := s.onAccountReq(asker, (&wire.EpochRef{Epoch: first, Round: 0}).Marshal()); err != nil {
			t.Fatalf("epoch 1's account refused within its keep: %v", err)
		}
		// Past its keep, and with another epoch's end to prune it, it goes.
		time.Sleep(accountKeep(limit))
		v := &proto.View{ID: [32]byte{0xac}, Chain: chain,
			Desc: &wire.Descriptor{Number: epochs + 1, Params: p, Clients: []wire.ClientEntry{{Primary: 1}}}}
		e := &sepoch{pos: 1, v: v, final: v}
		e.receipted = map[dryKey][32]byte{{0, 0}: {1}}
		s.mu.Lock()
		s.keepAccountsLocked(e)
		_, held := s.kept[first]
		n := len(s.kept)
		s.mu.Unlock()
		if held || n != 1 {
			t.Fatalf("past its keep epoch 1 still held (%v), %d epochs kept, want 1", held, n)
		}
	})
}
