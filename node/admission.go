package node

import (
	"io"
	"log/slog"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// fixOrder fixes e's admission order once, at this primary's registration
// deadline or its close (internal/registry), over the long-term key
// records of ltexclude.go.
func fixOrder(e *sepoch, keys *ltkeys.Keys, rnd io.Reader, log *slog.Logger) {
	n := e.v.Desc.Params.MaxClients
	if err := e.reg.FixOrder(int(n), proto.PrimaryQuota(n, len(e.v.Chain)), seenDry(keys), rnd); err != nil {
		// No randomness: registration-key order.
		log.Error("admission order", "err", err)
	}
}

// seenDry says, of a long-term key with a record in keys, whether its
// slot ran dry since its last clean epoch (the admission order's input).
func seenDry(keys *ltkeys.Keys) func(key [32]byte) (bool, bool) {
	return func(key [32]byte) (bool, bool) {
		seen, ok := keys.Seen(key)
		return seen.Dry > 0, ok
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
