//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// TestResendRule: the decision for a chunk of a round that did not
// publish it, once its epoch has ended (§5.2 v3). Without a record signed
// by all m servers it counts as published; with one, a public chunk waits
// 1 + G full epochs (at least one, at most ResendWaitMax) and a private
// file is encrypted again.
func TestResendRule(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		for _, private := range []bool{false, true} {
			act, _, err := resendRule(recordNone, private, rand.Reader)
			if err != nil || act != resendNever {
				t.Fatalf("no record, private %v: %v %v, want resendNever", private, act, err)
			}
		}
		act, _, err := resendRule(recordMissing, true, rand.Reader)
		if err != nil || act != resendReencrypt {
			t.Fatalf("private with a record: %v %v, want resendReencrypt", act, err)
		}
		seen := map[int]bool{}
		for range 400 {
			act, w, err := resendRule(recordMissing, false, rand.Reader)
			if err != nil || act != resendLater {
				t.Fatalf("public with a record: %v %v, want resendLater", act, err)
			}
			if w < 1 || w > ResendWaitMax {
				t.Fatalf("wait %d full epochs, want 1..%d", w, ResendWaitMax)
			}
			seen[w] = true
		}
		if !seen[1] || !seen[2] {
			t.Fatalf("waits drawn %v: not random", seen)
		}
		// The draw of a wait: bytes with the low bit set extend it.
		if _, w, _ := resendRule(recordMissing, false, bytes.NewReader([]byte{1, 1, 0})); w != 3 {
			t.Fatalf("wait %d from bytes 1,1,0, want 3", w)
		}
		if _, w, _ := resendRule(recordMissing, false, bytes.NewReader([]byte{1, 1, 1, 1, 1})); w != ResendWaitMax {
			t.Fatalf("wait %d from all ones, want the cap %d", w, ResendWaitMax)
		}
	})
}

// resendClient is a client with no network, for the queue's rules.
func resendClient() *Client {
	return &Client{log: quietLogger(), rand: rand.Reader, changed: make(chan struct{}), wants: map[[32]byte]*getJob{},
		inflight: map[[32]byte]bool{}, failed: map[[32]byte]bool{}, retry: map[[32]byte]bool{}, held: map[[32]byte]bool{}}
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
	ep := func() *cepoch { return &cepoch{ups: map[uint32]*upItem{}} }

	t.Run("no record", func(t *testing.T) {
		c := resendClient()
		h := queueShare(t, c, data, false)
		e := ep()
		var sent []*upItem
		for r := uint32(0); r < 2; r++ {
			sent = append(sent, sendRound(c, e, r))
		}
		c.confirm(e, 0, publishedList(sent[0]))
		c.leaveEpoch(e)
		c.mu.Lock()
		queued := len(c.upQ)
		for _, u := range c.upQ {
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
		e := ep()
		u := sendRound(c, e, 0)
		c.confirm(e, 0, &wire.RoundList{}) // signed, without the id
		if got := sendRound(c, e, 1); got.c.ID != u.c.ID {
			t.Fatal("a chunk missing from a signed list is not sent again first in the same epoch")
		}
		c.confirm(e, 1, &wire.RoundList{})
		c.mu.Lock()
		c.fullEpoch()
		c.mu.Unlock()
		c.leaveEpoch(e)
		// The epoch's closing record shows round 1 published with the
		// list that lacked the chunk (closing.go).
		c.mu.Lock()
		rec := &wire.Closing{Rounds: make([]wire.ClosingRound, 2)}
		rec.Rounds[1] = wire.ClosingRound{State: wire.ClosedPublished, List: listDigest(&wire.RoundList{})}
		c.settleClosings(map[[32]byte]*wire.Closing{{}: rec}, 2)
		c.mu.Unlock()
		// The next epoch: the chunk waits at least one full epoch.
		e2 := ep()
		for r := uint32(0); ; r++ {
			got := sendRound(c, e2, r)
			if got == nil {
				break
			}
			if got.c.ID == u.c.ID {
				t.Fatal("a chunk seen unpublished goes out in the epoch right after")
			}
			c.confirm(e2, r, publishedList(got))
		}
		// It goes out once its wait is over, within ResendWaitMax full
		// epochs.
		for n := 0; n < ResendWaitMax; n++ {
			c.mu.Lock()
			c.fullEpoch()
			c.mu.Unlock()
			if got := sendRound(c, ep(), 0); got != nil {
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
		e := ep()
		u := sendRound(c, e, 0)
		c.confirm(e, 0, &wire.RoundList{})
		c.mu.Lock()
		if jobs := c.settleEpoch(e); len(jobs) != 0 {
			t.Fatal("a private file encrypted again before the epoch's closing record")
		}
		jobs := c.settleClosings(map[[32]byte]*wire.Closing{{}: closingOfLists([32]byte{}, 1, &wire.RoundList{})}, 2)
		c.mu.Unlock()
		if len(jobs) != 1 {
			t.Fatalf("%d jobs to encrypt again, want 1", len(jobs))
		}
		c.mu.Lock()
		for _, q := range c.upQ {
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
		n := len(c.upQ)
		for _, q := range c.upQ {
			if old[q.c.ID] {
				t.Fatal("a chunk of the first encryption is queued")
			}
		}
		c.mu.Unlock()
		if n != total {
			t.Fatalf("%d chunks queued, want the whole file (%d)", n, total)
		}
		// Every new chunk published: the job is done, with the new link.
		e2 := ep()
		for r := uint32(0); ; r++ {
			got := sendRound(c, e2, r)
			if got == nil {
				break
			}
			c.confirm(e2, r, publishedList(got))
		}
		select {
		case <-h.Done():
		default:
			t.Fatal("the job is not done once its new chunks are published")
		}
	})
}

// withholder makes the last server of bn's chain read and withhold the
// first rounds carrying a chunk, up to max of them, all in one epoch: it
// keeps the ids of each such round's chunks.
type withholder struct {
	mu     sync.Mutex
	bad    *Server
	max    int
	epoch  [32]byte
	rounds []uint32
	ids    [][][32]byte
	fired  atomic.Bool
}

func (w *withholder) current() [32]byte {
	w.bad.mu.Lock()
	defer w.bad.mu.Unlock()
	var cur [32]byte
	for id, e := range w.bad.epochs {
		if !e.ended && e.final != nil {
			cur = id
		}
	}
	return cur
}

func (w *withholder) hooks(b, k int) *serverHooks {
	return &serverHooks{
		corruptOut: func(r uint32, out [][]byte) {
			var ids [][32]byte
			for _, raw := range out {
				if pl, err := mix.DecodePayload(raw, b, k); err == nil && pl.Kind == mix.KindChunk {
					ids = append(ids, sha256.Sum256(pl.Chunk[:pl.Length]))
				}
			}
			if len(ids) == 0 {
				return
			}
			cur := w.current()
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.rounds) == w.max || (len(w.rounds) > 0 && cur != w.epoch) {
				return
			}
			fire(&w.fired)
			w.epoch = cur
			w.rounds = append(w.rounds, r)
			w.ids = append(w.ids, ids)
		},
		withhold: func(r uint32) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, x := range w.rounds {
				if x == r && w.current() == w.epoch {
					return true
				}
			}
			return false
		},
	}
}

// TestVoidRoundNotResent: the last server reads two rounds carrying
// chunks in one epoch and withholds them. The earlier is signed void by
// every server and the epoch goes on; the later ends the epoch (one void
// an epoch), and no list of that round exists. Without a record of it the
// uploader counts its chunk as published and says so; the chunk is never
// sent again, under this pseudonym or the next epoch's; the share prints
// a warning that names the file. Before, it went
// first into the next epoch, where the withholding server could see the
// same bytes from a new pseudonym.
func TestVoidRoundNotResent(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(6)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		w := &withholder{bad: bn.servers[2], max: 2}
		w.bad.hooks.Store(w.hooks(int(p.ChunkSize), int(p.K)))
		up := bn.clients[0]
		data := make([]byte, 6*p.ChunkSize)
		rand.Read(data)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The job's own progress lines: what `riffle share` prints.
		var lmu sync.Mutex
		var warn []string
		pctx := WithProgress(ctx, func(e JobEvent) {
			line := e.Line()
			lmu.Lock()
			defer lmu.Unlock()
			if strings.HasPrefix(line, "warning: share void.bin: ") && strings.Contains(line, "count as published") {
				warn = append(warn, line)
			}
		})
		if _, err := up.Share(pctx, bytes.NewReader(data), "void.bin", false); err != nil {
			t.Fatalf("share: %v", err)
		}
		lmu.Lock()
		defer lmu.Unlock()
		w.mu.Lock()
		rounds, all := w.rounds, w.ids
		w.mu.Unlock()
		if len(rounds) != 2 {
			t.Fatalf("%d rounds withheld, want 2", len(rounds))
		}
		if up.Stats().Unconfirmed == 0 || len(warn) == 0 {
			t.Fatalf("unconfirmed %d, warnings %q: the user is not told", up.Stats().Unconfirmed, warn)
		}
		// Two epochs more for a re-send to show, had there been one.
		epochs := up.Stats().Epochs
		if err := wait.Until(context.Background(), 30*time.Second, func() bool { return up.Stats().Epochs >= epochs+2 }); err != nil {
			t.Fatalf("no further epoch: %v", err)
		}
		// The later round ends the epoch (the earlier one is the epoch's
		// void); the last server may mix the two in either order.
		ids := all[1]
		if rounds[0] > rounds[1] {
			ids = all[0]
		}
		for i, s := range bn.servers[:2] {
			held, err := s.store.Held(ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) > 0 {
				where := ""
				if bs, ok := s.store.(*boltStore); ok {
					for _, es := range s.Snapshot().Epochs {
						for r := uint32(0); r < uint32(es.Rounds); r++ {
							rec, err := bs.st.Round(es.ID, r)
							if err != nil {
								continue
							}
							for _, id := range rec.Published {
								if id == held[0].ID {
									where += fmt.Sprintf(" epoch %x round %d (void epoch %v);", es.ID[:4], r, es.ID == w.epoch)
								}
							}
						}
					}
				}
				t.Fatalf("server %d holds %d chunk(s) of the later withheld round (rounds %v, ids %x): sent again, published in%s", i, len(held), rounds, all, where)
			}
		}
		t.Logf("rounds %v withheld; the job ended with %d unconfirmed and the warning %q", rounds, up.Stats().Unconfirmed, warn[0])
	})
}

// TestVoidRoundGoesOn: the last server reads one round carrying a chunk
// and withholds it. Every server signs the round void and the epoch goes
// on to its last round; the uploader sends the chunk again in that epoch,
// under the same pseudonym, resendHold rounds after the void list (R = 64
// leaves room for it), and another client fetches the file whole.
// Before, the void ended the epoch and the chunk went out under the next
// epoch's pseudonym.
func TestVoidRoundGoesOn(t *testing.T) {
	if raceOn && testing.Short() {
		t.Skip("heavy under -race: the full pass runs it; -race covers the same paths in TestVoidRoundNotResent")
	}
	t.Parallel()
	virtual(t, func(t *testing.T) {
		p := testParams(64)
		p.RoundLimitMs = 4000
		bn := startBlameNetParams(t, p, 3, 3, 2, 2)
		w := &withholder{bad: bn.servers[2], max: 1}
		w.bad.hooks.Store(w.hooks(int(p.ChunkSize), int(p.K)))
		up, down := bn.clients[0], bn.clients[1]
		data := make([]byte, 4*p.ChunkSize+100)
		rand.Read(data)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		link := shareConfirmed(ctx, t, up, data, "goes-on.bin")
		w.mu.Lock()
		epoch, rounds, all := w.epoch, w.rounds, w.ids
		w.mu.Unlock()
		if len(rounds) != 1 {
			t.Fatalf("%d rounds withheld, want 1", len(rounds))
		}
		path, err := down.Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched bytes differ (%v)", err)
		}
		// The void epoch ran to its last round at every honest server.
		for i, s := range bn.servers[:2] {
			if err := wait.Until(ctx, 30*time.Second, func() bool {
				for _, es := range s.Snapshot().Epochs {
					if es.ID == epoch {
						return es.Ended && es.Listed == es.Rounds
					}
				}
				return false
			}); err != nil {
				for _, es := range s.Snapshot().Epochs {
					if es.ID == epoch {
						t.Fatalf("server %d: the void epoch ended after %d of %d rounds: %s", i, es.Listed, es.Rounds, es.Reason)
					}
				}
				t.Fatalf("server %d: the void epoch is not kept: %v", i, err)
			}
			// Each withheld chunk is published again in a later round of
			// the void epoch.
			bs, ok := s.store.(*boltStore)
			if !ok {
				t.Fatal("no bolt store")
			}
			again := map[[32]byte]bool{}
			hold := rounds[0] + uint32(p.W) + resendHold
			for r := rounds[0] + 1; r < p.Rounds; r++ {
				rec, err := bs.st.Round(epoch, r)
				if err != nil {
					continue
				}
				for _, id := range rec.Published {
					again[id] = true
					if r < hold && slices.Contains(all[0], id) {
						// A client that left before the void list could
						// not: its absence would show (resendHold).
						t.Fatalf("server %d: withheld chunk %x published again in round %d, before round %d", i, id[:6], r, hold)
					}
				}
			}
			for _, id := range all[0] {
				if !again[id] {
					t.Fatalf("server %d: withheld chunk %x not published again in the void epoch", i, id[:6])
				}
			}
		}
		// The epoch's closing record, signed by all m servers, shows the
		// round void (closing.go).
		for i, s := range bn.servers[:2] {
			c := storedClosing(ctx, t, s, i, epoch, 3)
			for r, x := range c.Rounds {
				if want := map[bool]uint8{true: wire.ClosedVoid, false: wire.ClosedPublished}[uint32(r) == rounds[0]]; x.State != want {
					t.Fatalf("server %d: round %d closed as %d, want %d", i, r, x.State, want)
				}
			}
		}
		t.Logf("round %d withheld and signed void; the epoch ran on and the file (%d bytes) was fetched whole", rounds[0], len(data))
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
		e := &cepoch{ups: map[uint32]*upItem{}}
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
		c.confirm(e, 0, &wire.RoundList{Flags: wire.ListVoid})
		for r, got := range sent[1:] {
			c.confirm(e, uint32(r+1), publishedList(got))
		}
		c.leaveEpoch(e)
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
			c.fullEpoch()
			c.mu.Unlock()
			if got := sendRound(c, &cepoch{ups: map[uint32]*upItem{}}, 0); got != nil && got.c.ID == id {
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
		waits := c.awaitClose(ep)
		c.mu.Unlock()
		if !waits {
			t.Fatal("the chunk does not wait for its epoch's closing record")
		}
		c.mu.Lock()
		c.settleClosings(voidRec(wire.ClosedVoid, listDigest(&wire.RoundList{Flags: wire.ListVoid})), 2)
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
			return voidRec(wire.ClosedPublished, listDigest(&wire.RoundList{Published: [][32]byte{{1}}}))
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
				c.settleClosings(recs(), n)
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
	c := &Client{inflight: map[[32]byte]bool{}}
	e := &cepoch{v: &view{Desc: &wire.Descriptor{Params: wire.Params{W: 2}}}}
	id := [32]byte{7}
	c.inflight[id] = true
	const r = 5
	e.reask = append(e.reask, reask{at: c.resendFrom(e, r), ids: [][32]byte{id}})
	for q := uint32(r + 1); q < r+2+resendHold; q++ {
		c.releaseReasks(e, q)
		if !c.inflight[id] {
			t.Fatalf("a void round's request free to be asked again in round %d", q)
		}
	}
	c.releaseReasks(e, r+2+resendHold)
	if c.inflight[id] || len(e.reask) != 0 {
		t.Fatalf("the request is still held in round %d", r+2+resendHold)
	}
}
