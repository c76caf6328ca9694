//go:build riffletest

package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/presence"
	"github.com/riffle-net/riffle/node/client/internal/waitline"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// resendClient is a client with no network, for the queue's rules.
func resendClient() *Client {
	c := &Client{log: quietLogger(), rand: rand.Reader, changed: make(chan struct{}), held: map[[32]byte]bool{}}
	c.q = newQueue(&c.stats, c.rand, c.log, c.progress)
	c.pres, c.notes = presence.New(false, 0), waitline.NewNotes(0)
	return c
}

// queueShare queues a share job of data as StartShare does, without an
// epoch.
func queueShare(t *testing.T, c *Client, data []byte, private bool) *ShareHandle {
	t.Helper()
	c.b = 4 << 10
	h, err := c.StartShare(context.Background(), bytes.NewReader(data), "f.bin", private)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// publishedList is a signed list that published u (and indexed it, if a
// manifest).
func publishedList(u *upItem) *wire.RoundList {
	rl := &wire.RoundList{Published: [][32]byte{u.c.ID}}
	if u.manifest {
		rl.Manifests = rl.Published
	}
	return rl
}

// TestResendQueue: the client's queue applies the rule. A chunk missing
// from a round's signed list goes out again first in the same epoch; one
// whose round gave no list counts as published, the job ends with a
// warning that names the file; one still missing when the epoch ends
// waits at least one full epoch (public), or the private file is
// encrypted again under a fresh key, with new chunks and a new link, and
// none of the old chunks goes out again. Before, every such chunk went
// first into the next epoch, under a new pseudonym.
func TestResendQueue(t *testing.T) {
	data := make([]byte, 10<<10)
	rand.Read(data)
	ep := func(c *Client) *cepoch { return &cepoch{c: c, ups: map[uint32]*upItem{}} }

	t.Run("no record", func(t *testing.T) {
		c := resendClient()
		h := queueShare(t, c, data, false)
		e := ep(c)
		var sent []*upItem
		for r := uint32(0); r < 2; r++ {
			sent = append(sent, sendRound(c, e, r))
		}
		e.confirm(0, publishedList(sent[0]))
		e.leave()
		c.mu.Lock()
		queued := len(c.q.up)
		for _, u := range c.q.up {
			if u.c.ID == sent[1].c.ID {
				t.Fatal("a chunk of a round without a list is queued again")
			}
		}
		c.mu.Unlock()
		if queued != h.Total-2 {
			t.Fatalf("%d chunks queued, want %d", queued, h.Total-2)
		}
		if c.Stats().Unconfirmed != 1 {
			t.Fatalf("unconfirmed %d, want 1", c.Stats().Unconfirmed)
		}
		_, _, warn, _ := h.Result()
		if len(warn) != 1 || !strings.Contains(warn[0], "f.bin") || !strings.Contains(warn[0], "count as published") {
			t.Fatalf("warnings %q", warn)
		}
	})

	t.Run("public missing", func(t *testing.T) {
		c := resendClient()
		queueShare(t, c, data, false)
		e := ep(c)
		u := sendRound(c, e, 0)
		e.confirm(0, &wire.RoundList{}) // signed, without the id
		if got := sendRound(c, e, 1); got.c.ID != u.c.ID {
			t.Fatal("a chunk missing from a signed list is not sent again first in the same epoch")
		}
		e.confirm(1, &wire.RoundList{})
		c.mu.Lock()
		c.q.fullEpoch(c.pres)
		c.notify()
		c.mu.Unlock()
		e.leave()
		// The epoch's closing record shows round 1 published with the
		// list that lacked the chunk (closing.go).
		c.mu.Lock()
		rec := &wire.Closing{Rounds: make([]wire.ClosingRound, 2)}
		rec.Rounds[1] = wire.ClosingRound{State: wire.ClosedPublished, List: proto.ListDigest(&wire.RoundList{})}
		c.q.settleClosings(map[[32]byte]*wire.Closing{{}: rec}, 2)
		c.mu.Unlock()
		// The next epoch: the chunk waits at least one full epoch.
		e2 := ep(c)
		for r := uint32(0); ; r++ {
			got := sendRound(c, e2, r)
			if got == nil {
				break
			}
			if got.c.ID == u.c.ID {
				t.Fatal("a chunk seen unpublished goes out in the epoch right after")
			}
			e2.confirm(r, publishedList(got))
		}
		// It goes out once its wait is over, within ResendWaitMax full
		// epochs.
		for n := 0; n < ResendWaitMax; n++ {
			c.mu.Lock()
			c.q.fullEpoch(c.pres)
			c.notify()
			c.mu.Unlock()
			if got := sendRound(c, ep(c), 0); got != nil {
				if got.c.ID != u.c.ID {
					t.Fatal("unexpected chunk")
				}
				return
			}
		}
		t.Fatalf("the chunk is not sent again within %d full epochs", ResendWaitMax)
	})

	t.Run("private missing", func(t *testing.T) {
		c := resendClient()
		h := queueShare(t, c, data, true)
		link0, total0, _, _ := h.Result()
		old := map[[32]byte]bool{}
		for _, id := range h.IDs {
			old[id] = true
		}
		e := ep(c)
		u := sendRound(c, e, 0)
		e.confirm(0, &wire.RoundList{})
		c.mu.Lock()
		if jobs := c.q.settleEpoch(e); len(jobs) != 0 {
			t.Fatal("a private file encrypted again before the epoch's closing record")
		}
		jobs := c.q.settleClosings(map[[32]byte]*wire.Closing{{}: closingOfLists([32]byte{}, 1, &wire.RoundList{})}, 2)
		c.mu.Unlock()
		if len(jobs) != 1 {
			t.Fatalf("%d jobs to encrypt again, want 1", len(jobs))
		}
		c.mu.Lock()
		for _, q := range c.q.up {
			if q.c.ID == u.c.ID || old[q.c.ID] {
				t.Fatal("a chunk of the first encryption is still queued")
			}
		}
		c.mu.Unlock()
		c.reencrypt(jobs[0])
		link, total, _, err := h.Result()
		if err != nil || link.Key == nil || *link.Key == *link0.Key || link.ID == link0.ID || total != total0 {
			t.Fatalf("encrypted again: %v, same key %v, same id %v, %d chunks (were %d)", err, *link.Key == *link0.Key, link.ID == link0.ID, total, total0)
		}
		c.mu.Lock()
		n := len(c.q.up)
		for _, q := range c.q.up {
			if old[q.c.ID] {
				t.Fatal("a chunk of the first encryption is queued")
			}
		}
		c.mu.Unlock()
		if n != total {
			t.Fatalf("%d chunks queued, want the whole file (%d)", n, total)
		}
		// Every new chunk published: the job is done, with the new link.
		e2 := ep(c)
		for r := uint32(0); ; r++ {
			got := sendRound(c, e2, r)
			if got == nil {
				break
			}
			e2.confirm(r, publishedList(got))
		}
		select {
		case <-h.Done():
		default:
			t.Fatal("the job is not done once its new chunks are published")
		}
	})
}

// TestResendNeedsClosing (§5.2 v3): a chunk that its epoch ended with
// unpublished crosses to another epoch only on the epoch's closing
// record, signed by all m servers, that shows its round void or
// published with the list that lacked it. Until the record comes it waits
// and goes out in no epoch; a record that shows the round otherwise, or
// no record in the windows of the closeWaitMax epoch numbers that may
// bring it, leaves it counted as published, and the user is told.
func TestResendNeedsClosing(t *testing.T) {
	data := make([]byte, 4<<10) // one data chunk and its manifest
	rand.Read(data)
	ep := [32]byte{}
	seenOnce := func(t *testing.T) (*Client, *ShareHandle, *upItem) {
		c := resendClient()
		h := queueShare(t, c, data, false)
		e := &cepoch{c: c, ups: map[uint32]*upItem{}}
		// Every chunk goes out; round 0's is void, the others are
		// published; the epoch ends.
		var sent []*upItem
		for r := uint32(0); ; r++ {
			got := sendRound(c, e, r)
			if got == nil {
				break
			}
			sent = append(sent, got)
		}
		u := sent[0]
		e.confirm(0, &wire.RoundList{Flags: wire.ListVoid})
		for r, got := range sent[1:] {
			e.confirm(uint32(r+1), publishedList(got))
		}
		e.leave()
		return c, h, u
	}
	voidRec := func(state uint8, list [32]byte) map[[32]byte]*wire.Closing {
		rec := &wire.Closing{Rounds: make([]wire.ClosingRound, 4)}
		rec.Rounds[0] = wire.ClosingRound{State: state, List: list}
		return map[[32]byte]*wire.Closing{ep: rec}
	}
	sentIn := func(c *Client, epochs int, id [32]byte) bool {
		for range epochs {
			c.mu.Lock()
			c.q.fullEpoch(c.pres)
			c.notify()
			c.mu.Unlock()
			if got := sendRound(c, &cepoch{c: c, ups: map[uint32]*upItem{}}, 0); got != nil && got.c.ID == id {
				return true
			}
		}
		return false
	}
	t.Run("record shows the round void", func(t *testing.T) {
		c, _, u := seenOnce(t)
		if sentIn(c, ResendWaitMax+1, u.c.ID) {
			t.Fatal("the chunk crossed to another epoch without a closing record")
		}
		c.mu.Lock()
		waits := c.q.awaitClose(ep)
		c.mu.Unlock()
		if !waits {
			t.Fatal("the chunk does not wait for its epoch's closing record")
		}
		c.mu.Lock()
		c.q.settleClosings(voidRec(wire.ClosedVoid, proto.ListDigest(&wire.RoundList{Flags: wire.ListVoid})), 2)
		c.mu.Unlock()
		if !sentIn(c, ResendWaitMax+1, u.c.ID) {
			t.Fatal("the chunk is not sent again on a closing record that shows its round void")
		}
		if c.Stats().Unconfirmed != 0 {
			t.Fatal("counted unconfirmed")
		}
	})
	for name, recs := range map[string]func() map[[32]byte]*wire.Closing{
		"record shows another list": func() map[[32]byte]*wire.Closing {
			return voidRec(wire.ClosedPublished, proto.ListDigest(&wire.RoundList{Published: [][32]byte{{1}}}))
		},
		"record shows no list": func() map[[32]byte]*wire.Closing { return voidRec(wire.ClosedNone, [32]byte{}) },
		"no record":            func() map[[32]byte]*wire.Closing { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			c, h, u := seenOnce(t)
			// The chunk was seen in epoch number 0: its record may be in
			// the windows of numbers 2 to 1+closeWaitMax.
			first := uint64(2)
			if name == "no record" {
				first = 1
			}
			for n := first; n <= 1+closeWaitMax; n++ {
				if c.Stats().Unconfirmed != 0 {
					t.Fatalf("counted published before the window of number %d", n)
				}
				c.mu.Lock()
				c.q.settleClosings(recs(), n)
				c.mu.Unlock()
				if name != "no record" {
					break
				}
			}
			if c.Stats().Unconfirmed != 1 {
				t.Fatalf("unconfirmed %d, want 1", c.Stats().Unconfirmed)
			}
			if sentIn(c, ResendWaitMax+1, u.c.ID) {
				t.Fatal("the chunk crossed to another epoch")
			}
			select {
			case <-h.Done():
			default:
				t.Fatal("the job does not end")
			}
			if _, _, warn, _ := h.Result(); len(warn) != 1 || !strings.Contains(warn[0], "count as published") {
				t.Fatalf("warnings %q", warn)
			}
		})
	}
}

// TestVoidRequestsHeld (issue 26): the requests of a void round stay in
// flight, so not asked again, until the onion of round r + W + resendHold
// (a client that left before the void list cannot ask them again; nobody
// else does before its epoch ends).
func TestVoidRequestsHeld(t *testing.T) {
	c := &Client{}
	c.q.inflight = map[[32]byte]bool{}
	e := &cepoch{c: c, v: &proto.View{Desc: &wire.Descriptor{Params: wire.Params{W: 2}}}}
	id := [32]byte{7}
	c.q.inflight[id] = true
	const r = 5
	e.reask = append(e.reask, reask{at: e.resendFrom(r), ids: [][32]byte{id}})
	for q := uint32(r + 1); q < r+2+resendHold; q++ {
		e.releaseReasks(q)
		if !c.q.inflight[id] {
			t.Fatalf("a void round's request free to be asked again in round %d", q)
		}
	}
	e.releaseReasks(r + 2 + resendHold)
	if c.q.inflight[id] || len(e.reask) != 0 {
		t.Fatalf("the request is still held in round %d", r+2+resendHold)
	}
}
