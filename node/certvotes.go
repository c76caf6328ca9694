package node

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Timeout votes (§3 (v3) "Epoch numbers and leaders"): a server that saw
// no open descriptor of N within T_lead signs so; more than half of a
// group chain's servers other than N's leader certify N by timeout
// (certs.go keeps certificates and their precedence).

// voteTimeout signs that no open descriptor of n came within T_lead here,
// keeps the vote and sends it to the other servers of chain.
func (s *Server) voteTimeout(n uint64, chain []peer.ID) {
	if s.lostRecords() != nil {
		return
	}
	ids := proto.ChainIDs(chain)
	pos := -1
	for i, p := range chain {
		if p == s.h.ID() {
			pos = i
		}
	}
	if pos < 0 || pos == int(n%uint64(len(chain))) {
		return
	}
	// Never the timeout of a number whose final descriptor this server
	// signed, and marked on disk before it leaves (equivocation.go).
	if err := s.markPhase(n, false); err != nil {
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
	s.noteVote(v)
	body := v.Marshal()
	var others []peer.ID
	for _, p := range chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	s.notifyAll(others, wire.TypeTimeoutVote, body)
}

// onTimeoutVote takes a signed timeout vote of a server of the group
// certified for its number (certGroup), sent by its signer, for this
// server's next number: anything else is dropped before it is stored
// (outsiders' votes crowded out the group's, issue 25), and a vote ahead
// makes this server catch up instead.
func (s *Server) onTimeoutVote(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var v wire.Cert
	if err := v.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if v.Kind != wire.CertTimeout || len(v.Sigs) != 1 || len(v.Chain) < 2 {
		return 0, nil, errors.New("node: a timeout vote is one server's timeout signature")
	}
	if peer.ID(v.Chain[v.Sigs[0].Index]) != from || s.roster.get(from) == nil {
		return 0, nil, errors.New("node: timeout vote not from its signer, a roster server")
	}
	top := s.cert.certTop()
	switch {
	case v.Number <= top:
		// A vote of a number final here, by a server that signed its
		// final descriptor, is that server's equivocation.
		if c, ok := s.cert.certOf(v.Number); ok && c.Kind == wire.CertFinal && inCertChain(c, from) &&
			proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig) == nil {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.noteEquivocations(c, &v)
			}()
		}
		return wire.TypeAck, ack, nil
	case v.Number > top+1:
		// Its signature first: a forged vote ahead cost a sync each.
		if proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig) == nil {
			s.hookSyncPoked()
			s.cert.pokeSync()
		}
		return wire.TypeAck, ack, nil
	}
	if g, ok := s.certGroup(v.Number); ok {
		if !g[from] {
			return 0, nil, fmt.Errorf("node: timeout vote of %d by %s, outside the group certified for it", v.Number, from.ShortString())
		}
	} else if s.who.foundersSet() || !s.knownServers()[from] {
		return 0, nil, fmt.Errorf("node: timeout vote of %d by %s, not known here", v.Number, from.ShortString())
	}
	if int(v.Sigs[0].Index) == int(v.Number%uint64(len(v.Chain))) {
		return 0, nil, errors.New("node: timeout vote by the number's leader")
	}
	if err := proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig); err != nil {
		return 0, nil, err
	}
	s.noteVote(&v)
	return wire.TypeAck, ack, nil
}

// noteVote adds a verified vote and, once its chain has a quorum that
// verifies here, keeps the timeout certificate.
func (s *Server) noteVote(v *wire.Cert) {
	var e wire.Enc
	for _, p := range v.Chain {
		e.Bytes(p)
	}
	h := sha256.Sum256(e.B)
	signer := string(v.Chain[v.Sigs[0].Index])
	var c *wire.Cert
	s.cert.mu.Lock()
	if s.cert.votes == nil {
		s.cert.votes = map[uint64]*numVotes{}
	}
	nv := s.cert.votes[v.Number]
	if nv == nil {
		nv = &numVotes{sets: map[[32]byte]*voteSet{}, by: map[string][32]byte{}}
		s.cert.votes[v.Number] = nv
	}
	// One vote a signer: a new one replaces its last.
	if old, ok := nv.by[signer]; ok && old != h {
		if prev := nv.sets[old]; prev != nil {
			for i, p := range prev.chain {
				if string(p) == signer {
					delete(prev.sigs, uint16(i))
				}
			}
			if len(prev.sigs) == 0 {
				delete(nv.sets, old)
			}
		}
		delete(nv.by, signer)
	}
	var vs *voteSet
	if _, ok := nv.by[signer]; ok || len(nv.by) < maxVoters {
		nv.by[signer] = h
		vs = nv.sets[h]
		if vs == nil {
			vs = &voteSet{chain: v.Chain, sigs: map[uint16][64]byte{}}
			nv.sets[h] = vs
		}
	}
	if vs != nil {
		vs.sigs[v.Sigs[0].Index] = v.Sigs[0].Sig
		if len(vs.sigs) >= proto.TimeoutQuorum(len(vs.chain)) {
			c = &wire.Cert{Kind: wire.CertTimeout, Number: v.Number, Chain: vs.chain}
			for i, sg := range vs.sigs {
				c.Sigs = append(c.Sigs, wire.CertSig{Index: i, Sig: sg})
			}
			sort.Slice(c.Sigs, func(i, j int) bool { return c.Sigs[i].Index < c.Sigs[j].Index })
		}
	}
	s.cert.mu.Unlock()
	if c == nil {
		return
	}
	if err := s.checkCert(c); err != nil {
		s.log.Debug("timeout votes do not certify yet", "number", c.Number, "err", err)
		return
	}
	s.mu.Lock()
	s.madeCertLocked(c)
	s.mu.Unlock()
}

// certKind names a certificate's kind for the log.
func certKind(k uint8) string {
	switch k {
	case wire.CertFinal:
		return "final"
	case wire.CertAbort:
		return "abort"
	case wire.CertTimeout:
		return "timeout"
	}
	return fmt.Sprint(k)
}
