//go:build riffletest

package client

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// TestJobEpochsCount (§5.4 v3): a job counts the epochs in which it sent
// real traffic, each once however many rounds; within its allowance it
// goes on, a new epoch beyond it pauses it (its chunks are skipped, a job
// queued behind it still goes), and a resume allows J more.
func TestJobEpochsCount(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := &Client{hk: hooks.Hooks{Config: ClientHookCfg{JobEpochs: 3}}}
		if ep := newJobEpochs(&c.hk, 0); ep.limit != 3 {
			t.Fatalf("default allowance %d, want J = 3", ep.limit)
		}
		if ep := newJobEpochs(&c.hk, 7); ep.limit != 3 {
			t.Fatalf("allowance above J: %d, want 3", ep.limit)
		}
		if ep := newJobEpochs(nil, 0); ep.limit != JobEpochs {
			t.Fatalf("allowance %d, want JobEpochs", ep.limit)
		}
		long := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{}), ep: newJobEpochs(&c.hk, 2)}
		other := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{}), ep: newJobEpochs(&c.hk, 0)}
		for i := 0; i < 10; i++ {
			c.q.up = append(c.q.up, upItem{c: store.Chunk{ID: [32]byte{1, byte(i)}}, job: long})
		}
		c.q.up = append(c.q.up, upItem{c: store.Chunk{ID: [32]byte{2}}, job: other})
		epoch := func(n byte) *cepoch { return &cepoch{c: c, v: &proto.View{ID: [32]byte{n}}, ups: map[uint32]*upItem{}} }
		// Two chunks in each of epochs 1 and 2: two epochs counted.
		for n := byte(1); n <= 2; n++ {
			e := epoch(n)
			for r := uint32(0); r < 2; r++ {
				if u := sendRound(c, e, r); u == nil || u.job != long {
					t.Fatalf("epoch %d round %d: the long job's chunk did not go", n, r)
				}
			}
		}
		if long.ep.used != 2 || long.ep.paused {
			t.Fatalf("after 2 epochs: used %d paused %v", long.ep.used, long.ep.paused)
		}
		// Epoch 3 would be its third: it pauses; the other job goes on.
		e3 := epoch(3)
		if u := sendRound(c, e3, 0); u == nil || u.job != other {
			t.Fatal("epoch 3: the job queued behind the paused one did not go")
		}
		if u := sendRound(c, e3, 1); u != nil {
			t.Fatal("epoch 3: a paused job's chunk went out")
		}
		if !long.ep.paused || long.ep.used != 2 {
			t.Fatalf("not paused: used %d", long.ep.used)
		}
		c.mu.Lock()
		p := c.q.paused()
		c.mu.Unlock()
		if len(p) != 1 || p[0].Kind != "share" || p[0].Epochs != 2 || !strings.Contains(p[0].Reason, "sent real traffic in 2 epochs") {
			t.Fatalf("paused jobs: %+v", p)
		}
		c.changed = make(chan struct{})
		if n := c.Resume(""); n != 1 {
			t.Fatalf("resumed %d jobs, want 1", n)
		}
		if long.ep.paused || long.ep.limit != 2+3 {
			t.Fatalf("after resume: paused %v, allowance %d, want 5", long.ep.paused, long.ep.limit)
		}
		if u := sendRound(c, e3, 2); u == nil || u.job != long || long.ep.used != 3 {
			t.Fatal("resumed job did not go on")
		}
		if n := c.Resume(""); n != 0 {
			t.Fatalf("resumed %d jobs, none paused", n)
		}
	})
}

// sendRound takes the next chunk into round r of e as submit does.
func sendRound(c *Client, e *cepoch, r uint32) *upItem {
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.takeUpload(r, true)
}
