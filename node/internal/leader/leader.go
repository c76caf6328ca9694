// Package leader is one epoch this server leads (docs/protocol.md §3,
// §4): the Prepare to every server of the chain it proposes, the open
// descriptor signed and sent, the registration awaited and closed, the
// selection (internal/selection) and the final descriptor signed and
// sent, or the leader's abort. The epoch's state is the server's, reached
// through Host and Epoch; the rotation that picks the number and the
// chain is the server's too.
package leader

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
)

// ErrBusy is a server's refusal of a Prepare while an epoch of the number
// before runs there: turn-taking, not a fault (the leader's own epoch
// ended a moment before that server's). The leader recognises it, as
// sent, by errors.Is (wire.Refusal).
const ErrBusy = wire.Refusal("node: an epoch is running here")

// Config is what a leader takes of the server, fixed at its start.
type Config struct {
	Self       peer.ID
	Params     wire.Params // the group's parameters
	MinClients int
	Timing     *proto.Tunables
	Rand       io.Reader
	Log        *slog.Logger
	Certs      *certs.Certs
	Window     *window.Items
	Charges    *chargelog.Log
	// Hooks are the tests' hook points, nil in the binary: every call
	// sits behind hooksBuilt, a constant false there, so none is linked
	// (TestBinaryHasNoTestHooks).
	Hooks Hooks
}

// Host is what a leader asks of the rest of the server.
type Host interface {
	// Ctx is the server's context: a late send outlives the leader's.
	Ctx() context.Context
	// Go runs f in a goroutine the server waits for at its close.
	Go(f func())
	Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)
	// Live: p is on the roster here.
	Live(p peer.ID) bool
	// Epoch is the epoch of id held here, nil if none.
	Epoch(id [32]byte) Epoch
	// Registering is Epoch with its forwarded registrations' count and
	// whether it ended, read at once.
	Registering(id [32]byte) (e Epoch, count int, ended bool)
	// Led counts an epoch opened by this server as leader.
	Led()
	AbortBody(id [32]byte, reason string) []byte
	// HandEvidence hands the chain the aborts that count for n's
	// refusal budget.
	HandEvidence(ctx context.Context, chain []peer.ID, n uint64)
	// NoteWithdrawal reports whether err holds a server's withdrawal,
	// and notes it.
	NoteWithdrawal(err error) bool
	// Candidates are the candidates n's Prepare over chain records
	// (internal/members), sorted.
	Candidates(n uint64, chain []peer.ID) [][]byte
}

// Epoch is the led epoch as the server holds it.
type Epoch interface {
	// View is the open descriptor's, nil before it is signed.
	View() *proto.View
	Forwarded() map[[32]byte]wire.Forwarded
	// NameForwarder names the primary that signed f, which does not
	// verify (why), and ends the epoch.
	NameForwarder(f *wire.Forwarded, why error)
	// AwaitEnd returns nil once the epoch ended, or ctx's error.
	AwaitEnd(ctx context.Context) error
	// EndStale ends the epoch if a round of it is stale by its dues.
	EndStale()
}

// Hooks are the tests' hook points on the leader's path (Config.Hooks).
type Hooks interface {
	LeaderGap(n uint64, g []wire.Cert) []wire.Cert
	LeaderWindow(n uint64, w []wire.WindowRef) []wire.WindowRef
	OpenLate(p peer.ID) time.Duration
	SignedTo(final bool, chain []peer.ID) []peer.ID
	HoldOpen() bool
	FinalSigned(*wire.Signed)
	CheatKeys(chain []peer.ID, keys [][32]byte, cl *Closed) [][32]byte
	CheatList(*wire.RegList)
}

// server is the leader's view of the server: its configuration and Host.
type server struct {
	Config
	Host
}

// hooked reports whether the tests' hooks are built in and set.
func (s *server) hooked() bool { return hooksBuilt && s.Hooks != nil }

// New is the epoch of number the server leads with chain, for ctx.
func New(ctx context.Context, c Config, h Host, chain []peer.ID, number uint64) *Leading {
	return &Leading{s: server{c, h}, ctx: ctx, chain: chain, number: number}
}

// TurnTaking is a Prepare refused for no fault: a server still in its
// own epoch (ErrBusy: the leader's ended a moment before), or one that
// withdrew (logged by noteWithdrawal). The leader tries again later.
type TurnTaking struct{ error }

func (t *TurnTaking) Unwrap() error { return t.error }

// ErrRetryWithout marks a Prepare that a server of the chain refused:
// the leader tries the number again at once without it.
var ErrRetryWithout = errors.New("node: a server refused the prepare")

// Leading is one epoch this server leads (§3, §4): the chain it proposed
// and the number, from the Prepare to the final descriptor; the epoch's
// id once its open descriptor is signed. Its steps are its methods; the
// epoch's state is the server's (Epoch).
type Leading struct {
	s      server
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
func (l *Leading) abort(reason string) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	e := s.Epoch(id)
	if e != nil && e.View() != nil {
		if s.Charges.AbortedByOther(e.View().ID, s.Self) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.Timing.AbortSettle):
		}
		if s.Charges.AbortedByOther(e.View().ID, s.Self) {
			return
		}
	}
	body := s.AbortBody(id, reason)
	_, _ = s.Each(context.WithoutCancel(ctx), chain, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeAbort, Body: body, Timeout: transport.ShortTimeout})
}

// Run drives the epoch as leader (§3, §4): prepare, sign and open the
// descriptor, wait for registrations, close, sign the final descriptor; the
// setup and the rounds then run from events until the epoch ends.
func (l *Leading) Run() error {
	s, ctx, chain := l.s, l.ctx, l.chain
	desc, err := l.open()
	if err != nil {
		return err
	}
	id := l.id
	s.Led()
	s.Log.Info("epoch open", "number", desc.Number, "epoch", fmt.Sprintf("%x", id[:6]), "servers", len(chain))
	e, err := l.awaitRegistrations(desc.Params)
	if err != nil {
		return err
	}
	cl, err := l.closeRegistration(e, desc)
	if err != nil {
		return err
	}
	desc.Reveals = cl.Reveals
	keys := selection.Candidates(id, proto.SelectionBeta(cl.Reveals), cl.All, cl.PrimaryOf, cl.Rank, desc.Params.MaxClients, len(chain))
	if len(keys) < s.MinClients {
		l.abort("too few clients")
		return fmt.Errorf("node: %d valid registrations < %d", len(keys), s.MinClients)
	}
	if err := l.finalize(desc, keys, cl); err != nil {
		return err
	}
	s.Log.Info("epoch closed", "epoch", fmt.Sprintf("%x", id[:6]), "clients", len(keys))
	// The epoch now runs from events; the leader waits for its end, and
	// ends it for a stale round as the others do from takeTurn, which
	// does not run here meanwhile (node/stale.go).
	for {
		wctx, cancel := context.WithTimeout(ctx, s.Timing.LeaderPoll)
		err := e.AwaitEnd(wctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		e.EndStale()
	}
}

// open prepares the epoch on every server of the chain, collects their
// group entries and signatures and opens the signed descriptor (l.id).
func (l *Leading) open() (wire.Descriptor, error) {
	s, ctx, chain, number := l.s, l.ctx, l.chain, l.number
	var nonce [32]byte
	if _, err := s.Rand.Read(nonce[:]); err != nil {
		return wire.Descriptor{}, fmt.Errorf("node: epoch nonce: %w", err)
	}
	prev, err := s.Certs.Previous(number)
	if err != nil {
		s.Certs.PokeSync()
		return wire.Descriptor{}, err
	}
	// §6.3 (v3): past a timeout, the certificates back to the last
	// epoch carry the window's walk; N's window is pinned here; each
	// member checks both and holds the window before it answers
	// (internal/window).
	gap, err := window.GapFor(number, &prev, s.Certs.Of)
	if err != nil {
		s.Certs.PokeSync()
		return wire.Descriptor{}, err
	}
	if s.hooked() {
		gap = s.Hooks.LeaderGap(number, gap)
	}
	win := s.Window.Choose(ctx, chain, number, prev, gap)
	if s.hooked() {
		win = s.Hooks.LeaderWindow(number, win)
	}
	cands := s.Candidates(number, chain)
	prep := wire.Prepare{Number: number, Nonce: nonce, Params: s.Params, Chain: proto.ChainIDs(chain), Previous: prev, Window: win, Gap: gap, Cands: cands}
	// The servers this chain leaves out for their refusal budget are out
	// at every server only if every server has the aborts that count
	// (node/internal/evidence).
	s.HandEvidence(ctx, chain, number)
	reps, err := s.Each(ctx, chain, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypePrepare, Body: prep.Marshal(), Timeout: transport.ShortTimeout})
	if err != nil {
		// A server that refused may know numbers this one does not:
		// catch up from the certificates (internal/certs).
		s.Certs.PokeSync()
		withdrew := s.NoteWithdrawal(err)
		err = fmt.Errorf("node: prepare epoch %d: %w", number, err)
		if withdrew {
			err = errors.Join(ErrRetryWithout, err)
		}
		if withdrew || errors.Is(err, ErrBusy) {
			err = &TurnTaking{err}
		}
		return wire.Descriptor{}, err
	}
	desc := wire.Descriptor{Number: number, Nonce: nonce, Params: s.Params, Group: make([]wire.GroupEntry, len(chain)), Previous: prev, Window: win, Gap: gap, Cands: cands}
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
	if s.hooked() {
		now = nil
		for _, p := range chain {
			if d := s.Hooks.OpenLate(p); d > 0 {
				s.Go(func() {
					time.Sleep(d)
					_, _ = s.Each(s.Ctx(), []peer.ID{p}, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeSigned, Body: open.Marshal(), Timeout: transport.ShortTimeout})
				})
				continue
			}
			now = append(now, p)
		}
	}
	to := now
	if s.hooked() {
		to = s.Hooks.SignedTo(false, now)
	}
	_, err = s.Each(ctx, to, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeSigned, Body: open.Marshal(), Timeout: transport.ShortTimeout})
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
func (l *Leading) awaitRegistrations(params wire.Params) (Epoch, error) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	deadline := time.Now().Add(time.Duration(params.RegWindowMs) * time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		for _, p := range chain {
			if p != s.Self && !s.Live(p) {
				l.abort("server left")
				return nil, fmt.Errorf("node: server %s left during registration", p.ShortString())
			}
		}
		e, count, ended := s.Registering(id)
		if e == nil {
			return nil, errors.New("node: epoch vanished during registration")
		}
		if ended {
			// Another server's abort (a close overdue there, §3).
			return nil, errors.New("node: epoch ended during registration")
		}
		if time.Now().After(deadline) && count >= s.MinClients && !(s.hooked() && s.Hooks.HoldOpen()) {
			return e, nil
		}
	}
}

// Closed is what the leader gathers at the close (closeRegistration).
type Closed struct {
	// All: every registration by key, as its primary signed it.
	All map[[32]byte]wire.Forwarded
	// PrimaryOf: the primary (chain position) of each one a server
	// listed; Rank: its place in that primary's signed order.
	PrimaryOf map[[32]byte]uint16
	Rank      map[[32]byte]int
	// Orders: every primary's signed order, in chain order.
	Orders []wire.Order
	// Reveals: the servers' r_j (§3 v3), checked against their
	// commitments.
	Reveals [][wire.CommitSize]byte
}

// closeRegistration closes registration on every server and gathers their
// verified registration lists, their signed orders and their reveals.
func (l *Leading) closeRegistration(e Epoch, desc wire.Descriptor) (*Closed, error) {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	params := desc.Params
	reps, err := s.Each(ctx, chain, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeCloseReq, Body: (&wire.EpochRef{Epoch: id}).Marshal(), Timeout: transport.ShortTimeout})
	if err != nil {
		l.abort("close failed")
		return nil, fmt.Errorf("node: close registration: %w", err)
	}
	reveals := make([][wire.CommitSize]byte, len(chain))
	all := e.Forwarded()
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
		parsed, bad, err := proto.VerifyRegs(e.View(), regs, s.Rand)
		if err != nil {
			l.abort("registrations unverifiable")
			return nil, err
		}
		if len(bad) > 0 {
			// Signed by its primary: evidence against it (§8). The
			// primary is named and the epoch ends.
			f := fs[bad[0]]
			_, why := proto.CheckRegister(e.View(), &f.Reg)
			s.Go(func() {
				e.NameForwarder(&f, why)
			})
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
	return &Closed{All: all, PrimaryOf: primaryOf, Rank: rank, Orders: orders, Reveals: reveals}, nil
}

// finalize sends the ordered registrations, collects the signatures of
// the final descriptor and delivers it to every server.
func (l *Leading) finalize(desc wire.Descriptor, keys [][32]byte, cl *Closed) error {
	s, ctx, chain, id := l.s, l.ctx, l.chain, l.id
	if s.hooked() {
		keys = s.Hooks.CheatKeys(chain, keys, cl)
	}
	fin := desc
	// (v3) every primary's signed order goes with the list (internal/selection).
	ordered := wire.RegList{Epoch: id, Orders: cl.Orders}
	for _, k := range keys {
		f := cl.All[k]
		ordered.Regs = append(ordered.Regs, f)
		fin.Clients = append(fin.Clients, wire.ClientEntry{RegKey: k, Primary: cl.PrimaryOf[k], XKey: f.Reg.XKey, RegHash: sha256.Sum256(f.Reg.Reg)})
	}
	// (v3) and every listed registration it did not select, so that
	// every server recomputes the selection (internal/selection).
	ordered.Rest = selection.Unselected(keys, cl.PrimaryOf, cl.All)
	if s.hooked() {
		s.Hooks.CheatList(&ordered)
	}
	if _, err := s.Each(ctx, chain, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeRegList, Body: ordered.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		l.abort("registration list refused")
		return fmt.Errorf("node: send registrations: %w", err)
	}
	sigs, err := l.sigs(&wire.Signed{Final: true, Desc: fin})
	if err != nil {
		l.abort("final descriptor refused")
		return fmt.Errorf("node: sign final descriptor: %w", err)
	}
	final := &wire.Signed{Final: true, Desc: fin, Sigs: sigs}
	to := chain
	if s.hooked() {
		s.Hooks.FinalSigned(final)
		to = s.Hooks.SignedTo(true, chain)
	}
	_, err = s.Each(ctx, to, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeSigned, Body: final.Marshal(), Timeout: transport.BulkTimeout})
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
func (l *Leading) sigs(req *wire.Signed) ([][64]byte, error) {
	s, ctx, chain := l.s, l.ctx, l.chain
	reps, err := s.Each(ctx, chain, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeSignReq, Body: req.Marshal(), Timeout: transport.BulkTimeout})
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
