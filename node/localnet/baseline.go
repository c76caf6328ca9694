package localnet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	yamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/riffle-net/riffle/node"
)

// baselineProto is the protocol of the baseline: the client writes b bytes,
// the server answers with b bytes, once per round, on one long-lived stream.
const baselineProto = protocol.ID("/riffle-bench/baseline/1")

// NewPlainHost starts a libp2p host with the transport stack riffle's
// servers use on loopback (TCP, TLS 1.3, yamux, riffle's resource limits),
// listening on 127.0.0.1 when listen is true. The baseline and the
// loopback ceiling run on it, so that they pay what riffle's links pay.
func NewPlainHost(listen bool) (host.Host, error) {
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(node.ResourceLimits()))
	if err != nil {
		return nil, fmt.Errorf("localnet: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Security(libp2ptls.ID, libp2ptls.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(rm),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	}
	if listen {
		opts = append(opts, libp2p.ListenAddrStrings(loopback))
	} else {
		opts = append(opts, libp2p.NoListenAddrs)
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("localnet: libp2p host: %w", err)
	}
	return h, nil
}

// BaselineResult is what Baseline measured: the per-client goodput of
// moving b bytes up and b bytes down per round straight over libp2p.
type BaselineResult struct {
	Clients, ChunkSize, Rounds int
	Time                       time.Duration // until the last client ended
	RoundTime                  time.Duration // Time / Rounds
	Goodput                    float64       // bytes per client per second, each way
}

// ServeBaseline answers the baseline's protocol on h: on each stream, for
// every b bytes read, b bytes back, until the client closes its side.
func ServeBaseline(h host.Host, b int) error {
	if b < 1 {
		return fmt.Errorf("localnet: baseline chunk size %d", b)
	}
	// The server answers every request with the same b bytes: what it
	// sends does not matter, only that it is b bytes a round.
	answer := make([]byte, b)
	if _, err := rand.Read(answer); err != nil {
		return err
	}
	h.SetStreamHandler(baselineProto, func(s network.Stream) {
		defer s.Close()
		buf := make([]byte, b)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				if err != io.EOF {
					s.Reset()
				}
				return
			}
			if _, err := s.Write(answer); err != nil {
				s.Reset()
				return
			}
		}
	})
	return nil
}

// Baseline is riffle's yardstick without anonymity: one server host and
// clients hosts in this process on 127.0.0.1; every client, at once, for
// rounds rounds, uploads b bytes to the server and downloads b bytes back
// on one stream. It moves the bytes a riffle client moves in a round with
// k = 1 (one onion up, one PIR answer down) between the same kinds of
// hosts, with no mixing, no PIR, no store and no chain.
func Baseline(ctx context.Context, clients, b, rounds int) (BaselineResult, error) {
	if clients < 1 || b < 1 || rounds < 1 {
		return BaselineResult{}, fmt.Errorf("localnet: baseline needs 1+ clients, b and rounds (got %d, %d, %d)", clients, b, rounds)
	}
	srv, err := NewPlainHost(true)
	if err != nil {
		return BaselineResult{}, err
	}
	defer srv.Close()
	if err := ServeBaseline(srv, b); err != nil {
		return BaselineResult{}, err
	}
	return BaselineClients(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}, clients, b, rounds)
}

// BaselineClients is the client half of Baseline against a server
// (ServeBaseline) anywhere, e.g. in another process.
func BaselineClients(ctx context.Context, info peer.AddrInfo, clients, b, rounds int) (BaselineResult, error) {
	if clients < 1 || b < 1 || rounds < 1 {
		return BaselineResult{}, fmt.Errorf("localnet: baseline needs 1+ clients, b and rounds (got %d, %d, %d)", clients, b, rounds)
	}
	hosts := make([]host.Host, clients)
	defer func() {
		for _, h := range hosts {
			if h != nil {
				h.Close()
			}
		}
	}()
	streams := make([]network.Stream, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	// Connect every client first, so that the timing holds only the rounds.
	for i := range hosts {
		wg.Go(func() {
			h, err := NewPlainHost(false)
			if err != nil {
				errs[i] = err
				return
			}
			hosts[i] = h
			if err := h.Connect(ctx, info); err != nil {
				errs[i] = err
				return
			}
			streams[i], errs[i] = h.NewStream(ctx, info.ID, baselineProto)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return BaselineResult{}, fmt.Errorf("localnet: baseline connect: %w", err)
	}
	up := make([]byte, b)
	if _, err := rand.Read(up); err != nil {
		return BaselineResult{}, err
	}
	start := time.Now()
	for i, s := range streams {
		wg.Go(func() {
			defer s.Close()
			down := make([]byte, b)
			for range rounds {
				if _, err := s.Write(up); err != nil {
					errs[i] = err
					return
				}
				if _, err := io.ReadFull(s, down); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return BaselineResult{}, fmt.Errorf("localnet: baseline rounds: %w", err)
	}
	return BaselineResult{Clients: clients, ChunkSize: b, Rounds: rounds, Time: elapsed,
		RoundTime: elapsed / time.Duration(rounds), Goodput: float64(b*rounds) / elapsed.Seconds()}, nil
}
