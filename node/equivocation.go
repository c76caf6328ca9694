package node

import (
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/chargelog"
)

// Equivocation of one number (docs/protocol.md §3, "One certificate per
// number"): a server's signature of the final descriptor of N and its
// timeout signature of N, which an honest server never both signs (the
// marks of internal/signed), is evidence (wire.EvEquiv, blame.ChargeOf)
// charged to its signer.

// noteEquivocations logs, as evidence charged through the log, every
// server that signed both final and timeout (two certificates of one
// number, the timeout's signatures not yet checked), and relays it to
// the live servers. Never call with s.cert.mu held.
func (s *Server) noteEquivocations(final, timeout *wire.Cert) {
	ctx, err := blame.CertContext(final)
	if err != nil {
		return
	}
	evs, who := chargelog.Equivocations(final, timeout)
	for i, ev := range evs {
		grew, err := s.ref.LogCharge(ev, ctx)
		if err != nil {
			s.log.Debug("equivocation refused", "number", final.Number, "err", err)
			continue
		}
		if grew {
			s.log.Warn("a server signed the final descriptor of a number and its timeout", "peer", who[i].ShortString(), "number", final.Number)
			s.evs().Spread(ev, s.members.Chain(), "")
		}
	}
}
