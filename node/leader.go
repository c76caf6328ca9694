package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// loop runs epochs while this server heads the chain of live servers.
func (rt *rotation) loop(ctx context.Context) {
	s := rt.s
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.Timing.LeaderPoll):
		}
		number, full := rt.takeTurn()
		if number == 0 {
			continue
		}
		chain := s.who.Proposed(s.h.ID(), full)
		if len(chain) < s.cfg.MinServers || !s.cert.HoldsPrevGroup(number, chain) {
			continue
		}
		l := &leading{s: s, ctx: ctx, chain: chain, number: number}
		if err := l.run(); err != nil && ctx.Err() == nil {
			if t := (*turnTaking)(nil); errors.As(err, &t) {
				s.log.Debug("epoch put off", "err", err)
			} else {
				s.log.Warn("epoch failed", "err", err)
			}
			if errors.Is(err, errRetryWithout) {
				// The same number at once without the server that
				// refused (§3): well within T_lead.
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.cfg.Timing.LeaderRetry):
			}
		}
	}
}

// turnTaking is a Prepare refused for no fault: a server still in its
// own epoch (errBusy: the leader's ended a moment before), or one that
// withdrew (logged by noteWithdrawal). The leader tries again later.
type turnTaking struct{ error }

func (t *turnTaking) Unwrap() error { return t.error }

// errRetryWithout marks a Prepare that a server of the chain refused:
// the leader tries the number again at once without it.
var errRetryWithout = errors.New("node: a server refused the prepare")

// leading is one epoch this server leads (§3, §4): the chain it proposed
// and the number, from the Prepare to the final descriptor; the epoch's
// id once its open descriptor is signed. Its steps are its methods; the
// epoch's state is the server's (sepoch, under Server.mu).
type leading struct {
	s      *Server
	ctx    context.Context
	chain  []peer.ID
	number uint64
	id     [32]byte
}

// abort ends the epoch on every server of the chain with the leader's
// signed coordination abort. If the epoch is known here and another
// server's abort of it comes within AbortSettle, the leader's failure was
// that abort's consequence (a server that already ended the epoch refuses
// the leader's requests) and it sends nothing: a coordination abort after
// the final descriptor is charged to the leader, and it must not be
// charged for another's refusal.
func (l *leading) abort(reason string) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	s.mu.Lock()
	e := s.epochs[id]
	s.mu.Unlock()
	if e != nil && e.v != nil {
		if s.ref.AbortedByOther(e.v.ID, s.h.ID()) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.cfg.Timing.AbortSettle):
		}
		if s.ref.AbortedByOther(e.v.ID, s.h.ID()) {
			return
		}
	}
	body := s.abortBody(id, reason)
	_, _ = s.each(context.WithoutCancel(ctx), chain, transport.Request{Proto: ProtoEpoch, Type: wire.TypeAbort, Body: body, Timeout: transport.ShortTimeout})
}

// run drives the epoch as leader (§3, §4): prepare, sign and open the
// descriptor, wait for registrations, close, sign the final descriptor; the
// setup and the rounds then run from events until the epoch ends.
func (l *leading) run() error {
	s, ctx, chain := l.s, l.ctx, l.chain
	desc, err := l.open()
	if err != nil {
		return err
	}
	id := l.id
	s.mu.Lock()
	s.turn.led++
	s.mu.Unlock()
	s.log.Info("epoch open", "number", desc.Number, "epoch", fmt.Sprintf("%x", id[:6]), "servers", len(chain))
	e, err := l.awaitRegistrations(desc.Params)
	if err != nil {
		return err
	}
	cl, err := l.closeRegistration(e, desc)
	if err != nil {
		return err
	}
	desc.Reveals = cl.reveals
	keys := selection.Candidates(id, proto.SelectionBeta(cl.reveals), cl.all, cl.primaryOf, cl.rank, desc.Params.MaxClients, len(chain))
	if len(keys) < s.cfg.MinClients {
		l.abort("too few clients")
		return fmt.Errorf("node: %d valid registrations < %d", len(keys), s.cfg.MinClients)
	}
	if err := l.finalize(desc, keys, cl); err != nil {
		return err
	}
	s.log.Info("epoch closed", "epoch", fmt.Sprintf("%x", id[:6]), "clients", len(keys))
	// The epoch now runs from events; the leader waits for its end, and
	// ends it for a stale round as the others do from takeTurn, which
	// does not run here meanwhile (stale.go).
	for {
		wctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.LeaderPoll)
		err := s.waitFor(wctx, func() bool { return e.ended })
		cancel()
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		s.mu.Lock()
		s.endStaleLocked(e)
		s.mu.Unlock()
	}
}

// open prepares the epoch on every server of the chain, collects their
// group entries and signatures and opens the signed descriptor (l.id).
func (l *leading) open() (wire.Descriptor, error) {
	s, ctx, chain, number := l.s, l.ctx, l.chain, l.number
	var nonce [32]byte
	if _, err := s.rand.Read(nonce[:]); err != nil {
		return wire.Descriptor{}, fmt.Errorf("node: epoch nonce: %w", err)
	}
	prev, err := s.cert.Previous(number)
	if err != nil {
		s.cert.PokeSync()
		return wire.Descriptor{}, err
	}
	// §6.3 (v3): past a timeout, the certificates back to the last
	// epoch carry the window's walk; N's window is pinned here; each
	// member checks both and holds the window before it answers
	// (window.go).
	gap, err := window.GapFor(number, &prev, s.cert.Of)
	if err != nil {
		s.cert.PokeSync()
		return wire.Descriptor{}, err
	}
	gap = s.hookRun().LeaderGap(number, gap)
	win := s.hookRun().LeaderWindow(number, s.win.Choose(ctx, chain, number, prev, gap))
	prep := wire.Prepare{Number: number, Nonce: nonce, Params: s.cfg.Params.Wire(), Chain: proto.ChainIDs(chain), Previous: prev, Window: win, Gap: gap}
	// The servers this chain leaves out for their refusal budget are out
	// at every server only if every server has the aborts that count
	// (refusals.go).
	s.handEvidence(ctx, chain, number)
	reps, err := s.each(ctx, chain, transport.Request{Proto: ProtoEpoch, Type: wire.TypePrepare, Body: prep.Marshal(), Timeout: transport.ShortTimeout})
	if err != nil {
		// A server that refused may know numbers this one does not:
		// catch up from the certificates (internal/certs).
		s.cert.PokeSync()
		withdrew := s.noteWithdrawal(err)
		err = fmt.Errorf("node: prepare epoch %d: %w", number, err)
		if withdrew {
			err = errors.Join(errRetryWithout, err)
		}
		if withdrew || errors.Is(err, errBusy) {
			err = &turnTaking{err}
		}
		return wire.Descriptor{}, err
	}
	desc := wire.Descriptor{Number: number, Nonce: nonce, Params: s.cfg.Params.Wire(), Group: make([]wire.GroupEntry, len(chain)), Previous: prev, Window: win, Gap: gap}
	for i, r := range reps {
		if err := desc.Group[i].Unmarshal(r, proto.GenericLimits()); err != nil {
			return wire.Descriptor{}, fmt.Errorf("node: entry of server %d: %w", i, err)
		}
	}
	l.id = proto.EpochID(&desc)
	sigs, err := l.sigs(&wire.Signed{Desc: desc})
	if err != nil {
		// The servers that signed have taken the number and never vote
		// its timeout: without the leader's abort, one signature lost in
		// transit held the group at this number for good (TestSwarm seed 6).
		l.abort("open not signed")
		return wire.Descriptor{}, fmt.Errorf("node: sign open descriptor %d: %w", number, err)
	}
	open := &wire.Signed{Desc: desc, Sigs: sigs}
	now := chain
	if hooksBuilt {
		now = nil
		for _, p := range chain {
			if d := s.hookRun().OpenLate(p); d > 0 {
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					time.Sleep(d)
					_, _ = s.each(s.ctx, []peer.ID{p}, transport.Request{Proto: ProtoEpoch, Type: wire.TypeSigned, Body: open.Marshal(), Timeout: transport.ShortTimeout})
				}()
				continue
			}
			now = append(now, p)
		}
	}
	to := s.hookRun().SignedTo(false, now)
	_, err = s.each(ctx, to, transport.Request{Proto: ProtoEpoch, Type: wire.TypeSigned, Body: open.Marshal(), Timeout: transport.ShortTimeout})
	if err == nil && len(to) < len(now) {
		err = errors.New("node: open descriptor held back")
	}
	if err != nil {
		l.abort("open failed")
		return wire.Descriptor{}, fmt.Errorf("node: open epoch %d: %w", number, err)
	}
	return desc, nil
}

// awaitRegistrations waits at least the registration window, and until
// enough clients registered; it aborts the epoch if a server leaves.
func (l *leading) awaitRegistrations(params wire.Params) (*sepoch, error) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	deadline := time.Now().Add(time.Duration(params.RegWindowMs) * time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		for _, p := range chain {
			if p != s.h.ID() && s.roster.get(p) == nil {
				l.abort("server left")
				return nil, fmt.Errorf("node: server %s left during registration", p.ShortString())
			}
		}
		s.mu.Lock()
		e := s.epochs[id]
		count, ended := 0, false
		if e != nil {
			count, ended = e.reg.ForwardedCount(), e.ended
		}
		s.mu.Unlock()
		if e == nil {
			return nil, errors.New("node: epoch vanished during registration")
		}
		if ended {
			// Another server's abort (a close overdue there, §3).
			return nil, errors.New("node: epoch ended during registration")
		}
		if time.Now().After(deadline) && count >= s.cfg.MinClients && !s.hookRun().HoldOpen() {
			return e, nil
		}
	}
}

// closed is what the leader gathers at the close (closeRegistration).
type closed struct {
	// all: every registration by key, as its primary signed it.
	all map[[32]byte]wire.Forwarded
	// primaryOf: the primary (chain position) of each one a server
	// listed; rank: its place in that primary's signed order.
	primaryOf map[[32]byte]uint16
	rank      map[[32]byte]int
	// orders: every primary's signed order, in chain order.
	orders []wire.Order
	// reveals: the servers' r_j (§3 v3), checked against their
	// commitments.
	reveals [][wire.CommitSize]byte
}

// closeRegistration closes registration on every server and gathers their
// verified registration lists, their signed orders and their reveals.
func (l *leading) closeRegistration(e *sepoch, desc wire.Descriptor) (*closed, error) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	params := desc.Params
	reps, err := s.each(ctx, chain, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCloseReq, Body: (&wire.EpochRef{Epoch: id}).Marshal(), Timeout: transport.ShortTimeout})
	if err != nil {
		l.abort("close failed")
		return nil, fmt.Errorf("node: close registration: %w", err)
	}
	reveals := make([][wire.CommitSize]byte, len(chain))
	all := e.reg.Forwarded()
	lim := proto.LimitsFor(params, len(chain))
	primaryOf := map[[32]byte]uint16{}
	rank := map[[32]byte]int{}
	orders := make([]wire.Order, len(chain))
	for i, r := range reps {
		var rl wire.RegList
		if err := rl.Unmarshal(r, lim); err != nil {
			l.abort("bad registration list")
			return nil, fmt.Errorf("node: registration list of server %d: %w", i, err)
		}
		reveals[i] = rl.Reveal
		// (v3) its signed order lists exactly its entries, in order.
		o, err := selection.OrderOfReply(&rl, id, i, chain)
		if err != nil {
			l.abort("bad order")
			return nil, err
		}
		orders[i] = o
		// Each entry must carry server i's signature as its primary:
		// server i sent it itself, and its order lists it.
		var regs []wire.Register
		var fs []wire.Forwarded
		for _, f := range rl.Regs {
			if int(f.Primary) != i || f.Reg.Epoch != id || proto.VerifyPeerSig(chain[i], proto.ForwardDigest(&f), f.Sig) != nil {
				l.abort("bad registration list")
				return nil, fmt.Errorf("node: registration list of server %d: an entry not signed by it", i)
			}
			regs, fs = append(regs, f.Reg), append(fs, f)
		}
		parsed, bad, err := proto.VerifyRegs(e.v, regs, s.rand)
		if err != nil {
			l.abort("registrations unverifiable")
			return nil, err
		}
		if len(bad) > 0 {
			// Signed by its primary: evidence against it (§8). The
			// primary is named and the epoch ends.
			f := fs[bad[0]]
			_, why := proto.CheckRegister(e.v, &f.Reg)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.nameForwarder(e, &f, why, true)
			}()
			return nil, fmt.Errorf("node: server %d signed a registration that does not verify", i)
		}
		for j, f := range fs {
			if parsed[j] == nil {
				continue
			}
			all[f.Reg.RegKey] = f
			primaryOf[f.Reg.RegKey] = uint16(i)
			rank[f.Reg.RegKey] = j
		}
	}
	if _, err := proto.RevealsOf(&desc, reveals); err != nil {
		// A server revealed nothing or not its committed r_j: the
		// selection cannot be computed, the epoch aborts (§3).
		l.abort("bad reveal")
		return nil, err
	}
	return &closed{all: all, primaryOf: primaryOf, rank: rank, orders: orders, reveals: reveals}, nil
}

// finalize sends the ordered registrations, collects the signatures of
// the final descriptor and delivers it to every server.
func (l *leading) finalize(desc wire.Descriptor, keys [][32]byte, cl *closed) error {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	keys = s.hookCfg().CheatKeys(chain, keys, cl)
	fin := desc
	// (v3) every primary's signed order goes with the list (internal/selection).
	ordered := wire.RegList{Epoch: id, Orders: cl.orders}
	for _, k := range keys {
		f := cl.all[k]
		ordered.Regs = append(ordered.Regs, f)
		fin.Clients = append(fin.Clients, wire.ClientEntry{RegKey: k, Primary: cl.primaryOf[k], XKey: f.Reg.XKey, RegHash: sha256.Sum256(f.Reg.Reg)})
	}
	// (v3) and every listed registration it did not select, so that
	// every server recomputes the selection (internal/selection).
	ordered.Rest = unselected(keys, cl)
	s.hookCfg().CheatList(&ordered)
	if _, err := s.each(ctx, chain, transport.Request{Proto: ProtoEpoch, Type: wire.TypeRegList, Body: ordered.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		l.abort("registration list refused")
		return fmt.Errorf("node: send registrations: %w", err)
	}
	sigs, err := l.sigs(&wire.Signed{Final: true, Desc: fin})
	if err != nil {
		l.abort("final descriptor refused")
		return fmt.Errorf("node: sign final descriptor: %w", err)
	}
	final := &wire.Signed{Final: true, Desc: fin, Sigs: sigs}
	s.hookRun().FinalSigned(final)
	to := s.hookRun().SignedTo(true, chain)
	_, err = s.each(ctx, to, transport.Request{Proto: ProtoEpoch, Type: wire.TypeSigned, Body: final.Marshal(), Timeout: transport.BulkTimeout})
	if err == nil && len(to) < len(chain) {
		err = errors.New("node: final descriptor held back")
	}
	if err != nil {
		l.abort("final descriptor not delivered")
		return fmt.Errorf("node: publish final descriptor: %w", err)
	}
	return nil
}

// sigs collects the chain's signatures of req, one a position.
func (l *leading) sigs(req *wire.Signed) ([][64]byte, error) {
	s, ctx, chain := l.s, l.ctx, l.chain
	reps, err := s.each(ctx, chain, transport.Request{Proto: ProtoEpoch, Type: wire.TypeSignReq, Body: req.Marshal(), Timeout: transport.BulkTimeout})
	if err != nil {
		return nil, err
	}
	sigs := make([][64]byte, len(chain))
	for i, r := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(r); err != nil || int(sg.Index) != i {
			return nil, fmt.Errorf("node: signature reply of server %d malformed", i)
		}
		sigs[i] = sg.Sig
	}
	return sigs, nil
}
