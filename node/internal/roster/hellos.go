package roster

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
)

// Hellos says and answers a server's hellos (§3): the roster protocol's
// handler, a hello exchanged with one peer, and the loop that greets the
// bootstrap peers and every known server each HelloEvery. Its state is
// Table's (its own lock); it holds no lock across a call.
type Hellos struct {
	Table   *Table
	H       transport.Host
	Version uint16 // the protocol version a hello carries and wants
	Nick    string
	Log     *slog.Logger
	// Saw records a server whose hello was read (in Table, and what
	// else the server keeps of it).
	Saw func(id peer.ID, nick string, addrs []ma.Multiaddr)
	// Forgot runs for each member forgotten for its silence; Tick at
	// each round of hellos, before they leave.
	Forgot func(id peer.ID)
	Tick   func()
}

// Hello is this server's hello now.
func (hs *Hellos) Hello() *wire.Hello {
	return Hello(hs.Version, hs.Nick, hs.H.Addrs(), hs.Table.Live())
}

// learn records the servers a hello gossips as candidates for a hello.
func (hs *Hellos) learn(h *wire.Hello) {
	for _, ai := range Gossiped(h, hs.H.ID()) {
		if hs.Table.Get(ai.ID) == nil && hs.Table.Candidate(ai.ID) {
			hs.H.AddAddrs(ai.ID, ai.Addrs, TTL*2)
		}
	}
}

// OnHello answers a roster hello and records a server peer.
func (hs *Hellos) OnHello(_ context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(transport.ProtoRoster, t); err != nil {
		return 0, nil, err
	}
	h, addrs, err := ParseHello(body, hs.Version)
	if err != nil {
		return 0, nil, err
	}
	if h.Role == RoleServer {
		hs.Saw(from, string(h.Nick), addrs)
		hs.H.AddAddrs(from, addrs, TTL*2)
		hs.learn(h)
	}
	return wire.TypeHello, hs.Hello().Marshal(), nil
}

// Say exchanges hellos with p.
func (hs *Hellos) Say(ctx context.Context, p peer.ID) error {
	return hs.Send(ctx, p, hs.Hello().Marshal())
}

// Send exchanges hellos with p, sending body (a hello of this server).
func (hs *Hellos) Send(ctx context.Context, p peer.ID, body []byte) error {
	rep, err := transport.Call(ctx, hs.H, p, transport.Request{Proto: transport.ProtoRoster, Type: wire.TypeHello, Body: body, Timeout: transport.ShortTimeout / 2})
	if err != nil {
		return err
	}
	h, addrs, err := ParseHello(rep, hs.Version)
	if err != nil {
		return err
	}
	if h.Role == RoleServer {
		hs.Saw(p, string(h.Nick), addrs)
		hs.learn(h)
	}
	return nil
}

// Loop keeps hellos going to the bootstrap peers and every known server,
// so that the roster tracks who is live, until ctx ends.
func (hs *Hellos) Loop(ctx context.Context, boot []peer.AddrInfo) {
	t := time.NewTicker(HelloEvery)
	defer t.Stop()
	for {
		targets := map[peer.ID]bool{}
		for _, b := range boot {
			if b.ID != hs.H.ID() {
				hs.H.AddAddrs(b.ID, b.Addrs, TTL*2)
				targets[b.ID] = true
			}
		}
		// A server silent for Forget gets no more hellos.
		for _, id := range hs.Table.Forget() {
			hs.Forgot(id)
			hs.Log.Debug("server forgotten", "peer", id.ShortString())
		}
		hs.Tick()
		hs.Table.Targets(targets)
		// One hello for every target: they all leave now, and a roster
		// that peers flooded with ids that never answer made a hello
		// each (and its log line) most of a swarm seed's CPU.
		body := hs.Hello().Marshal()
		debug := hs.Log.Enabled(ctx, slog.LevelDebug)
		var wg sync.WaitGroup
		for id := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := hs.Send(ctx, id, body); err != nil && debug {
					hs.Log.Debug("hello failed", "peer", id.ShortString(), "err", err)
				}
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
