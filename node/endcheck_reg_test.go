//go:build riffletest

package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// TestEndCheckStallKeepsRegistration (issue 26): a client's registration
// in an epoch follows public state and fresh randomness only, whatever its
// primary did to the end check of the epoch before. The primary stalls
// that end check's sync 14 s (past its half of the sync time, so the
// client turns to the other servers, 16 s at most after the last list);
// the client still asks for the next epoch's window and registers while
// the stalled page is out, within the window fetch and its random offset
// (the first third of the registration window) of its window request.
// The end check runs beside the next epoch's registration: only the
// index sync after it waits for the check (TestSyncStallDelaysEverySlot).
// With the registration made to wait for the check (a change tried, not
// kept), the window was asked 8 s after the stall began, once the check's
// half at the primary ran out, and the test failed.
func TestEndCheckStallKeepsRegistration(t *testing.T) {
	t.Parallel()
	long(t)
	virtual(t, func(t *testing.T) {
		p := testParams(12)
		p.RegWindowMs = DefaultParams().RegWindowMs
		const stall = 14 * time.Second
		var (
			mu                 sync.Mutex
			victim             peer.ID
			slots              = map[[32]byte]uint32{} // the victim's slot by epoch
			armed              atomic.Bool
			stallFrom, stallTo time.Time
			windowAt, regAt    []time.Time // the victim's asks at its primary
		)
		tn := startAnonNet(t, 3, 0, 2, p, func(i int, c *ServerConfig) {
			if i != 0 {
				return
			}
			c.observe = &testObserver{
				Submit: func(epoch [32]byte, r, sl uint32, _ time.Time) {
					mu.Lock()
					defer mu.Unlock()
					if s, ok := slots[epoch]; ok && s == sl && r == p.Rounds-1 && stallFrom.IsZero() {
						armed.Store(true) // the next page the victim asks for is its end check's
					}
				},
				IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
					mu.Lock()
					hit := to == victim
					mu.Unlock()
					if hit && armed.CompareAndSwap(true, false) {
						mu.Lock()
						stallFrom = time.Now()
						mu.Unlock()
						time.Sleep(stall)
						mu.Lock()
						stallTo = time.Now()
						mu.Unlock()
					}
					return mans
				},
				Received: func(from peer.ID, ty wire.Type, _ []byte) {
					mu.Lock()
					defer mu.Unlock()
					if from != victim {
						return
					}
					switch ty {
					case wire.TypeWindowReq:
						windowAt = append(windowAt, time.Now())
					case wire.TypeRegister:
						regAt = append(regAt, time.Now())
					}
				},
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		client := func(srv int, o *ClientObserver) *Client {
			c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[srv].Addrs()[0].String(), Logger: anonLogger(),
				ClientHookCfg: ClientHookCfg{Observe: o}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		client(1, nil)
		mu.Lock()
		v := client(0, &ClientObserver{Joined: func(epoch [32]byte, slot uint32, _ []byte) {
			mu.Lock()
			slots[epoch] = slot
			mu.Unlock()
		}})
		victim = v.Inspect().PeerID()
		mu.Unlock()
		// The stall, then a registration after it began.
		if err := wait.Until(ctx, 2*time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return !stallTo.IsZero() && len(regAt) > 0 && regAt[len(regAt)-1].After(stallFrom)
		}); err != nil {
			t.Fatal("no registration after the stalled end check")
		}
		mu.Lock()
		defer mu.Unlock()
		var reg, win time.Time
		for _, at := range regAt {
			if at.After(stallFrom) {
				reg = at
				break
			}
		}
		for _, at := range windowAt {
			if !at.After(reg) {
				win = at
			}
		}
		offset := time.Duration(p.RegWindowMs) * time.Millisecond / 3
		t.Logf("end check stalled from %v to %v; the next window asked %v after the stall began, the registration %v after it (%v after the window ask)",
			stallFrom.Format("15:04:05.000"), stallTo.Format("15:04:05.000"), win.Sub(stallFrom), reg.Sub(stallFrom), reg.Sub(win))
		// The check cannot end before the primary's half of its sync
		// time ran out: the primary's page was stalled past it.
		if half := stallFrom.Add(proto.CheckpointSyncTime / 2); !reg.Before(half) {
			t.Fatalf("the registration came %v after the stalled end check's half at the primary ran out: it waited for the check", reg.Sub(half))
		}
		if win.Before(stallFrom) || reg.Sub(win) > offset+time.Second {
			t.Fatalf("registration %v after the window ask, want within the offset's %v and a second for the fetch", reg.Sub(win), offset)
		}
	})
}
