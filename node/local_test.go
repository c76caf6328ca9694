//go:build riffletest

package node

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// timedRecorder records the type and time of every request a client
// sends.
type timedRecorder struct {
	mu  sync.Mutex
	log []timedSend
}

type timedSend struct {
	t  wire.Type
	at time.Time
}

func (r *timedRecorder) add(t uint8, _ int) {
	r.mu.Lock()
	r.log = append(r.log, timedSend{wire.Type(t), time.Now()})
	r.mu.Unlock()
}

func (r *timedRecorder) snapshot() []timedSend {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]timedSend(nil), r.log...)
}

func (r *timedRecorder) count(t wire.Type) int {
	n := 0
	for _, s := range r.snapshot() {
		if s.t == t {
			n++
		}
	}
	return n
}

// maxGap is the longest time between two sends of type t within one epoch
// (a registration starts a new epoch), between from and to.
func maxGap(log []timedSend, t wire.Type, from, to time.Time) time.Duration {
	var last time.Time
	var gap time.Duration
	for _, s := range log {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		switch s.t {
		case wire.TypeRegister:
			last = time.Time{}
		case t:
			if !last.IsZero() {
				gap = max(gap, s.at.Sub(last))
			}
			last = s.at
		}
	}
	return gap
}

// TestLocalWorkDoesNotDelay (§5.4 v3): opening an assembler (which
// verifies a resumed file) and finishing a file (decrypt, write, sync) are
// local work that never delays the next onion or query: with both made
// slow by a hook, the downloading client's submissions and queries go out
// at the pace of the rounds throughout.
func TestLocalWorkDoesNotDelay(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		tn := startAnonNet(t, 3, 0, 2, testParams(256), nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		up, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		var rec timedRecorder
		down, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), OnSend: rec.add, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer down.Close()
		// A round takes well under slow/2 even on a loaded machine.
		const slow = 6 * time.Second
		var hmu sync.Mutex
		steps := map[string]int{}
		down.Inspect().SetLocalHook(func(step string) {
			hmu.Lock()
			steps[step]++
			hmu.Unlock()
			if step == "manifest" || step == "finish" {
				time.Sleep(slow)
			}
		})
		data := anonRand(t, 40<<10)
		link, err := up.Share(ctx, bytes.NewReader(data), "slow.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		path, err := down.Get(ctx, link, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched bytes differ: %v", err)
		}
		hmu.Lock()
		if steps["manifest"] != 1 || steps["finish"] != 1 || steps["chunk"] == 0 {
			t.Fatalf("local steps %v", steps)
		}
		hmu.Unlock()
		log := rec.snapshot()
		for _, typ := range []wire.Type{wire.TypeSubmit, wire.TypeQuery} {
			if gap := maxGap(log, typ, start, end); gap >= slow/2 {
				t.Fatalf("a %d message waited %v for local work (slow steps of %v)", typ, gap, slow)
			}
		}
	})
}

// TestLsReadsSyncedCopy (§7): the index through a running client's control
// socket is its synced copy; asking for it sends nothing.
func TestLsReadsSyncedCopy(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	tn := startAnonNet(t, 3, 1, 2, testParams(32), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rec timedRecorder
	c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), OnSend: rec.add, Logger: anonLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// What the local API's GET /api/index?wait=1 (riffle ls) calls.
	for range 10 {
		if _, err := c.WaitSyncedIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One sync per epoch joined, whatever ls does.
	if n, e := rec.count(wire.TypeIndexReq), c.Stats().Epochs; n > e {
		t.Fatalf("%d index requests in %d epochs after 10 ls", n, e)
	}
}
