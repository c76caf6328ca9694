package roundblame

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
)

// Public evidence a server sends the chain once it named a culprit
// without a walk (§5.1, §5.2): each server checks it here and names the
// culprit itself.

// CheckEquivocation checks two signed roots of one batch of the epoch of
// v that differ, and returns the chain position of their signer.
func CheckEquivocation(v *proto.View, ev *wire.Equivocation) (int, error) {
	a, b := ev.A, ev.B
	if b.Epoch != a.Epoch || b.Round != a.Round || b.S != a.S || a.Root == b.Root || a.S < 1 || int(a.S) > len(v.Chain) {
		return 0, errors.New("node: not two roots of one batch")
	}
	signer := v.Chain[a.S-1]
	for _, r := range []wire.Root{a, b} {
		bt := wire.Batch{Epoch: r.Epoch, Round: r.Round, S: r.S, Root: r.Root}
		if err := proto.VerifyPeerSig(signer, roundstep.BatchDigest(&bt), r.Sig); err != nil {
			return 0, err
		}
	}
	return int(a.S) - 1, nil
}

// CheckDoubleSubmit checks two signed submissions of one slot of the
// epoch of v that differ: both signed by the slot's client.
func CheckDoubleSubmit(v *proto.View, d *wire.DoubleSubmit) error {
	if int(d.Slot) >= len(v.Desc.Clients) || d.Round >= v.Desc.Params.Rounds || d.HashA == d.HashB {
		return errors.New("node: not two submissions of one slot")
	}
	key := ed25519.PublicKey(v.Desc.Clients[d.Slot].RegKey[:])
	for _, x := range []struct {
		h   [32]byte
		sig [64]byte
	}{{d.HashA, d.SigA}, {d.HashB, d.SigB}} {
		if err := mix.VerifySubmissionDigest(key, mix.EpochID(d.Epoch), uint64(d.Round), d.Slot, x.h, x.sig[:]); err != nil {
			return err
		}
	}
	return nil
}

// CheckBadBatch checks a signed batch of the epoch of v forwarded as
// evidence, whose head h is of a chain server's output: its signer's
// signature, its entries against the signed root (entries that do not
// match it are no evidence: anyone could attach them), and its shape
// under lim. It returns the batch's round if the shape is wrong (a
// missing entry or one of the wrong size), which names the signer.
func CheckBadBatch(v *proto.View, h wire.BatchHead, body []byte, lim wire.Limits) (uint32, error) {
	S := int(h.S)
	if err := proto.VerifyPeerSig(v.Chain[S-1], roundstep.BatchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return 0, err
	}
	var b wire.Batch
	if err := b.Unmarshal(body, lim); err != nil {
		return 0, err
	}
	if proto.MerkleRoot(b.Entries) != b.Root {
		return 0, errors.New("node: the entries do not match the signed root")
	}
	want := EntrySize(v, S)
	bad := len(b.Entries) != len(v.Desc.Clients)
	for _, x := range b.Entries {
		bad = bad || len(x) != want
	}
	if !bad {
		return 0, errors.New("node: the batch is well formed")
	}
	return b.Round, nil
}

// Equivocation names a server that signed two different roots for one
// batch (§5.2): the two signed roots are public evidence, sent to every
// chain server so that each checks and names it too. Called once per epoch
// (the first conflict, Blames.NameEquivocation), without the server's
// lock.
func (s *Service) Equivocation(ep *Ep, a, b wire.Root) {
	ev := wire.Equivocation{A: a, B: b}
	body := ev.Marshal()
	t := int(a.S) - 1
	s.h.Name(ep, a.Round, ServerCulprit(t, "server %d signed two roots for its output of round %d (equivocation)", t, a.Round), [][]byte{body})
	if err := s.h.SendEvidence(ep, wire.TypeEquivocation, body, transport.ShortTimeout, t); err != nil {
		s.Log.Warn("equivocation evidence not delivered everywhere", "err", err)
	}
}

// OnEquivocation checks two signed roots of one batch that differ and
// names their signer.
func (s *Service) OnEquivocation(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.Equivocation
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	ep, err := s.h.Epoch(ev.A.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := ep.V
	if !slices.Contains(v.Chain, from) {
		return 0, nil, errors.New("node: equivocation evidence not from a chain server")
	}
	if s.hooked() && s.Hooks.RefuseEvidence(wire.TypeEquivocation) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	t, err := CheckEquivocation(v, &ev)
	if err != nil {
		return 0, nil, err
	}
	a := ev.A
	var first bool
	s.h.Locked(func() {
		first = ep.Blames.NameEquivocation()
		s.h.End(ep, fmt.Sprintf("round %d: server %d signed two batch roots", a.Round, a.S-1))
	})
	if first {
		s.h.Name(ep, a.Round, ServerCulprit(t, "server %d signed two roots for its output of round %d (equivocation)", t, a.Round), [][]byte{body})
	}
	return wire.TypeAck, ack, nil
}

// doubleSubmit names the client of a slot that signed two different onions
// for one round (§5.1): the two signed hashes are public evidence, sent to
// every chain server so that each checks and names it too. Without the
// server's lock.
func (s *Service) doubleSubmit(ep *Ep, d wire.DoubleSubmit) {
	body := d.Marshal()
	s.nameDouble(ep, d, body)
	s.h.Go(func() { s.DropDouble(ep, d) })
	if err := s.h.SendEvidence(ep, wire.TypeDoubleSubmit, body, transport.ShortTimeout, -1); err != nil {
		s.Log.Warn("double-submission evidence not delivered everywhere", "err", err)
	}
}

// NoteDouble starts doubleSubmit once per slot for two different
// submissions of one slot. Call under the server's lock.
func (s *Service) NoteDouble(ep *Ep, a, b *wire.Submit) {
	if !ep.Blames.nameDouble(a.Slot) {
		return
	}
	d := wire.DoubleSubmit{Epoch: a.Epoch, Round: a.Round, Slot: a.Slot, HashA: mix.SubmissionDigest(a.Onion), SigA: a.Sig, HashB: mix.SubmissionDigest(b.Onion), SigB: b.Sig}
	s.h.Go(func() { s.doubleSubmit(ep, d) })
}

func (s *Service) nameDouble(ep *Ep, d wire.DoubleSubmit, body []byte) {
	s.h.Name(ep, d.Round, &Culprit{Server: -1, Slot: int(d.Slot), Why: fmt.Sprintf("it signed two different onions for round %d", d.Round)}, [][]byte{body})
}

// OnDoubleSubmit checks two signed submissions of one slot that differ
// and names its client.
func (s *Service) OnDoubleSubmit(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var d wire.DoubleSubmit
	if err := d.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	ep, err := s.h.Epoch(d.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := ep.V
	if !slices.Contains(v.Chain, from) {
		return 0, nil, errors.New("node: double-submission evidence not from a chain server")
	}
	if s.hooked() && s.Hooks.RefuseEvidence(wire.TypeDoubleSubmit) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	if err := CheckDoubleSubmit(v, &d); err != nil {
		return 0, nil, err
	}
	var first bool
	s.h.Locked(func() { first = ep.Blames.nameDouble(d.Slot) })
	if first {
		s.nameDouble(ep, d, body)
		s.h.Go(func() { s.DropDouble(ep, d) })
	}
	return wire.TypeAck, ack, nil
}

// NoteBadBatch names, once per epoch, server t whose signed batch of
// round r has entries that match its signed root but a wrong shape (a
// missing entry or one of the wrong size, §5.2): the batch itself is the
// public evidence, sent to every chain server so that each checks and
// names it. Call under the server's lock.
func (s *Service) NoteBadBatch(ep *Ep, t int, r uint32, body []byte) {
	if ep.Blames.badNamed {
		return
	}
	ep.Blames.badNamed = true
	body = append([]byte(nil), body...)
	s.h.Go(func() {
		s.h.Name(ep, r, ServerCulprit(t, "server %d signed a batch of round %d with a missing or wrong-size entry", t, r), [][]byte{body})
		if err := s.h.SendEvidence(ep, wire.TypeBadBatch, body, transport.BulkTimeout, t); err != nil {
			s.Log.Warn("malformed-batch evidence not delivered everywhere", "err", err)
		}
	})
}

// OnBadBatch checks a forwarded signed batch: its sender's signature, its
// entries against the signed root (entries that do not match it are no
// evidence: anyone could attach them), and its shape; a wrong shape names
// the sender.
func (s *Service) OnBadBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	h, err := wire.PeekBatch(body)
	if err != nil {
		return 0, nil, err
	}
	ep, err := s.h.Epoch(h.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := ep.V
	m := len(v.Chain)
	inChain := false
	for _, p := range v.Chain {
		inChain = inChain || p == from
	}
	S := int(h.S)
	if !inChain || S < 1 || S > m || h.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: malformed-batch evidence not from a chain server")
	}
	if s.hooked() && s.Hooks.RefuseEvidence(wire.TypeBadBatch) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	lim := proto.LimitsFor(v.Desc.Params, m)
	lim.Frame = wire.RequestCap(wire.ProtoRound, wire.TypeBadBatch, transport.Ceilings)
	r, err := CheckBadBatch(v, h, body, lim)
	if err != nil {
		return 0, nil, err
	}
	s.h.Locked(func() {
		s.h.End(ep, fmt.Sprintf("round %d void: batch from server %d malformed", r, S-1))
		s.NoteBadBatch(ep, S-1, r, body)
	})
	return wire.TypeAck, ack, nil
}
