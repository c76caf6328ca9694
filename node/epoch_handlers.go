package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/prepare"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/internal/signed"
	"github.com/riffle-net/riffle/node/internal/window"
)

func (s *Server) onPrepare(from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.amnesia.Lost(s.cert.Top()); err != nil {
		return 0, nil, err
	}
	var p wire.Prepare
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	// The parameters, the chain and who is in it (internal/prepare).
	pos, err := prepare.Check(&p, from, s.prepFacts)
	if err != nil {
		return 0, nil, err
	}
	// Agree on the leader (rotate.go): the number's leader in the
	// chain derived here from the certificate of the number before,
	// whatever the proposed chain left out. The number's bounds first
	// (certs.CheckNumber), then the leader, then that certificate (internal/certs).
	s.mu.Lock()
	last := s.number
	busy := s.busy(p.Number)
	s.mu.Unlock()
	if err := certs.CheckNumber(last, p.Number); err != nil {
		return 0, nil, err
	}
	if busy != nil {
		return 0, nil, busy
	}
	// The roster of N follows from N−1's certificate (internal/members): its
	// leader (the certificate adds only live servers here, and is
	// verified next, before any cost), and no server of that certificate
	// left out without cause.
	// A previous certificate that outranks the one of its number held
	// here replaces it first (certs.Outranks): the leader follows
	// from the charges it decides. Only the number's leader's is checked.
	s.cert.TakeOutrankingFrom(p.Number, &p.Previous, from)
	if mine := s.members.Derived(&p.Previous); len(mine) >= s.cfg.MinServers && proto.LeaderOf(p.Number, mine) != from {
		return 0, nil, fmt.Errorf("node: %s leads epoch %d here, not %s", proto.LeaderOf(p.Number, mine).ShortString(), p.Number, from.ShortString())
	}
	if err := s.cert.OutrankedFrom(&p.Previous, from); err != nil {
		return 0, nil, err
	}
	if err := s.cert.CheckPrevious(p.Number, &p.Previous); err != nil {
		return 0, nil, err
	}
	// §6.3 (v3): the certificates that carry the window's walk past a
	// timeout (window.go).
	for i := range p.Gap {
		if err := s.cert.OutrankedFrom(&p.Gap[i], from); err != nil {
			return 0, nil, fmt.Errorf("node: the gap's certificate of %d: %w", p.Gap[i].Number, err)
		}
	}
	if err := window.CheckGap(&s.cert, p.Number, &p.Previous, p.Gap); err != nil {
		return 0, nil, err
	}
	// §6.3 (v3): the window the Prepare pins is held here before this
	// server answers (window.go), and before the left-out servers are
	// asked whether they would serve: they may take it from here.
	walk, err := s.takeWindow(from, &p)
	if err != nil {
		return 0, nil, err
	}
	if err := s.would.CheckLeftOut(&p); err != nil {
		return 0, nil, err
	}
	var addrs [][]byte
	for _, a := range s.h.Addrs() {
		addrs = append(addrs, a.Bytes())
	}
	keys, g, r, err := registry.Draw(s.rand, p.Number, p.Nonce, int(p.Params.Rounds), []byte(s.h.ID()), []byte(s.cfg.Nick), addrs)
	if err != nil {
		return 0, nil, err
	}
	e := &sepoch{pos: pos, nonce: p.Nonce, leader: from}
	e.sk, e.rk, e.dkey = keys.SK, keys.RK, keys.DKey
	e.reg.Prepared(g, p.Previous.Marshal(), p.Window, window.GapBytes(p.Gap), p.Cands, r)
	s.mu.Lock()
	// One epoch is prepared at a time (the leader runs them in turn): a
	// preparation that never got its descriptor signed is dropped here,
	// so that aborted epochs do not pile up.
	for k, old := range s.prep {
		old.erase()
		delete(s.prep, k)
	}
	s.prep[p.Nonce] = e
	// What this server serves as the number's window is the walk it
	// checked for the Prepare it may sign (windowItems), stored with the
	// preparation it replaces.
	if walk != nil {
		s.win.KeepWalk(p.Number, walk)
	}
	// The first Prepare of a number restarts the leader timeout, once
	// (rotate.go): the leader gets T_lead to open it (a withdrawal costs
	// it a retry), and a leader that prepares and never opens is silent
	// after at most twice T_lead.
	if p.Number != s.turn.prepared {
		s.turn.prepared = p.Number
		s.progressed()
	}
	s.mu.Unlock()
	return wire.TypeEntry, g.Marshal(), nil
}

func (s *Server) onSignReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.amnesia.Lost(s.cert.Top()); err != nil {
		return 0, nil, err
	}
	var sd wire.Signed
	if err := sd.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	if err := s.askedByLeader(from, &sd); err != nil {
		return 0, nil, err
	}
	v, err := proto.CheckDescriptor(&sd.Desc, s.cfg.PIRRate)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sd.Final {
		if len(sd.Desc.Clients) != 0 {
			return 0, nil, errors.New("node: open descriptor lists clients")
		}
		if len(sd.Desc.Reveals) != 0 {
			return 0, nil, proto.ErrRevealsInOpen
		}
		e := s.prep[sd.Desc.Nonce]
		if e == nil || e.pos >= len(v.Chain) || v.Chain[e.pos] != s.h.ID() {
			return 0, nil, errors.New("node: no prepared epoch for this descriptor")
		}
		if err := e.reg.CheckOpen(&sd.Desc, e.pos, window.GapBytes(sd.Desc.Gap)); err != nil {
			return 0, nil, err
		}
		if err := certs.CheckNumber(s.number, sd.Desc.Number); err != nil {
			return 0, nil, err
		}
		// Never the open descriptor of a number whose timeout this
		// server signed (internal/signed).
		if s.phase.TimeoutSigned(s.cfg.DataDir, sd.Desc.Number) {
			return 0, nil, signed.ErrTimeoutSigned
		}
		// The number is on disk before this server's signature leaves:
		// a restart never offers or accepts it again.
		if err := certs.SaveNumber(s.cfg.DataDir, sd.Desc.Number); err != nil {
			return 0, nil, err
		}
		s.number = sd.Desc.Number
		// The chain is on record for probation (internal/eligible).
		if err := s.who.Record(s.cfg.DataDir, sd.Desc.Number, v.Chain); err != nil {
			return 0, nil, err
		}
		delete(s.prep, sd.Desc.Nonce)
		e.v = v
		e.stepMsgs, e.rounds = map[int]*wire.Step{}, map[uint32]*sround{}
		s.epochs[v.ID] = e
		sig, err := proto.Sign(s.priv, proto.OpenDigest(&sd.Desc))
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
	}
	e := s.epochs[v.ID]
	if e == nil || e.ended {
		return 0, nil, errors.New("node: final descriptor of an unknown or ended epoch")
	}
	// Only of an epoch whose open descriptor is here: should it end
	// unfinished, this server certifies it by the abort (certs.go certifyAbortLocked), as
	// it never signs the timeout of a number whose final it signed.
	if e.reg.OpenSigs() == nil {
		return 0, nil, errors.New("node: final descriptor of an epoch whose open descriptor is not here")
	}
	// (v3) every reveal matches its commitment, and this server's is
	// the r_j it drew (§3): otherwise the selection is not the one
	// committed to before registration.
	if err := proto.CheckReveals(&sd.Desc); err != nil {
		return 0, nil, err
	}
	if err := e.reg.CheckFinalList(&sd.Desc, e.pos); err != nil {
		return 0, nil, err
	}
	signAny := s.hookCfg().SignAny()
	// (v3) every registration receipted here is in, unless the
	// descriptor is full and keeps its primary's quota (internal/registry),
	// and the client list is the selection of the rule, recomputed here
	// from the leader's list (internal/selection).
	if err := e.reg.CheckSelection(v.ID, &sd.Desc, len(v.Chain)); err != nil && !signAny {
		s.log.Warn("final descriptor refused", "err", err)
		return 0, nil, err
	}
	if len(sd.Desc.Clients) < s.cfg.MinClients {
		return 0, nil, fmt.Errorf("node: final descriptor lists %d clients, fewer than %d", len(sd.Desc.Clients), s.cfg.MinClients)
	}
	// (v2) sign only if every registration accepted here is in, (v3)
	// unless the descriptor is full and keeps this primary's quota.
	if err := e.reg.CheckSlots(&sd.Desc, e.pos, len(v.Chain), !signAny); err != nil {
		return 0, nil, err
	}
	// Marked on disk before the signature leaves (internal/signed).
	if err := s.phase.Mark(s.cfg.DataDir, sd.Desc.Number, true); err != nil {
		return 0, nil, err
	}
	sig, err := proto.Sign(s.priv, proto.FinalDigest(&sd.Desc))
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

func (s *Server) onSigned(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var sd wire.Signed
	if err := sd.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	if err := s.askedByLeader(from, &sd); err != nil {
		return 0, nil, err
	}
	v, err := proto.CheckSigned(&sd, s.cfg.PIRRate)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[v.ID]
	if e == nil || e.ended {
		return 0, nil, errors.New("node: signed descriptor of an unknown or ended epoch")
	}
	if !sd.Final {
		// The first sets the registration deadline as seen here: no
		// close before it (registry's OnClose).
		e.reg.Opened(body, sd.Sigs, time.Duration(sd.Desc.Params.RegWindowMs)*time.Millisecond, time.Now())
		// The leader opens an epoch only after the previous one ended;
		// anything older still running here missed its end.
		for _, old := range s.epochs {
			if old != e && !old.ended && old.v.Desc.Number < e.v.Desc.Number {
				s.endQuiet(old, "superseded")
			}
		}
		s.open = e
		// Ended epochs but the newest two are dropped now: without this
		// every epoch's state (its last rounds' onions and answers, setup
		// steps) stayed for the server's lifetime (found by TestSoak).
		s.forget()
		s.notify()
		return wire.TypeAck, ack, nil
	}
	if e.final != nil {
		return wire.TypeAck, ack, nil
	}
	e.final = v
	e.reg.Finalled(body)
	// The final descriptor certifies its number (certs.Final).
	s.madeCertLocked(certs.Final(&sd, v))
	if s.open == e {
		s.open = nil
	}
	s.notify()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); newSettingUp(s, e).run() }()
	if e.pos == 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.mixing.mixLoop(e) }()
	}
	s.evs().TakePreFinal(evEp(e))
	return wire.TypeAck, ack, nil
}
