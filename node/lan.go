package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
)

// LAN discovery. libp2p's mDNS service needs a module that is not in this
// repository's go.sum, so servers announce themselves with a small UDP
// multicast beacon instead (docs/proto-node.md): "riffle/1 beacon", then a
// u32-prefixed peer id and the Hello encoding. A beacon is only an address
// hint: the roster admits a server only after an authenticated hello over
// libp2p.
const (
	lanGroup      = "239.255.82.70:4435" // organisation-local multicast group
	lanEvery      = 5 * time.Second
	lanMaxPacket  = 1400
	lanBeaconTag  = "riffle/1 beacon"
	lanMaxTargets = 64 // distinct peers answered per interval
)

func (s *Server) lanBeacon() []byte {
	e := wire.Enc{B: []byte(lanBeaconTag)}
	e.Bytes([]byte(s.h.ID()))
	h := s.hello()
	for len(h.Marshal())+len(e.B)+4 > lanMaxPacket && len(h.Addrs) > 0 {
		h.Addrs = h.Addrs[:len(h.Addrs)-1]
	}
	e.Bytes(h.Marshal())
	return e.B
}

func parseBeacon(b []byte) (peer.ID, []ma.Multiaddr, error) {
	if len(b) < len(lanBeaconTag) || string(b[:len(lanBeaconTag)]) != lanBeaconTag {
		return "", nil, fmt.Errorf("node: not a riffle beacon")
	}
	d := wire.Dec{B: b[len(lanBeaconTag):]}
	idb := d.Bytes(wire.MaxPeerID, "peer id")
	hb := d.Bytes(lanMaxPacket, "hello")
	if err := d.Done("beacon"); err != nil {
		return "", nil, err
	}
	id, err := peer.IDFromBytes(idb)
	if err != nil {
		return "", nil, fmt.Errorf("node: beacon peer id: %w", err)
	}
	_, addrs, err := parseHello(hb)
	return id, addrs, err
}

// startLAN runs the beacon sender and listener until ctx ends.
func (s *Server) startLAN(ctx context.Context) error {
	gaddr, err := net.ResolveUDPAddr("udp4", lanGroup)
	if err != nil {
		return fmt.Errorf("node: lan group: %w", err)
	}
	lc, err := net.ListenMulticastUDP("udp4", nil, gaddr)
	if err != nil {
		return fmt.Errorf("node: lan discovery listen on %s: %w", lanGroup, err)
	}
	sc, err := net.DialUDP("udp4", nil, gaddr)
	if err != nil {
		lc.Close()
		return fmt.Errorf("node: lan discovery send: %w", err)
	}
	s.closers = append(s.closers, lc.Close, sc.Close)
	go func() {
		t := time.NewTicker(lanEvery)
		defer t.Stop()
		for {
			_, _ = sc.Write(s.lanBeacon())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		buf := make([]byte, lanMaxPacket)
		for {
			n, _, err := lc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			id, addrs, err := parseBeacon(buf[:n])
			if err != nil || id == s.h.ID() || s.roster.get(id) != nil {
				continue
			}
			s.h.Peerstore().AddAddrs(id, addrs, rosterTTL*2)
			go func() {
				if err := s.sayHello(ctx, id); err != nil {
					s.log.Debug("lan hello failed", "peer", id.ShortString(), "err", err)
				}
			}()
		}
	}()
	return nil
}
