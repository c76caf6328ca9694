package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
)

// LAN discovery is libp2p's mDNS service (docs/proto-node.md). An answer is
// only an address hint: the roster admits a server only after the
// authenticated libp2p hello of node's roster.go. Anyone on the LAN can answer, so
// what an answer can make a server do is bounded: a few addresses per peer,
// a few hellos in flight, a hello budget per minute and a per-peer retry
// delay.
const (
	// mdnsService is the DNS-SD service type servers advertise and browse.
	// The mdns package passes it to zeroconf unchecked, where a comma
	// starts a subtype list and a dot a new label; RFC 6763 §7 wants
	// "_<name>._<proto>" with a name of at most 15 letters, digits and
	// inner hyphens (RFC 6335 §5.1). "_udp" as libp2p's own "_p2p._udp"
	// does; the "-1" follows the protocol version, so servers of another
	// version do not even answer.
	mdnsService = "_riffle-1._udp"
	// lanMaxAddrs is the number of addresses taken from one answer: as
	// many as a hello carries.
	lanMaxAddrs = wire.MaxAddrs
	// lanMaxHellos is the number of hellos to found peers in flight.
	lanMaxHellos = 4
	// lanHellosPerMinute bounds the dials that answers can cause; one
	// answered hello is enough to join a LAN's servers, since hellos
	// gossip the rest.
	lanHellosPerMinute = 32
	// A found peer is not tried again for LANConfig.Retry, whatever
	// came of the last try: mDNS repeats answers, and a server that
	// answered a hello stays in the roster through the roster's own
	// hellos.
	// lanMaxTracked bounds the per-peer retry map; a flood of fresh peer
	// ids evicts the oldest entries, and still meets the budget above.
	lanMaxTracked = 1024
	// LANConfig.HelloTimeout bounds one hello to a found peer: on a
	// LAN it answers in milliseconds or not at all.
)

// LANConfig is what LAN discovery takes from its server.
type LANConfig struct {
	// Known reports a peer already in the roster: nothing to do.
	Known func(peer.ID) bool
	// Hello is the server's authenticated hello to a found peer.
	Hello func(context.Context, peer.ID) error
	// Retry is how long a found peer is not tried again (Tunables.LANRetry);
	// HelloTimeout bounds one hello (Tunables.LANHelloTimeout).
	Retry, HelloTimeout time.Duration
	// AddrTTL is how long a found peer's addresses are kept.
	AddrTTL time.Duration
	Log     *slog.Logger
}

// LAN turns mDNS answers into bounded hello attempts.
type LAN struct {
	h     Host
	cfg   LANConfig
	ctx   context.Context
	hello func(context.Context, peer.ID) error // cfg.Hello; tests count it
	sem   chan struct{}                        // hellos in flight
	wg    sync.WaitGroup                       // hello goroutines

	mu       sync.Mutex
	closed   bool
	tried    map[peer.ID]time.Time // last hello attempt, for LANRetry
	winStart time.Time             // start of the current budget minute
	winCount int                   // hellos started in it
}

// NewLAN returns h's LAN notifee, its hellos ending with ctx.
func NewLAN(ctx context.Context, h Host, cfg LANConfig) *LAN {
	return &LAN{h: h, cfg: cfg, ctx: ctx, hello: cfg.Hello, sem: make(chan struct{}, lanMaxHellos), tried: map[peer.ID]time.Time{}}
}

// StartLAN advertises h over mDNS and says hello to the servers it finds,
// until the returned stop.
func StartLAN(ctx context.Context, h Host, cfg LANConfig) (stop func() error, err error) {
	lh, ok := Libp2pOf(h)
	if !ok {
		return nil, errors.New("node: LAN discovery needs libp2p")
	}
	n := NewLAN(ctx, h, cfg)
	svc := mdns.NewMdnsService(lh, mdnsService, n)
	if err := svc.Start(); err != nil {
		svc.Close()
		return nil, fmt.Errorf("node: mdns: %w", err)
	}
	// The service first, so that no answer arrives once the notifee waits
	// for its hellos.
	return func() error {
		err := svc.Close()
		n.Close()
		return err
	}, nil
}

// lanAddrs returns at most lanMaxAddrs of an answer's addresses, only those
// on IP: a DNS name would send a lookup off the LAN on a stranger's word,
// and a relay or browser transport is no LAN route (the mdns package
// advertises neither).
func lanAddrs(addrs []ma.Multiaddr) []ma.Multiaddr {
	var out []ma.Multiaddr
	for _, a := range addrs {
		if len(out) == lanMaxAddrs {
			break
		}
		if len(a) == 0 {
			continue
		}
		if c := a[0].Protocol().Code; c != ma.P_IP4 && c != ma.P_IP6 {
			continue
		}
		if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
			continue
		}
		out = append(out, a)
	}
	return out
}

// HandlePeerFound is called by the mdns service, in a goroutine of its own,
// for each peer an answer names. It never blocks: a find that is over a
// bound is dropped, and mDNS will repeat it.
func (n *LAN) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == "" || ai.ID == n.h.ID() || n.cfg.Known(ai.ID) {
		return
	}
	addrs := lanAddrs(ai.Addrs)
	if len(addrs) == 0 {
		return
	}
	now := time.Now()
	n.mu.Lock()
	if n.closed || n.ctx.Err() != nil {
		n.mu.Unlock()
		return
	}
	if t, ok := n.tried[ai.ID]; ok && now.Sub(t) < n.cfg.Retry {
		n.mu.Unlock()
		return
	}
	if now.Sub(n.winStart) >= time.Minute {
		n.winStart, n.winCount = now, 0
	}
	if n.winCount >= lanHellosPerMinute {
		n.mu.Unlock()
		return
	}
	select {
	case n.sem <- struct{}{}:
	default:
		n.mu.Unlock()
		return
	}
	n.winCount++
	n.track(ai.ID, now)
	// Under mu, so that close cannot start waiting before this Add.
	n.wg.Add(1)
	n.mu.Unlock()

	n.h.AddAddrs(ai.ID, addrs, n.cfg.AddrTTL)
	go func() {
		defer n.wg.Done()
		defer func() { <-n.sem }()
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.HelloTimeout)
		defer cancel()
		if err := n.hello(ctx, ai.ID); err != nil {
			n.cfg.Log.Debug("lan hello failed", "peer", ai.ID.ShortString(), "err", err)
			return
		}
		// In the roster now, and kept there by its hellos: forget it,
		// so that it is tried at once if it ever drops out and is found
		// again.
		n.mu.Lock()
		delete(n.tried, ai.ID)
		n.mu.Unlock()
	}()
}

// track records a hello attempt to id at now, keeping at most
// lanMaxTracked entries. Called with mu held.
func (n *LAN) track(id peer.ID, now time.Time) {
	if len(n.tried) >= lanMaxTracked {
		for p, t := range n.tried {
			if now.Sub(t) >= n.cfg.Retry {
				delete(n.tried, p)
			}
		}
	}
	if len(n.tried) >= lanMaxTracked {
		var oldest peer.ID
		var ot time.Time
		for p, t := range n.tried {
			if oldest == "" || t.Before(ot) {
				oldest, ot = p, t
			}
		}
		delete(n.tried, oldest)
	}
	n.tried[id] = now
}

// Close refuses further finds and waits for the hellos in flight (they end
// with the server's context, cancelled before the closers run).
func (n *LAN) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.wg.Wait()
	return nil
}

// Tracked reports whether a hello to id is held back for cfg.Retry.
func (n *LAN) Tracked(id peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.tried[id]
	return ok
}
