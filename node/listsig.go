package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The request list's signatures to every chain server (docs/protocol.md
// §5.3, "A list due"). S_0 signs its proposal, so that any chain server
// can hand it on as S_0's; each signer sends its signature to S_0 and to
// every other chain server (ListSig); a server that holds the proposal
// and every position's signature of it assembles the final list itself,
// whoever S_0 delivers it to. A server S_0 left without the proposal
// gets it from a signer when it asks the chain for the list (listdue.go
// askList), signs it and sends its signature on. An S_0 that has its
// list signed and delivers it nowhere holds nothing up.

// signProposal puts S_0's own signature in rl, its proposal.
func (s *Server) signProposal(rl *wire.RoundList) error {
	sig, err := proto.Sign(s.priv, proto.ListDigest(rl))
	if err != nil {
		return err
	}
	rl.Sigs = [][64]byte{sig}
	return nil
}

// checkProposal checks that rl is a proposal of e signed by its S_0.
func checkProposal(e *sepoch, rl *wire.RoundList) error {
	if rl.Epoch != e.final.ID || len(rl.Sigs) != 1 {
		return errors.New("node: proposal without S_0's signature alone")
	}
	return proto.VerifyPeerSig(e.final.Chain[0], proto.ListDigest(rl), rl.Sigs[0])
}

// spreadListSig keeps rl, the proposal this server signed, with rep, its
// signature (a Sig), and, unless this server is S_0 (its own is in rl),
// sends the signature to every other chain server.
func (s *Server) spreadListSig(e *sepoch, rl *wire.RoundList, rep []byte) {
	var sg wire.Sig
	if sg.Unmarshal(rep) != nil {
		return
	}
	dg := proto.ListDigest(rl)
	ls := wire.ListSig{Epoch: rl.Epoch, Round: rl.Round, Digest: dg, Index: sg.Index, Sig: sg.Sig}
	p := *rl
	p.Sigs = rl.Sigs[:1:1]
	b := p.Marshal()
	s.mu.Lock()
	x := e.round(rl.Round)
	if x.list == nil {
		x.proposal, x.propBytes, x.propDigest = &p, b, dg
		noteListSigLocked(x, ls)
	}
	s.mu.Unlock()
	s.assembleList(e, rl.Round)
	if e.pos <= 0 {
		return
	}
	s.toChain(e, func(p peer.ID) bool { return s.hookRun().ListSigTo(p) }, transport.Request{Proto: ProtoRound, Type: wire.TypeListSig, Body: ls.Marshal(), Timeout: transport.ShortTimeout})
}

// toChain sends r to every other server of e's chain that to lets
// through, in the background, each within r's timeout.
func (s *Server) toChain(e *sepoch, to func(peer.ID) bool, r transport.Request) {
	var ps []peer.ID
	for _, p := range e.final.Chain {
		if p != s.h.ID() && to(p) {
			ps = append(ps, p)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, r.Timeout)
		defer cancel()
		_, _ = s.each(ctx, ps, r)
	}()
}

// noteListSigLocked keeps ls, one per position: a later one replaces
// it, unless it signs the proposal held here and ls another. Call with
// s.mu held.
func noteListSigLocked(x *sround, ls wire.ListSig) {
	if old, ok := x.listSigs[ls.Index]; ok && x.proposal != nil && old.Digest == x.propDigest && ls.Digest != old.Digest {
		return
	}
	if x.listSigs == nil {
		x.listSigs = map[uint16]wire.ListSig{}
	}
	x.listSigs[ls.Index] = ls
}

// onListSig keeps a chain server's signature of a proposal, checked
// against its sender's key, for a round of the epoch not final here, and
// assembles the final list once every position signed the proposal held
// here.
func (s *Server) onListSig(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ls wire.ListSig
	if err := ls.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(ls.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	if ls.Index == 0 || int(ls.Index) >= len(v.Chain) || v.Chain[ls.Index] != from || ls.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: list signature from another position or of no round")
	}
	if err := proto.VerifyPeerSig(from, ls.Digest, ls.Sig); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	x := e.rounds[ls.Round]
	if x == nil && e.admit(ls.Round) == nil {
		x = e.round(ls.Round)
	}
	if x != nil && x.list == nil && !x.pruned {
		noteListSigLocked(x, ls)
	}
	s.mu.Unlock()
	s.assembleList(e, ls.Round)
	return wire.TypeAck, ack, nil
}

// assembleList takes round q's final list, assembled here, once the
// proposal this server signed and every position's signature of it are
// here, and delivers it to the chain.
func (s *Server) assembleList(e *sepoch, q uint32) {
	if s.hookRun().NoAssemble() {
		return // a corrupt signer that keeps to the proposal (riffletest)
	}
	s.mu.Lock()
	x := e.rounds[q]
	if x == nil || x.list != nil || x.proposal == nil {
		s.mu.Unlock()
		return
	}
	rl := *x.proposal
	rl.Sigs = make([][64]byte, len(e.final.Chain))
	rl.Sigs[0] = x.proposal.Sigs[0]
	for i := 1; i < len(rl.Sigs); i++ {
		ls, ok := x.listSigs[uint16(i)]
		if !ok || ls.Digest != x.propDigest {
			s.mu.Unlock()
			return
		}
		rl.Sigs[i] = ls.Sig
	}
	s.mu.Unlock()
	b := rl.Marshal()
	if _, _, err := s.onRoundList(s.h.ID(), b); err != nil {
		s.log.Warn("assembled request list refused", "round", q, "err", err)
		return
	}
	if e.pos == 0 {
		return // S_0 delivers its own (publish.go)
	}
	// A signer may have sent its signature here only: the list goes to
	// every chain server, S_0 included, so that one server's list is
	// everyone's and a withheld signature only delays (first copy wins).
	s.toChain(e, func(peer.ID) bool { return true }, transport.Request{Proto: ProtoRound, Type: wire.TypeRoundList, Body: b, Timeout: transport.BulkTimeout})
}

// heldProposal answers a chain server's ListReq for a round of an epoch
// running here with no final list here by S_0's proposal signed here,
// nil if none.
func (s *Server) heldProposal(from peer.ID, body []byte) []byte {
	var ref wire.EpochRef
	if ref.Unmarshal(body) != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[ref.Epoch]
	if e == nil || e.final == nil || !proto.InChain(e.final.Chain, from) {
		return nil
	}
	if x := e.rounds[ref.Round]; x != nil && x.list == nil && x.proposal != nil {
		return x.propBytes
	}
	return nil
}

// takeHandedProposal signs rl, S_0's proposal of round q handed on by
// from in answer to this server's ListReq, unless it signed that one
// already.
func (s *Server) takeHandedProposal(e *sepoch, rl *wire.RoundList, from peer.ID) {
	dg := proto.ListDigest(rl)
	s.mu.Lock()
	x := e.rounds[rl.Round]
	done := x == nil || x.list != nil || (x.proposal != nil && x.propDigest == dg)
	s.mu.Unlock()
	if done {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	if _, _, err := s.takeProposal(ctx, e, rl, from, false); err != nil {
		s.log.Warn("handed-on request list proposal refused", "round", rl.Round, "err", err)
	}
}
