//go:build riffletest

package node

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestPresenceWireShape (§1, §5.4): what a primary receives from a client
// that shares one chunk, one that fetches one file and an idle one,
// epoch by epoch: for each message type the same sequence of sizes. The
// primary's observer records every request it reads on the client and
// PIR protocols; an epoch of a client runs from its registration to its
// next one. (Across types the order of a client's requests follows its
// goroutines' scheduling, not its user, so each type is compared on its
// own; so are the polls' counts, which follow the round timing: their
// sizes are compared as far as all three have them.)
func TestPresenceWireShape(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		type frame struct {
			t    wire.Type
			size int
		}
		var (
			mu    sync.Mutex
			who   = map[peer.ID]int{} // peer → role
			log   = map[int][]frame{} // role → frames in arrival order
			epoch = map[int][][32]byte{}
		)
		p := testParams(4)
		tn := startAnonNet(t, 3, 0, 1, p, func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{Received: func(from peer.ID, ty wire.Type, body []byte) {
				mu.Lock()
				defer mu.Unlock()
				r, ok := who[from]
				if !ok {
					return
				}
				log[r] = append(log[r], frame{ty, len(body)})
				if ty == wire.TypeRegister && len(body) >= 32 {
					epoch[r] = append(epoch[r], [32]byte(body[:32]))
				}
			}}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		newClient := func(srv int) *Client {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		// The file to fetch comes from a client of another primary.
		up := newClient(1)
		link, err := up.Share(ctx, bytes.NewReader(anonRand(t, 3*int(p.ChunkSize))), "fetched.bin", false)
		if err != nil {
			t.Fatal(err)
		}
		const sharer, fetcher, idle = 0, 1, 2
		roles := []string{"sharer", "fetcher", "idle"}
		var cs []*Client
		for r := range roles {
			c := newClient(0)
			mu.Lock()
			who[c.Inspect().PeerID()] = r
			mu.Unlock()
			cs = append(cs, c)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := cs[sharer].Share(ctx, bytes.NewReader(anonRand(t, int(p.ChunkSize)/2)), "one.bin", false); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := cs[fetcher].Get(ctx, link, t.TempDir()); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		// Two more registrations of each: the jobs' epochs are complete.
		mu.Lock()
		n0 := len(epoch[sharer])
		mu.Unlock()
		until(t, ctx, 60*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(epoch[sharer]) >= n0+2 && len(epoch[fetcher]) >= n0+2 && len(epoch[idle]) >= n0+2
		}, "no two epochs after the jobs")
		if st := cs[sharer].Stats(); st.Uploaded == 0 {
			t.Fatalf("the sharer uploaded nothing: %+v", st)
		}
		if st := cs[fetcher].Stats(); st.Fetched == 0 {
			t.Fatalf("the fetcher fetched nothing: %+v", st)
		}
		mu.Lock()
		defer mu.Unlock()
		// Each role's frames split into epochs at its registrations.
		split := func(r int) map[[32]byte]map[wire.Type][]int {
			out := map[[32]byte]map[wire.Type][]int{}
			var cur map[wire.Type][]int
			k := 0
			for _, f := range log[r] {
				if f.t == wire.TypeRegister {
					cur = map[wire.Type][]int{}
					out[epoch[r][k]] = cur
					k++
				}
				if cur != nil {
					cur[f.t] = append(cur[f.t], f.size)
				}
			}
			return out
		}
		by := []map[[32]byte]map[wire.Type][]int{split(sharer), split(fetcher), split(idle)}
		// Polls, and the state requests of a client waiting for its
		// final descriptor (waitstate.go): how many follow the wait's
		// length and fresh randomness, not the job; their sizes are
		// still compared.
		polls := map[wire.Type]bool{wire.TypeWaitOpen: true, wire.TypeWaitList: true, wire.TypeStateReq: true}
		compared, frames := 0, 0
		for _, id := range epoch[idle][:len(epoch[idle])-1] { // the last is incomplete
			a, b, c := by[sharer][id], by[fetcher][id], by[idle][id]
			if a == nil || b == nil || c == nil {
				continue // not registered by all three
			}
			types := map[wire.Type]bool{}
			for _, m := range []map[wire.Type][]int{a, b, c} {
				for ty := range m {
					types[ty] = true
				}
			}
			for ty := range types {
				s := [][]int{a[ty], b[ty], c[ty]}
				l := min(len(s[0]), len(s[1]), len(s[2]))
				if !polls[ty] && (len(s[0]) != len(s[1]) || len(s[0]) != len(s[2])) {
					t.Fatalf("epoch %x, type %d: %d, %d and %d messages (sharer, fetcher, idle)", id[:4], ty, len(s[0]), len(s[1]), len(s[2]))
				}
				for i := 0; i < l; i++ {
					if s[0][i] != s[1][i] || s[0][i] != s[2][i] {
						t.Fatalf("epoch %x, type %d, message %d: sharer %d bytes, fetcher %d, idle %d", id[:4], ty, i, s[0][i], s[1][i], s[2][i])
					}
				}
				frames += l
			}
			compared++
		}
		if compared < 2 {
			t.Fatalf("only %d epochs compared", compared)
		}
		t.Logf("%d epochs, %d messages of each client compared", compared, frames)
	})
}
