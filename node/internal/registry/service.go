package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Service is the registration's handlers at one server (§3 v3, §8): at a
// primary, a client's registration, held until the admission order and
// forwarded for the chain's receipts, and the client's waits for the
// open descriptor, its final descriptor, its round lists and its
// receipts (service.go); at a chain server, a primary's forwarded
// registration, the leader's close and its list (chainserve.go). The
// state is each epoch's Epoch and the host's (Host); no lock is held
// across a call to a peer.
type Service struct {
	H    Host
	Keys *ltkeys.Keys // long-term keys: exclusions, returning clients
	Log  *slog.Logger
}

// Ep is an epoch as the handlers see it, read under the host's lock:
// the open descriptor's view, the final one's (nil while registration
// runs), this server's chain position, the leader that prepared it, its
// registration, and the host's own handle of it.
type Ep struct {
	V      *proto.View
	Final  *proto.View
	Pos    int
	Leader peer.ID
	Reg    *Epoch
	Ref    any
}

// Host is what the handlers ask of the server they run in. The methods
// marked "locked" are called under the server's lock (in Locked or in
// WaitFor's conditions); the others take what they need themselves.
type Host interface {
	Self() peer.ID
	Priv() crypto.PrivKey
	Rand() io.Reader
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// WaitFor blocks until cond, evaluated under the server's lock,
	// holds or ctx ends.
	WaitFor(ctx context.Context, cond func() bool) error
	// Locked runs f under the server's lock.
	Locked(f func())
	// Open is the epoch open for registration here, or nil (locked).
	Open() *Ep
	// Epoch is the epoch id here, or nil (locked).
	Epoch(id [32]byte) *Ep
	// Ended says whether ep ended here, and why (locked).
	Ended(ep *Ep) (bool, string)
	// Aborted reports whether ep's setup aborted on a repeated share.
	Aborted(ep *Ep) bool
	// List is round r's final list of ep as signed, or nil (locked).
	List(ep *Ep, r uint32) []byte
	// Closed: ep's registration closed here, it is no longer the open
	// epoch (locked).
	Closed(ep *Ep)
	// Refusal says why this primary refuses client peer p in epoch
	// number (its strikes, left out after a duplicate) (locked).
	Refusal(p peer.ID, number uint64) error
	// KeepOut is a test's refusal of p's registration in epoch.
	KeepOut(p peer.ID, epoch [32]byte) bool
	// NoReceipt is a test's chain server that gives no receipt.
	NoReceipt() bool
	// Range is the address range p connects from.
	Range(p peer.ID) string
	// NameForwarder names ep's primary that signed f, which does not
	// verify (why), and sends the evidence on; it returns at once.
	NameForwarder(ep *Ep, f *wire.Forwarded, why error)
}

// OnWaitOpen answers a client waiting for an epoch to register in other
// than ref's: the signed open descriptor of the epoch open here.
func (s *Service) OnWaitOpen(ctx context.Context, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var out []byte
	err := s.H.WaitFor(ctx, func() bool {
		o := s.H.Open()
		if o == nil || o.V.ID == ref.Epoch {
			return false
		}
		out = o.Reg.Offer()
		return out != nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("node: no epoch opened: %w", err)
	}
	return wire.TypeSigned, out, nil
}

// OnWaitList answers a client registered here in an epoch with a round's
// final list once it is here.
func (s *Service) OnWaitList(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var e *Ep
	s.H.Locked(func() { e = s.H.Epoch(ref.Epoch) })
	if e == nil || e.Final == nil {
		return 0, nil, errors.New("node: unknown epoch")
	}
	// Only a client that registered in the epoch here waits for its
	// lists (anyone could otherwise hold a stream to the epoch's end).
	if !e.Reg.RegisteredBy(from) {
		return 0, nil, errors.New("node: request lists go to the clients registered here")
	}
	out, err := s.waitBytes(ctx, e, func() []byte { return s.H.List(e, ref.Round) }, "epoch ended")
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeRoundList, out, nil
}

// OnClientRegister takes a client's registration at this primary (§3
// v3): the long-term key and the intake's bounds before the costly
// proofs, signed as forwarded, held until the admission order, then
// forwarded to every chain server for receipts; the answer is the final
// descriptor.
func (s *Service) OnClientRegister(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var cr wire.ClientRegister
	if err := cr.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	r := cr.Reg
	var e *Ep
	s.H.Locked(func() { e = s.H.Open() })
	if e == nil || e.V.ID != r.Epoch {
		return 0, nil, errors.New("node: epoch not open for registration here")
	}
	if s.H.KeepOut(from, r.Epoch) {
		return 0, nil, errors.New("node: registration refused")
	}
	// The long-term key (§8 "After a blame"): its signature and its
	// exclusion are checked before the registration's costly proofs.
	if err := proto.VerifyLongTerm(cr.LTKey, r.Epoch, r.RegKey, cr.LTSig); err != nil {
		return 0, nil, err
	}
	if until, ok := s.Keys.Excluded(cr.LTKey, e.V.Desc.Number); ok {
		return 0, nil, fmt.Errorf("node: this client's long-term key is excluded up to epoch %d: a blame named it", until)
	}
	// (issue 25 point 8) the intake's bounds before the proofs: the
	// registrations held, and a first-time key's address range.
	rng := s.H.Range(from)
	returning := false
	if seen, ok := s.Keys.Seen(cr.LTKey); ok {
		returning = seen.Dry == 0
	}
	n := int(e.V.Desc.Params.MaxClients)
	if err := e.Reg.Room(n, rng, returning); err != nil {
		return 0, nil, err
	}
	if _, err := proto.CheckRegister(e.V, &r); err != nil {
		return 0, nil, err
	}
	// Signed as forwarded (§8): a registration whose proofs fail would be
	// evidence against this primary.
	fwd := wire.Forwarded{Primary: uint16(e.Pos), Reg: r}
	sig, err := proto.Sign(s.H.Priv(), proto.ForwardDigest(&fwd))
	if err != nil {
		return 0, nil, err
	}
	fwd.Sig = sig
	s.H.Locked(func() {
		if err = e.Reg.Room(n, rng, returning); err != nil {
			return
		}
		if err = s.H.Refusal(from, e.V.Desc.Number); err != nil {
			return
		}
		err = e.Reg.Take(n, r, from, fwd.Sig, intake.LT{Key: cr.LTKey, Sig: cr.LTSig}, rng, returning)
	})
	if err != nil {
		return 0, nil, err
	}
	// (issue 25 point 8) the primary orders its registrations before it
	// forwards them: until its registration deadline it only holds them;
	// then the first n_max of its admission order go on and the rest are
	// refused, so that fresh keys at the window's open cannot push
	// returning clients out.
	if err := s.awaitOrder(ctx, e, r.RegKey); err != nil {
		return 0, nil, err
	}
	// (v3) Forward to every chain server (§3), without the long-term
	// key, and keep their receipts for the client (FanOut); the leader
	// also collects every primary's list at the close, so a lost forward
	// costs nothing.
	s.FanOut(ctx, e, &fwd)
	out, err := s.waitBytes(ctx, e, e.Reg.FinalBytes, "epoch did not start")
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSigned, out, nil
}

// waitBytes waits until get (called under the host's lock) returns
// bytes, or e ends, which is an error saying what did not happen and why.
func (s *Service) waitBytes(ctx context.Context, e *Ep, get func() []byte, what string) ([]byte, error) {
	var out []byte
	var ended bool
	var reason string
	if err := s.H.WaitFor(ctx, func() bool {
		out = get()
		ended, reason = s.H.Ended(e)
		return out != nil || ended || s.H.Aborted(e)
	}); err != nil {
		return nil, err
	}
	if out == nil && !ended {
		return nil, fmt.Errorf("node: %s: setup aborted on a repeated share", what)
	}
	if out == nil {
		return nil, fmt.Errorf("node: %s: %s", what, reason)
	}
	return out, nil
}

// awaitOrder holds a registration of e until this primary's registration
// deadline, fixes the admission order, and says whether the registration
// is in it.
func (s *Service) awaitOrder(ctx context.Context, e *Ep, key [32]byte) error {
	if wait := time.Until(e.Reg.Deadline()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	var err error
	s.H.Locked(func() {
		if ended, reason := s.H.Ended(e); ended {
			err = fmt.Errorf("node: epoch did not start: %s", reason)
			return
		}
		s.FixOrder(e)
		if !e.Reg.Ordered(key) {
			err = errors.New("node: epoch full: this registration is past the admission order's n_max")
		}
	})
	return err
}

// FixOrder fixes e's admission order once, at this primary's
// registration deadline or its close, over the long-term key records.
func (s *Service) FixOrder(e *Ep) {
	n := e.V.Desc.Params.MaxClients
	if err := e.Reg.FixOrder(int(n), proto.PrimaryQuota(n, len(e.V.Chain)), SeenDry(s.Keys), s.H.Rand()); err != nil {
		// No randomness: registration-key order.
		s.Log.Error("admission order", "err", err)
	}
}

// SeenDry says, of a long-term key with a record in keys, whether its
// slot ran dry since its last clean epoch (the admission order's input).
func SeenDry(keys *ltkeys.Keys) func(key [32]byte) (bool, bool) {
	return func(key [32]byte) (bool, bool) {
		seen, ok := keys.Seen(key)
		return seen.Dry > 0, ok
	}
}
