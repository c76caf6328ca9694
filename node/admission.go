package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/intake"
)

// addrRange is the address range a peer connects from (IPv4 /24, IPv6
// /48); every loopback client is in one range.
func (s *Server) addrRange(p peer.ID) string {
	rng, _ := s.addrRanges(p)
	return rng
}

// addrRanges is addrRange and the wider range it lies in, IPv6 /32 (""
// for IPv4, loopback and unknown addresses): tunnel brokers hand out
// /48s of a few /32s (indexserve.go).
func (s *Server) addrRanges(p peer.ID) (rng, wide string) {
	for _, a := range s.h.RemoteAddrs(p) {
		if ip := remoteIP(a); ip != nil {
			return intake.IPRange(ip), intake.WideRange(ip)
		}
	}
	return "unknown", ""
}
