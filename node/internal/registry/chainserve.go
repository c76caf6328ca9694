package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
	"github.com/riffle-net/riffle/node/transport"
)

// Receipts of registrations (docs/protocol.md §3 v3). A primary sends each
// registration it takes, signed by it, to every chain server; each answers
// with a signed receipt until its registration closes (the leader's close,
// after the deadline and only once enough clients are in). The primary
// keeps the receipts for its client, which fetches them; a server refuses
// a final descriptor that leaves out a registration it receipted when the
// selection took less than that registration's primary's quota
// (CheckSelection).

// FanOut sends this primary's signed registration f to every chain server
// of e (itself included) and keeps the receipts that verify for its
// client. A server that does not answer gives no receipt; that is no
// ground to refuse anything.
func (s *Service) FanOut(ctx context.Context, e *Ep, f *wire.Forwarded) {
	fb := f.Marshal()
	chain := e.V.Chain
	self := s.H.Self()
	var mu sync.Mutex
	var got []wire.Receipt
	var wg sync.WaitGroup
	for j, p := range chain {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rep []byte
			var err error
			if p == self {
				_, rep, err = s.OnForwarded(p, fb)
			} else {
				rep, err = s.H.Call(ctx, p, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeForward, Body: fb, Timeout: transport.ShortTimeout})
			}
			var r wire.Receipt
			if err == nil {
				err = r.Unmarshal(rep)
			}
			if err == nil && int(r.Server) != j {
				err = errors.New("node: receipt of another chain position")
			}
			if err == nil {
				err = proto.CheckReceipt(&r, e.V.ID, &f.Reg, chain)
			}
			if err != nil {
				s.Log.Debug("registration receipt", "position", j, "err", err)
				return
			}
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	e.Reg.KeepReceipts(f.Reg.RegKey, got)
}

// OnReceiptSet answers a client's request for the receipts of the
// registration it sent here (only the peer that registered it asks).
func (s *Service) OnReceiptSet(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.ReceiptSet
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if len(q.Receipts) != 0 {
		return 0, nil, errors.New("node: a receipt request carries receipts")
	}
	var e *Ep
	s.H.Locked(func() { e = s.H.Epoch(q.Epoch) })
	var ok bool
	if e != nil {
		q.Receipts, ok = e.Reg.Receipts(q.RegKey, from)
	}
	if !ok {
		return 0, nil, errors.New("node: no registration of this peer in that epoch")
	}
	return wire.TypeReceiptSet, q.Marshal(), nil
}

// OnForwarded takes a primary's signed registration (§3 v3) at any chain
// server until its registration closes, and answers with this server's
// signed receipt. The sender, its chain position and its signature are
// checked before anything costly; the leader alone also checks the
// registration's proofs at once (every server verifies the chosen ones in
// the leader's list).
func (s *Service) OnForwarded(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var f wire.Forwarded
	if err := f.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	r := &f.Reg
	var e *Ep
	ended := false
	s.H.Locked(func() {
		if e = s.H.Epoch(r.Epoch); e != nil {
			ended, _ = s.H.Ended(e)
		}
	})
	if e == nil || e.V == nil || ended {
		return 0, nil, errors.New("node: forwarded registration for an epoch not open here")
	}
	// Only a primary of the chain forwards, and signs what it forwards
	// (checked before the registration's proofs).
	if err := intake.CheckForwarded(&f, e.V.Chain, from); err != nil {
		return 0, nil, err
	}
	if e.Reg.Closed() {
		return 0, nil, errors.New("node: registration closed")
	}
	self := s.H.Self()
	if e.Leader == self {
		if _, err := proto.CheckRegister(e.V, r); err != nil {
			// Signed by its primary: evidence against it (§8).
			s.H.NameForwarder(e, &f, err)
			return 0, nil, err
		}
	}
	if s.H.NoReceipt() && e.Leader != self {
		return 0, nil, errors.New("node: forwards lost (test)")
	}
	rc, err := Receipt(s.H.Priv(), e.V.ID, e.Pos, &f)
	if err != nil {
		return 0, nil, err
	}
	if err := e.Reg.TakeForwarded(&f, int(e.V.Desc.Params.MaxClients)); err != nil {
		return 0, nil, err
	}
	return wire.TypeReceipt, rc.Marshal(), nil
}

// OnClose takes the leader's close of registration (after the deadline
// only) and answers with this primary's list: its registrations in its
// admission order, the order signed, r_j revealed.
func (s *Service) OnClose(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var out []byte
	var err error
	s.H.Locked(func() {
		e := s.H.Epoch(ref.Epoch)
		if e == nil || e.Leader != from {
			err = errors.New("node: close of an unknown epoch or not from its leader")
			return
		}
		// (v3) a close before the deadline would let a leader shut an
		// epoch on its first registration (n−1).
		if err = e.Reg.Close(time.Now()); err != nil {
			return
		}
		s.H.Closed(e)
		// The list goes in this primary's own admission order (§3, §8):
		// the leader fills its quota from the front. Fixed at the
		// deadline when registrations waited for it (awaitOrder).
		s.FixOrder(e)
		// (v3) r_j is revealed now, after the deadline
		// (internal/proto/reveal.go), and the order goes signed as a
		// whole (internal/selection).
		var rl wire.RegList
		if rl, err = e.Reg.List(s.H.Priv(), ref.Epoch, e.Pos); err == nil {
			out = rl.Marshal()
		}
	})
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeRegList, out, nil
}

// OnRegList takes the leader's registration list: every primary's order
// and registrations, checked cheaply, then every registration's proofs
// (§4.1) before this server keeps it.
func (s *Service) OnRegList(from peer.ID, body []byte) (wire.Type, []byte, error) {
	// The epoch id leads the body: check the sender and the epoch's state
	// before decoding up to the epoch's caps and verifying registrations.
	if len(body) < 32 {
		return 0, nil, errors.New("node: short registration list")
	}
	var id [32]byte
	copy(id[:], body[:32])
	var e *Ep
	s.H.Locked(func() { e = s.H.Epoch(id) })
	if e == nil || e.Leader != from {
		return 0, nil, errors.New("node: registration list for an unknown epoch or not from its leader")
	}
	var err error
	s.H.Locked(func() {
		ended, _ := s.H.Ended(e)
		err = e.Reg.ListRefusal(ended)
	})
	if err != nil {
		return 0, nil, err
	}
	var rl wire.RegList
	if err := rl.Unmarshal(body, proto.LimitsFor(e.V.Desc.Params, len(e.V.Chain))); err != nil {
		return 0, nil, err
	}
	// (v3) every primary's order, signed by it as a whole, every
	// registration of the list in its primary's order and signed by it
	// (§8): checked before the costly proofs (internal/selection).
	regs, prims, err := selection.CheckList(&rl, id, e.V.Chain, func(f *wire.Forwarded) error { return CheckForwardSigned(e.V, f) })
	if err != nil {
		return 0, nil, err
	}
	// Every server verifies every registration (§4.1) before it signs.
	parsed, bad, err := proto.VerifyRegs(e.V, regs, s.H.Rand())
	if err != nil {
		return 0, nil, err
	}
	if len(bad) > 0 {
		// A registration signed by its primary whose proofs fail is
		// evidence against that primary (§8): named here and sent on.
		f := rl.Regs[bad[0]]
		_, why := proto.CheckRegister(e.V, &f.Reg)
		s.H.NameForwarder(e, &f, why)
		return 0, nil, fmt.Errorf("node: %d of %d registrations do not verify, first at slot %d, signed by primary %d", len(bad), len(rl.Regs), bad[0], f.Primary)
	}
	if err := selection.Distinct(regs); err != nil {
		return 0, nil, err
	}
	if err := mix.CheckDistinct(parsed); err != nil {
		return 0, nil, fmt.Errorf("node: registrations: %w", err)
	}
	// Checked again: another list may have been taken meanwhile.
	s.H.Locked(func() {
		ended, _ := s.H.Ended(e)
		err = e.Reg.TakeList(ended, regs, prims, parsed, rl.Orders, rl.Rest)
	})
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, []byte{}, nil
}

// CheckForwardSigned checks that f is a registration of the epoch of v,
// names a primary of its chain and carries its signature (cheap, before
// any proof). A registration of another epoch is no evidence: a leader
// could replay one an honest primary signed then, which fails here only
// for its epoch id.
func CheckForwardSigned(v *proto.View, f *wire.Forwarded) error {
	if f.Reg.Epoch != v.ID {
		return errors.New("node: forwarded registration of another epoch")
	}
	if int(f.Primary) >= len(v.Chain) {
		return fmt.Errorf("node: forwarded registration names primary %d of %d servers", f.Primary, len(v.Chain))
	}
	if err := proto.VerifyPeerSig(v.Chain[f.Primary], proto.ForwardDigest(f), f.Sig); err != nil {
		return fmt.Errorf("node: registration not signed by its primary: %w", err)
	}
	return nil
}
