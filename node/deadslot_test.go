//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/store"
)

// A dead slot (docs/protocol.md §8 "A dead slot"): a round blame that
// names a client voids its round and kills the slot, and the epoch goes on.

// deadCase is a client that misbehaves in every round from round 1 of the
// first epoch it is in (the epoch and slot noted at the first time).
type deadCase struct {
	mu     sync.Mutex
	epoch  [32]byte
	slot   uint32
	rounds map[uint32]bool
}

// fires reports whether the client misbehaves in round r of epoch, and
// notes it.
func (d *deadCase) fires(epoch [32]byte, r, slot uint32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r < 1 {
		return false
	}
	if d.rounds == nil {
		d.epoch, d.slot, d.rounds = epoch, slot, map[uint32]bool{}
		faultAt.Store(time.Now().UnixNano())
	}
	if epoch != d.epoch {
		return false
	}
	d.rounds[r] = true
	return true
}

func (d *deadCase) get() ([32]byte, uint32, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.epoch, d.slot, len(d.rounds)
}

// voidRounds counts the rounds of epoch id signed void at s.
func voidRounds(s *Server, id [32]byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if e := s.epochs[id]; e != nil {
		for _, x := range e.rounds {
			if x.void {
				n++
			}
		}
	}
	return n
}

// deadSlotRun shares and gets a file while the case's client misbehaves
// and checks that every server names it once, that its epoch runs to its
// last round with exactly one void round (the blamed one: the culprit's
// later onions void nothing) that counts as no void that names nobody,
// and that the file was published within that epoch.
func deadSlotRun(t *testing.T, bn *blameNet, d *deadCase) { deadSlotRunVoids(t, bn, d, 1) }

// deadSlotRunVoids is deadSlotRun with wantVoid void rounds in the
// culprit's epoch.
func deadSlotRunVoids(t *testing.T, bn *blameNet, d *deadCase, wantVoid int) {
	t.Helper()
	up, down := bn.clients[0], bn.clients[2]
	b := int(bn.servers[0].cfg.Params.ChunkSize)
	data := make([]byte, 4*b+100)
	rand.Read(data)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	link := shareConfirmed(ctx, t, up, data, "dead-slot.bin")
	path, err := down.Get(ctx, link, t.TempDir())
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ (%v)", err)
	}
	recs := culpritRecords(t, bn.servers)
	epoch, slot, fired := d.get()
	for i, r := range recs {
		if r.Role != "client" || r.Epoch != epoch || r.Slot != int(slot) {
			t.Fatalf("server %d named %s %d/slot %d; the culprit is the client in slot %d (%s)", i, r.Role, r.Server, r.Slot, slot, r.Reason)
		}
	}
	for i, s := range bn.servers {
		if v := epochRanOn(t, s, epoch); v != 0 {
			t.Fatalf("server %d: the blamed round counted as %d void(s) that name nobody", i, v)
		}
		if n := voidRounds(s, epoch); n != wantVoid {
			t.Fatalf("server %d: %d void rounds in the culprit's epoch, want %d", i, n, wantVoid)
		}
		if rs, _ := s.rb.Records(); len(rs) != 1 {
			t.Fatalf("server %d: %d blame records, want 1", i, len(rs))
		}
	}
	// The culprit's epoch closes with a record signed by all m servers
	// that shows the blamed round void and no other (closing.go).
	for i, s := range bn.servers {
		c := storedClosing(ctx, t, s, i, epoch, len(bn.servers))
		void := 0
		for _, x := range c.Rounds {
			if x.State == wire.ClosedVoid {
				void++
			}
		}
		if void != wantVoid {
			t.Fatalf("server %d: the closing record shows %d void rounds, want %d", i, void, wantVoid)
		}
	}
	// The share's chunks went out in the culprit's epoch, after the
	// blamed round: the servers' stored rounds of it hold them.
	published := 0
	for r := uint32(0); r < bn.servers[0].cfg.Params.Rounds; r++ {
		rec, err := bn.servers[2].store.(*chunks.BoltStore).DB().Round(epoch, r)
		if err == nil {
			published += len(rec.Published)
		}
	}
	if published == 0 {
		t.Fatal("nothing was published in the culprit's epoch after the blame")
	}
	t.Logf("the culprit misbehaved in %d rounds; named %v after the first; its epoch ran to its last round, %d chunks published in it", fired, sinceFault(), published)
}

// TestDeadSlotEpochGoesOn: a client whose onions fail their MAC at the
// middle layer from round 1 on is named by every server; its slot dies,
// the epoch runs to its end, the onions it had sent ahead void nothing,
// and an honest share and get complete byte-exact. Before, the blame
// ended the epoch.
func TestDeadSlotEpochGoesOn(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 3, 4, 3)
		d := &deadCase{}
		bn.clients[1].Hooks.Store(&ClientHooks{LayerKeys: func(epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
			if d.fires(epoch, r, slot) {
				keys[1].MAC[0] ^= 1
			}
		}})
		deadSlotRun(t, bn, d)
	})
}

// TestDeadSlotBadPayload: the same for a client whose payloads' pseudonym
// signatures fail (found at publication, walked from the last server).
func TestDeadSlotBadPayload(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 3, 4, 3)
		d := &deadCase{}
		bn.clients[1].Hooks.Store(&ClientHooks{Payload: func(epoch [32]byte, r, slot uint32, raw []byte) {
			if d.fires(epoch, r, slot) {
				raw[len(raw)/2] ^= 1
			}
		}})
		deadSlotRun(t, bn, d)
	})
}

// TestDeadSlotReplay: a client that signs, as its own, an onion another
// client sealed for the same epoch (a replay) is named by every server
// (the onion fails its MAC at S_0, under the replayer's layer keys); the
// client whose onion was copied is never named, the replayer's slot dies
// and the epoch goes on.
func TestDeadSlotReplay(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 3, 4, 3)
		d := &deadCase{}
		var mu sync.Mutex
		seen := map[[32]byte][]byte{} // the copied client's latest onion per epoch
		bn.clients[0].Hooks.Store(&ClientHooks{Onion: func(epoch [32]byte, r, slot uint32, onion []byte) {
			mu.Lock()
			seen[epoch] = append([]byte(nil), onion...)
			mu.Unlock()
		}})
		bn.clients[1].Hooks.Store(&ClientHooks{Onion: func(epoch [32]byte, r, slot uint32, onion []byte) {
			mu.Lock()
			other := seen[epoch]
			mu.Unlock()
			if other != nil && len(other) == len(onion) && d.fires(epoch, r, slot) {
				copy(onion, other)
			}
		}})
		deadSlotRun(t, bn, d)
	})
}

// TestDeadSlotSecondOnion: a client that signs a second, different onion
// for every round from round 1 on is named from its two signatures; its
// slot dies with no round void (the first onion stands), and the epoch
// runs to its end. Before, the evidence ended the epoch.
func TestDeadSlotSecondOnion(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 3, 4, 3)
		d := &deadCase{}
		bn.clients[1].Hooks.Store(&ClientHooks{SecondOnion: func(epoch [32]byte, r, slot uint32) bool {
			return d.fires(epoch, r, slot)
		}})
		deadSlotRunVoids(t, bn, d, 0)
	})
}

// TestDeadSlotBadForward: the middle server reveals a false drop step for
// the dead slot (another output position under the proof of the true
// one). An honest server that gets the step names the liar from it; one
// that does not (the liar's epoch may end first) ends the epoch naming
// nobody; no honest party is named, and the epoch ends early everywhere.
func TestDeadSlotBadForward(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 2, 4, 2)
		d := &deadCase{}
		bn.clients[1].Hooks.Store(&ClientHooks{LayerKeys: func(epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
			if d.fires(epoch, r, slot) {
				keys[2].MAC[0] ^= 1
			}
		}})
		liar := bn.servers[1]
		liar.hooks.Store(&serverHooks{lieDrop: func(uint32) bool { return true }})
		honest := []*Server{bn.servers[0], bn.servers[2]}
		ended := func(s *Server, epoch [32]byte) bool {
			for _, es := range s.Snapshot().Epochs {
				if es.ID == epoch {
					return es.Ended && es.Listed < es.Rounds
				}
			}
			return false
		}
		namers := 0
		deadline := time.Now().Add(60 * time.Second)
		for i, s := range honest {
			var rs []store.BlameRecord
			if err := wait.UntilEvery(context.Background(), time.Until(deadline), 100*time.Millisecond, func() bool {
				epoch, slot, _ := d.get()
				var err error
				if rs, err = s.rb.Records(); err != nil {
					t.Fatal(err)
				}
				var server *store.BlameRecord
				for i, r := range rs {
					if r.Role == "server" {
						server = &rs[i]
					}
					if r.Role == "server" && r.PeerID != liar.h.ID().String() {
						t.Fatalf("an honest server was named: server %d, %s", r.Server, r.Reason)
					}
					if r.Role == "client" && r.Slot != int(slot) {
						t.Fatalf("an honest client was named: slot %d, %s", r.Slot, r.Reason)
					}
				}
				if server != nil {
					var st wire.DropStep
					if len(server.Evidence) == 0 || st.Unmarshal(server.Evidence[len(server.Evidence)-1]) != nil || int(st.T) != 1 {
						t.Fatalf("the liar is named without its signed drop step as evidence: %d pieces", len(server.Evidence))
					}
					if !s.rb.Has(liar.h.ID()) {
						t.Fatal("the lying server is not excluded")
					}
					namers++
				}
				if ended(s, epoch) && (server != nil || len(rs) == 1) {
					if server == nil {
						t.Logf("honest server %d did not get the false step: the epoch ended, nobody named", i)
					}
					return true
				}
				return false
			}); err != nil {
				t.Fatalf("honest server %d: the epoch did not end early after the false step (%d records)", i, len(rs))
			}
		}
		if namers == 0 {
			t.Fatal("no honest server named the lying server")
		}
		t.Logf("the false drop step named its server at %d of 2 honest servers, %v after the fault", namers, sinceFault())
	})
}

// TestDeadSlotTwoCulprits: two clients whose onions fail their MAC at the
// middle layer from round 1 on, in the same epoch: both are named, each
// slot dies in turn (the second is found in a round already in flight,
// reopened without the first), the epoch runs to its last round with two
// void rounds, and an honest share and get complete byte-exact.
func TestDeadSlotTwoCulprits(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		bn := startBlameNetParams(t, testParams(64), 3, 3, 5, 3)
		var mu sync.Mutex
		var epoch [32]byte
		slots := map[uint32]bool{}
		for _, c := range []*Client{bn.clients[1], bn.clients[3]} {
			c.Hooks.Store(&ClientHooks{LayerKeys: func(e [32]byte, r, slot uint32, keys []mix.LayerKey) {
				mu.Lock()
				defer mu.Unlock()
				if r < 1 || (len(slots) > 0 && e != epoch) {
					return
				}
				epoch, slots[slot] = e, true
				keys[1].MAC[0] ^= 1
			}})
		}
		up, down := bn.clients[0], bn.clients[2]
		data := make([]byte, 4*int(bn.servers[0].cfg.Params.ChunkSize)+100)
		rand.Read(data)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		link := shareConfirmed(ctx, t, up, data, "two-culprits.bin")
		path, err := down.Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched bytes differ (%v)", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, s := range bn.servers {
			if v := epochRanOn(t, s, epoch); v != 0 {
				t.Fatalf("server %d: %d void(s) that name nobody", i, v)
			}
			if n := voidRounds(s, epoch); n != 2 {
				t.Fatalf("server %d: %d void rounds in the culprits' epoch, want 2", i, n)
			}
			rs, _ := s.rb.Records()
			named := map[uint32]bool{}
			for _, r := range rs {
				if r.Role != "client" || r.Epoch != epoch || !slots[uint32(r.Slot)] {
					t.Fatalf("server %d named %s %d/slot %d: %s", i, r.Role, r.Server, r.Slot, r.Reason)
				}
				named[uint32(r.Slot)] = true
			}
			if len(named) != 2 || len(rs) != 2 {
				t.Fatalf("server %d: %d records naming %d slots, want both culprits once", i, len(rs), len(named))
			}
		}
	})
}
