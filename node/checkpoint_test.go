//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// TestCheckpointRounds: the checkpoints of an epoch follow from the group
// constants alone, past the lag that the sync's time needs at the pace.
func TestCheckpointRounds(t *testing.T) {
	if lag := proto.CheckpointLag(DefaultRoundIntervalMs, 2); lag != 27 {
		t.Fatalf("lag %d rounds at 800 ms", lag)
	}
	if got := proto.Checkpoints(256, DefaultRoundIntervalMs, 2); len(got) != 14 || got[0] != 32 || got[13] != 240 {
		t.Fatalf("checkpoints %v", got)
	}
	// A fast pace leaves no time for a sync within an epoch: none.
	if got := proto.Checkpoints(256, MinRoundIntervalMs, 2); len(got) != 0 {
		t.Fatalf("checkpoints at 10 ms: %v", got)
	}
}

// firstRequests records, per client, the first (epoch, round) a job of it
// requested one of a set of ids.
type firstRequests struct {
	mu    sync.Mutex
	ids   map[[32]byte]bool
	first map[string]struct {
		epoch [32]byte
		round uint32
	}
}

func (f *firstRequests) observer(name string) *ClientObserver {
	return &ClientObserver{Requested: func(epoch [32]byte, r uint32, ids [][32]byte) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.first[name]; ok {
			return
		}
		for _, id := range ids {
			if f.ids[id] {
				f.first[name] = struct {
					epoch [32]byte
					round uint32
				}{epoch, r}
				return
			}
		}
	}}
}

// TestCheckpointGet (§6.4 v3, checkpoints): a file shared early in an
// epoch is fetched from that epoch's first checkpoint at or after its
// root's publication round plus the lag, not the next epoch; a getter
// whose primary leaves the file's manifest out of every index page it
// sends starts at the same round, its copy completed from the other
// servers at once (a primary that withholds a manifest delays nobody's
// get while one server of the chain hands it over). Its positive
// control, a getter that takes its primary's copy as whole, does not
// request the file in that epoch.
func TestCheckpointGet(t *testing.T) {
	t.Parallel()
	for _, control := range []bool{false, true} {
		virtual(t, func(t *testing.T) { checkpointGet(t, control) })
	}
}

func checkpointGet(t *testing.T, control bool) {
	p := testParams(96)
	p.ChunkSize = MinChunkSize
	p.RoundIntervalMs = 400
	lag := proto.CheckpointLag(p.RoundIntervalMs, uint32(p.W))
	data := make([]byte, 3*MinChunkSize-500)
	rand.Read(data)
	fr := &firstRequests{ids: map[[32]byte]bool{}, first: map[string]struct {
		epoch [32]byte
		round uint32
	}{}}
	var root [32]byte
	_, err := chunker.Share(bytes.NewReader(data), "c.bin", "", MinChunkSize, chunker.ShareOptions{}, func(id chunker.ID, c []byte) error {
		if proto.IsManifest(c) {
			root = id
		} else {
			fr.ids[id] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var victimID atomic.Value
	victimID.Store(peer.ID(""))
	tn := startAnonNet(t, 3, 0, 2, p, func(i int, c *ServerConfig) {
		if i == 0 {
			// The victim's primary leaves the file's manifest out of
			// every page it sends the victim.
			c.observe = &testObserver{IndexReply: func(to peer.ID, mans []store.Manifest) []store.Manifest {
				if to != victimID.Load().(peer.ID) {
					return mans
				}
				return slices.DeleteFunc(slices.Clone(mans), func(m store.Manifest) bool { return m.ID == root })
			}}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := func(name string, primary int) *Client {
		o := fr.observer(name)
		o.NoGapFill = control && name == "victim"
		c, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[primary].Addrs()[0].String(), Logger: anonLogger(),
			ClientHookCfg: ClientHookCfg{Observe: o}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	up, honest, victim := start("up", 1), start("honest", 2), start("victim", 0)
	victimID.Store(victim.Inspect().PeerID())
	// Share at an epoch's start, so that the root goes out in its first
	// rounds.
	n := up.Stats().Epochs
	if err := wait.Until(ctx, time.Hour, func() bool { return up.Stats().Epochs > n }); err != nil {
		t.Fatalf("no epoch: %v", err)
	}
	link, err := up.Share(ctx, bytes.NewReader(data), "c.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	epochs := up.Stats().Epochs
	var entry IndexEntry
	idx, err := tn.servers[1].store.Index()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range idx {
		if e.FileID == [32]byte(link.ID) {
			entry = e
		}
	}
	if entry.Round+lag >= p.Rounds {
		t.Fatalf("the root was taken in round %d: no checkpoint after it", entry.Round)
	}
	var q uint32
	for _, x := range proto.Checkpoints(p.Rounds, p.RoundIntervalMs, uint32(p.W)) {
		if x >= entry.Round+lag {
			q = x
			break
		}
	}
	type res struct {
		path string
		err  error
	}
	done := make(chan res, 2)
	for _, c := range []*Client{honest, victim} {
		go func() {
			path, err := c.Get(ctx, link, t.TempDir())
			done <- res{path, err}
		}()
	}
	if control {
		// The honest getter is enough: the victim's epoch is over by then.
		if err := wait.Until(ctx, 5*time.Minute, func() bool {
			// Stats takes the client's lock, which the client holds
			// while its observer takes fr.mu: not under fr.mu.
			fr.mu.Lock()
			_, ok := fr.first["honest"]
			fr.mu.Unlock()
			return ok && up.Stats().Epochs > epochs
		}); err != nil {
			t.Fatal(err)
		}
		fr.mu.Lock()
		h, v := fr.first["honest"], fr.first["victim"]
		fr.mu.Unlock()
		if v.epoch == h.epoch && v.round == h.round {
			t.Fatalf("positive control: a victim without the fallback started with the others, round %d", v.round)
		}
		return
	}
	for range 2 {
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		got, err := os.ReadFile(r.path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched file differs (%v)", err)
		}
	}
	fr.mu.Lock()
	h, v := fr.first["honest"], fr.first["victim"]
	fr.mu.Unlock()
	t.Logf("root taken in round %d; checkpoint %d; first requests: honest round %d, victim round %d", entry.Round, q, h.round, v.round)
	if h.epoch != entry.Epoch || h.round < q || h.round > q+uint32(p.W)+1 {
		t.Fatalf("the honest getter first asked in round %d (same epoch %v), want from checkpoint %d of the publication's epoch", h.round, h.epoch == entry.Epoch, q)
	}
	if v.epoch != h.epoch || v.round != h.round {
		t.Fatalf("the victim first asked in round %d (same epoch %v), the honest getter in round %d", v.round, v.epoch == h.epoch, h.round)
	}
	if victim.Stats().CheckpointMissed != 0 {
		t.Fatalf("victim missed %d manifests", victim.Stats().CheckpointMissed)
	}
}
