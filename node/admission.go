package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// admissionOrder is this primary's order of its registrations of e
// (internal/registry), over the long-term key records of ltexclude.go.
func (s *Server) admissionOrder(e *sepoch) [][32]byte {
	seen := func(key [32]byte) (bool, bool) {
		seen, ok := s.keys.Seen(key)
		return seen.Dry > 0, ok
	}
	out, err := e.reg.AdmissionOrder(proto.PrimaryQuota(e.v.Desc.Params.MaxClients, len(e.v.Chain)), seen, s.rand)
	if err != nil {
		// No randomness: registration-key order.
		s.log.Error("admission order", "err", err)
	}
	return out
}

// fixOrder fixes e's admission order once, at this primary's registration
// deadline or its close: its first n_max registrations by admissionOrder.
// Call with s.mu held.
func (s *Server) fixOrder(e *sepoch) {
	if !e.reg.Fixed() {
		e.reg.Fix(s.admissionOrder(e), int(e.v.Desc.Params.MaxClients))
	}
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
