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
	"github.com/riffle-net/riffle/node/internal/chunks"
)

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
				if bs, ok := s.store.(*chunks.BoltStore); ok {
					for _, es := range s.Snapshot().Epochs {
						for r := uint32(0); r < uint32(es.Rounds); r++ {
							rec, err := bs.DB().Round(es.ID, r)
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
			bs, ok := s.store.(*chunks.BoltStore)
			if !ok {
				t.Fatal("no bolt store")
			}
			again := map[[32]byte]bool{}
			hold := rounds[0] + uint32(p.W) + ResendHold
			for r := rounds[0] + 1; r < p.Rounds; r++ {
				rec, err := bs.DB().Round(epoch, r)
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
