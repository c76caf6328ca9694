//go:build riffletest

package node

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestHandoverCarriesQueue (issue 26, §5.4 v3): the onions a client hands
// over when it leaves mid-epoch carry what it would have sent, its next
// queued chunks, not cover: the share's chunks queued at the leave are
// published in the rounds after it (before, only the few sealed before
// the leave were; the pseudonym's uploads stopped at the departure).
func TestHandoverCarriesQueue(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a network")
		}
		p := testParams(64)
		p.RoundLimitMs = 300000
		tn := startAnonNet(t, 3, 2, 2, p, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		leaver, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		go leaver.Share(ctx, bytes.NewReader(anonRand(t, 80*int(p.ChunkSize))), "long.bin", false)
		if err := wait.Until(ctx, 5*time.Minute, func() bool { return leaver.Stats().Uploaded >= 3 }); err != nil {
			t.Fatalf("the leaver published nothing: %v", err)
		}
		queued := leaver.Inspect().Queued()
		rounds := int(p.Rounds) - int(leaver.Inspect().SealedNext())
		if len(queued) < proto.HandoverMax+8 || rounds < proto.HandoverMax {
			t.Fatalf("%d chunks queued, %d rounds left at the leave: too few to tell", len(queued), rounds)
		}
		stay := tn.clients[0]
		before := stay.Stats().Epochs
		if err := leaver.Close(); err != nil {
			t.Fatal(err)
		}
		// Once the onions run out S_0 ends the epoch at the round limit
		// (departure.go: the primary's word that its client left is no
		// evidence, so it signs no abort).
		if err := wait.Until(ctx, time.Duration(p.RoundLimitMs)*time.Millisecond+5*time.Minute, func() bool { return stay.Stats().Epochs != before }); err != nil {
			t.Fatalf("the leaver's epoch did not end: %v", err)
		}
		published := 0
		for _, id := range queued {
			if ok, err := tn.servers[0].store.HasChunk(id); err == nil && ok {
				published++
			}
		}
		// The hand-over's handoverMax onions, one chunk each, less the
		// manifests' cap; cover would publish none of them.
		if published < proto.HandoverMax-4 {
			t.Errorf("%d of the %d chunks queued at the leave published after it; want the hand-over's %d", published, len(queued), proto.HandoverMax)
		}
		t.Logf("%d of %d queued chunks published after the leave", published, len(queued))
	})
}
