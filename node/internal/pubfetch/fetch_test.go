package pubfetch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

const grace = time.Second

// host is a chain of self, a, b, c and the last server; calls answers
// each peer's fetch (nil: it hangs until asked no more).
type host struct {
	mu      sync.Mutex
	changed chan struct{}
	taken   bool
	calls   map[peer.ID]func() ([]byte, error)
	asked   []peer.ID
	askedAt []time.Duration
	start   time.Time
	wg      sync.WaitGroup
}

func (h *host) Self() peer.ID { return "self" }
func (h *host) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		h.mu.Lock()
		if cond() {
			h.mu.Unlock()
			return nil
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
func (h *host) Locked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}
func (h *host) Gone(*Epoch, uint32) bool { return h.taken }
func (h *host) Taken(*Epoch, uint32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.taken
}
func (h *host) Admit(*Epoch, uint32) error   { return nil }
func (h *host) Due(*Epoch, uint32) time.Time { return time.Time{} }
func (h *host) Grace(*Epoch) time.Duration   { return grace }
func (h *host) Take(_ *Epoch, raw []byte) error {
	if string(raw) != "publication" {
		return errors.New("does not check")
	}
	h.mu.Lock()
	h.taken = true
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	return nil
}
func (h *host) Call(ctx context.Context, p peer.ID, _ transport.Request) ([]byte, error) {
	h.mu.Lock()
	h.asked = append(h.asked, p)
	h.askedAt = append(h.askedAt, time.Since(h.start))
	f := h.calls[p]
	h.mu.Unlock()
	if f == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f()
}
func (h *host) Go(f func()) {
	h.wg.Add(1)
	go func() { defer h.wg.Done(); f() }()
}

func setup(calls map[peer.ID]func() ([]byte, error)) (*Service, *host, *Epoch) {
	h := &host{changed: make(chan struct{}), calls: calls, start: time.Now()}
	v := &proto.View{ID: [32]byte{1}, Chain: []peer.ID{"self", "a", "b", "c", "last"}, Desc: &wire.Descriptor{Params: wire.Params{Rounds: 8, RoundLimitMs: 10000}}}
	sv := &Service{Host: h, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Ctx: context.Background()}
	return sv, h, &Epoch{V: v, Kept: &Kept{}}
}

func ok() ([]byte, error)   { return []byte("publication"), nil }
func bad() ([]byte, error)  { return []byte("forged"), nil }
func fail() ([]byte, error) { return nil, errors.New("refused") }

// TestFetchStaggered: the holders are asked one at a time, the next at
// once when one fails or a copy does not check, else after the grace;
// the first copy that checks is taken and nobody more is asked; neither
// the last server nor this one is asked.
func TestFetchStaggered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sv, h, ep := setup(map[peer.ID]func() ([]byte, error){"a": fail, "b": bad, "d": ok})
		// a fails, b's copy does not check, c hangs: d is asked a grace
		// after c.
		from := []peer.ID{"self", "last", "a", "b", "c", "d", "e"}
		h.calls["d"] = ok
		if !sv.Fetch(context.Background(), ep, 3, from) {
			t.Fatal("the publication not taken")
		}
		want := []peer.ID{"a", "b", "c", "d"}
		if len(h.asked) != len(want) {
			t.Fatalf("asked %v, want %v", h.asked, want)
		}
		for i, p := range want {
			if h.asked[i] != p {
				t.Fatalf("asked %v, want %v", h.asked, want)
			}
		}
		if h.askedAt[2] != 0 || h.askedAt[3] != grace {
			t.Fatalf("asked at %v: c at once after the failures, d a grace after c", h.askedAt)
		}
	})
}

// TestServeBounded: a kept publication goes to each chain position at
// most Serves times, to nobody outside the chain nor to this server,
// and not at all once dropped.
func TestServeBounded(t *testing.T) {
	sv, _, ep := setup(nil)
	if _, _, err := sv.Serve(ep, "a", 2); err == nil {
		t.Fatal("a publication served that is not kept")
	}
	ep.Kept.Keep(2, []byte("publication"))
	for i := range Serves {
		if _, raw, err := sv.Serve(ep, "a", 2); err != nil || string(raw) != "publication" {
			t.Fatalf("copy %d: %q %v", i, raw, err)
		}
	}
	if _, _, err := sv.Serve(ep, "a", 2); err == nil {
		t.Fatal("a copy past the bound served")
	}
	if _, _, err := sv.Serve(ep, "b", 2); err != nil {
		t.Fatalf("another position refused: %v", err)
	}
	for _, p := range []peer.ID{"stranger", "self"} {
		if _, _, err := sv.Serve(ep, p, 2); err == nil {
			t.Fatalf("served to %s", p)
		}
	}
	if ep.Kept.Served(2, 1) != Serves {
		t.Fatalf("served %d to position 1", ep.Kept.Served(2, 1))
	}
	ep.Kept.Drop(2)
	if _, _, err := sv.Serve(ep, "b", 2); err == nil {
		t.Fatal("a dropped publication served")
	}
}

// TestFetchFromOnce: a server asked to sign a list before the
// publication came asks S_0 once a round, after the grace.
func TestFetchFromOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The transfer takes a while (virtual time): a second fetch
		// would have begun meanwhile.
		slow := func() ([]byte, error) { time.Sleep(100 * time.Millisecond); return ok() }
		sv, h, ep := setup(map[peer.ID]func() ([]byte, error){"a": slow})
		for range 3 {
			h.Locked(func() { sv.FetchFrom(ep, 4, "a") })
		}
		h.wg.Wait()
		if len(h.asked) != 1 || h.askedAt[0] != grace || !h.taken {
			t.Fatalf("asked %v at %v, taken %v; want a once, a grace on", h.asked, h.askedAt, h.taken)
		}
	})
}
