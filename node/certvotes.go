package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Timeout votes (§3 (v3) "Epoch numbers and leaders"): a server that saw
// no open descriptor of N within T_lead signs so, N's leader included;
// as many signatures as more than half of a group chain's servers other
// than N's leader certify N by timeout (internal/certs takes and counts
// the votes).

// voteTimeout signs that no open descriptor of n came within T_lead here,
// keeps the vote and sends it to the other servers of chain.
func (s *Server) voteTimeout(n uint64, chain []peer.ID) {
	if s.amnesia.Lost(s.cert.Top()) != nil {
		return
	}
	ids := proto.ChainIDs(chain)
	pos := -1
	for i, p := range chain {
		if p == s.h.ID() {
			pos = i
		}
	}
	// The leader's own vote counts too: at m = 3 a late leader's number
	// whose other voter signed the timeout could neither open (that
	// voter refuses) nor time out without it (TestLateLeaderTimedOut).
	if pos < 0 {
		return
	}
	// Never the timeout of a number whose final descriptor this server
	// signed, and marked on disk before it leaves (internal/signed).
	if err := s.phase.Mark(s.cfg.DataDir, n, false); err != nil {
		s.log.Debug("timeout not signed", "number", n, "err", err)
		return
	}
	sig, err := proto.Sign(s.priv, proto.TimeoutDigest(n, ids))
	if err != nil {
		s.log.Error("timeout unsigned", "err", err)
		return
	}
	v := &wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: ids, Sigs: []wire.CertSig{{Index: uint16(pos), Sig: sig}}}
	s.log.Info("leader silent: timeout signed", "number", n, "leader", proto.LeaderOf(n, chain).ShortString())
	s.cert.NoteVote(v)
	body := v.Marshal()
	var others []peer.ID
	for _, p := range chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	s.notifyAll(others, wire.TypeTimeoutVote, body)
}
