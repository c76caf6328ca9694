//go:build riffletest

package client

import (
	"testing"
	"testing/synctest"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// TestSharerKeepsManifestsForLaterEpochs (§6.4 v3): a sharer sends at most
// 4 manifest chunks in an epoch, the index would take no more of its
// pseudonym, and its data chunks go on meanwhile; a manifest published but
// not yet indexed (the index's budget left it in its pseudonym's queue)
// counts as published once a later list of the epoch names it, and goes
// back to the queue if the epoch ends first.
func TestSharerKeepsManifestsForLaterEpochs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		job := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{})}
		c := &Client{}
		c.q = newQueue(&c.stats, nil, nil, nil)
		for i := 0; i < 6; i++ {
			c.q.up = append(c.q.up, upItem{c: store.Chunk{ID: [32]byte{byte(i)}}, job: job, manifest: true})
		}
		c.q.up = append(c.q.up, upItem{c: store.Chunk{ID: [32]byte{0xd}}, job: job})
		for _, u := range c.q.up {
			job.left[u.c.ID] = true
		}
		e := &cepoch{c: c, ups: map[uint32]*upItem{}}
		var sent [][32]byte
		for r := 0; r < 5; r++ {
			i := e.nextUpload(0)
			if i < 0 {
				break
			}
			u := c.q.up[i]
			c.q.up = append(c.q.up[:i:i], c.q.up[i+1:]...)
			if u.manifest {
				e.manifestsSent++
			}
			sent = append(sent, u.c.ID)
		}
		if len(sent) != 5 || sent[4] != ([32]byte{0xd}) || e.nextUpload(0) != -1 {
			t.Fatalf("sent %v; %d left", sent, len(c.q.up))
		}
		// A new epoch: its manifests go out again.
		e2 := &cepoch{c: c, ups: map[uint32]*upItem{}}
		if i := e2.nextUpload(0); i != 0 || !c.q.up[0].manifest {
			t.Fatalf("next epoch starts with %d", i)
		}
		// Published in round 3 of e2, not taken by the index: it waits for
		// a later list, and no further manifest goes out (the fifth of the
		// epoch would not be taken).
		c.held = map[[32]byte]bool{}
		c.changed = make(chan struct{})
		u := c.q.up[0]
		c.q.up = c.q.up[1:]
		e2.ups[3] = &u
		e2.manifestsSent = proto.ManifestsPerPseudonym
		e2.confirm(3, &wire.RoundList{Published: [][32]byte{u.c.ID}})
		if len(c.q.up) != 1 || len(e2.manWait) != 1 || !job.left[u.c.ID] || e2.nextUpload(0) != -1 {
			t.Fatalf("a manifest not yet indexed: queue %d, waiting %d, left %v", len(c.q.up), len(e2.manWait), job.left[u.c.ID])
		}
		// Round 5's list takes it: published.
		e2.indexedLater(&wire.RoundList{Manifests: [][32]byte{u.c.ID}})
		if job.left[u.c.ID] || len(e2.manWait) != 0 {
			t.Fatal("a manifest a later list took is still left")
		}
		// Another, never taken in its epoch: back at the queue's front
		// when the epoch ends, for a later epoch.
		u = c.q.up[0]
		c.q.up = c.q.up[1:]
		e3 := &cepoch{c: c, ups: map[uint32]*upItem{7: &u}}
		e3.confirm(7, &wire.RoundList{Published: [][32]byte{u.c.ID}})
		c.q.settleEpoch(e3)
		if len(c.q.up) != 1 || c.q.up[0].c.ID != u.c.ID || !job.left[u.c.ID] {
			t.Fatalf("a manifest its epoch never indexed: queue %d, left %v", len(c.q.up), job.left[u.c.ID])
		}
	})
}
