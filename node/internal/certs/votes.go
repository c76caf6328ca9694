package certs

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
// no open descriptor of N within T_lead signs so, N's leader included;
// as many as more than half of a group chain's servers other than N's
// leader certify N by timeout
// (keep.go keeps certificates and their precedence).

// numVotes is the timeout votes of one number: by chain, and each
// signer's chain.
type numVotes struct {
	sets map[[32]byte]*voteSet
	by   map[string][32]byte
}

// voteSet is the timeout votes of one number over one chain.
type voteSet struct {
	chain [][]byte
	sigs  map[uint16][64]byte
}

// OnTimeoutVote takes a signed timeout vote of a server of the group
// certified for its number (Group), sent by its signer, for this
// server's next number: anything else is dropped before it is stored
// (outsiders' votes crowded out the group's, issue 25), and a vote ahead
// makes this server catch up instead.
func (cs *Certs) OnTimeoutVote(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var v wire.Cert
	if err := v.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if v.Kind != wire.CertTimeout || len(v.Sigs) != 1 || len(v.Chain) < 2 {
		return 0, nil, errors.New("node: a timeout vote is one server's timeout signature")
	}
	if peer.ID(v.Chain[v.Sigs[0].Index]) != from || !cs.srv.Known(from) {
		return 0, nil, errors.New("node: timeout vote not from its signer, a roster server")
	}
	top := cs.Top()
	switch {
	case v.Number <= top:
		// A vote of a number final here, by a server that signed its
		// final descriptor, is that server's equivocation.
		if c, ok := cs.Of(v.Number); ok && c.Kind == wire.CertFinal && InChain(c, from) &&
			proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig) == nil {
			cs.srv.Go(func() { cs.srv.Equivocations(c, &v) })
		}
		return wire.TypeAck, ack, nil
	case v.Number > top+1:
		// Its signature first: a forged vote ahead cost a sync each.
		if proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig) == nil {
			cs.srv.SyncPoked()
			cs.PokeSync()
		}
		return wire.TypeAck, ack, nil
	}
	if g, ok := cs.Group(v.Number); ok {
		if !g[from] {
			return 0, nil, fmt.Errorf("node: timeout vote of %d by %s, outside the group certified for it", v.Number, from.ShortString())
		}
	} else if cs.srv.Founders() != nil || !cs.Known()[from] {
		return 0, nil, fmt.Errorf("node: timeout vote of %d by %s, not known here", v.Number, from.ShortString())
	}
	if err := proto.VerifyPeerSig(from, proto.TimeoutDigest(v.Number, v.Chain), v.Sigs[0].Sig); err != nil {
		return 0, nil, err
	}
	cs.NoteVote(&v)
	return wire.TypeAck, ack, nil
}

// NoteVote adds a verified vote and, once its chain has a quorum that
// verifies here, keeps the timeout certificate (KeepMade) and moves this
// server's number to it.
func (cs *Certs) NoteVote(v *wire.Cert) {
	c := cs.addVote(v)
	if c == nil {
		return
	}
	if err := cs.Check(c); err != nil {
		cs.log.Debug("timeout votes do not certify yet", "number", c.Number, "err", err)
		return
	}
	if cs.KeepMade(c) {
		cs.srv.RaiseNumber(c.Number)
	}
}

// addVote adds v to the votes of its number, one a signer (a new one
// replaces its last; at most maxVoters signers), and returns the timeout
// certificate of its chain once it has a quorum (unchecked).
func (cs *Certs) addVote(v *wire.Cert) *wire.Cert {
	h := sha256.Sum256(ChainKey(v.Chain))
	signer := string(v.Chain[v.Sigs[0].Index])
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.votes == nil {
		cs.votes = map[uint64]*numVotes{}
	}
	nv := cs.votes[v.Number]
	if nv == nil {
		nv = &numVotes{sets: map[[32]byte]*voteSet{}, by: map[string][32]byte{}}
		cs.votes[v.Number] = nv
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
	if _, ok := nv.by[signer]; !ok && len(nv.by) >= maxVoters {
		return nil
	}
	nv.by[signer] = h
	vs := nv.sets[h]
	if vs == nil {
		vs = &voteSet{chain: v.Chain, sigs: map[uint16][64]byte{}}
		nv.sets[h] = vs
	}
	vs.sigs[v.Sigs[0].Index] = v.Sigs[0].Sig
	if len(vs.sigs) < proto.TimeoutQuorum(len(vs.chain)) {
		return nil
	}
	c := &wire.Cert{Kind: wire.CertTimeout, Number: v.Number, Chain: vs.chain}
	for i, sg := range vs.sigs {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: i, Sig: sg})
	}
	sort.Slice(c.Sigs, func(i, j int) bool { return c.Sigs[i].Index < c.Sigs[j].Index })
	return c
}
