package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// admissionOrder is this primary's order of its registrations of e, at its
// close (internal/intake's admission order, over the long-term key
// records of ltexclude.go). Call with s.mu held.
func (s *Server) admissionOrder(e *sepoch) [][32]byte {
	cs := e.Table.Candidates(func(key [32]byte) (bool, bool) {
		seen, ok := s.keys.Seen(key)
		return seen.Dry > 0, ok
	})
	quota := proto.PrimaryQuota(e.v.Desc.Params.MaxClients, len(e.v.Chain))
	out, err := intake.Order(cs, intake.RangeCap(quota), s.rand)
	if err != nil {
		// No randomness: fall back on registration-key order.
		s.log.Error("admission order", "err", err)
		out = intake.KeyOrder(cs)
	}
	return out
}

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
