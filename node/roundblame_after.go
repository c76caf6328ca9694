package node

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/internal/strikes"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// After a blame (docs/protocol.md §8 "After a blame"): every honest server
// logs the culprit with its evidence, keeps a machine-readable record, and
// forms the next epoch without it. A culprit server's peer id never returns
// to this server's chain. A culprit client is refused by the primary that
// served it, by peer id and by address, for a number of epochs that doubles
// on each repeat; no other server learns its address.

// clientRefusal says why this primary refuses a client peer in epoch
// number, by its peer id or by the address it connects from, or nil
// (internal/strikes's Table). Call with s.mu held.
func (s *Server) clientRefusal(p peer.ID, number uint64) error {
	return s.strikes.Refusal(p, s.peerIPs(p), number)
}

// peerIPs returns the addresses a peer is connected from, except loopback:
// clients on this machine share one address (tests, a local demo), and
// excluding it would exclude them all.
func (s *Server) peerIPs(p peer.ID) []string {
	var out []string
	for _, a := range s.h.RemoteAddrs(p) {
		ip := remoteIP(a)
		if ip != nil && !ip.IsLoopback() {
			out = append(out, ip.String())
		}
	}
	return out
}

func remoteIP(a ma.Multiaddr) net.IP {
	for _, code := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := a.ValueForProtocol(code); err == nil {
			return net.ParseIP(v)
		}
	}
	return nil
}

// clientStriker is a ChunkStore that keeps a primary's client strikes.
type clientStriker interface {
	PutClientStrike(string, store.ClientStrike) (store.ClientStrike, error)
	ClientStrikes() (map[string]store.ClientStrike, error)
}

// saveStrikes writes strike records to the store, without s.mu (the store
// keeps the larger of each field, so writes that race in any order end
// right).
func (s *Server) saveStrikes(recs []strikes.Rec) {
	cs, ok := s.store.(clientStriker)
	if !ok {
		return
	}
	for _, r := range recs {
		if _, err := cs.PutClientStrike(r.Key, r.X); err != nil {
			s.log.Error("client strike not stored; a restart would forget it", "err", err)
		}
	}
}

// loadStrikes takes the stored strikes in, at start: a struck client
// stays refused across a restart, and its next strike doubles on.
func (s *Server) loadStrikes() {
	cs, ok := s.store.(clientStriker)
	if !ok {
		return
	}
	recs, err := cs.ClientStrikes()
	if err != nil {
		s.log.Error("client strikes unreadable; struck clients are forgiven", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strikes.Load(recs)
}

// conclude acts on a walk's result: log, record, exclusion.
func (s *Server) conclude(e *sepoch, bl *roundblame.Blame, c *roundblame.Culprit) {
	v := e.final
	if c == nil {
		s.log.Warn("round blame: the walk did not finish; nobody is named", "epoch", fmt.Sprintf("%x", v.ID[:6]), "round", bl.Round)
		return
	}
	s.name(e, bl.Round, c, bl.Evidence())
}

// name logs a culprit with its evidence, records it in the store and
// excludes it (§8 "After a blame").
func (s *Server) name(e *sepoch, round uint32, c *roundblame.Culprit, evidence [][]byte) {
	v := e.final
	if v == nil || v.Desc == nil || c.Server >= len(v.Chain) || c.Slot >= len(v.Desc.Clients) {
		return // no final descriptor to name a party of
	}
	epochHex := fmt.Sprintf("%x", v.ID[:6])
	var recs []strikes.Rec
	rec := store.BlameRecord{Epoch: v.ID, Number: v.Desc.Number, Round: round, Reason: c.Why, Evidence: evidence, Time: time.Now().Unix()}
	s.mu.Lock()
	if c.Server >= 0 {
		p := v.Chain[c.Server]
		rec.Role, rec.Server, rec.PeerID = "server", c.Server, p.String()
		s.rb.Add(p)
		s.log.Warn("round blame: culprit named; it is excluded from every chain here", "epoch", epochHex, "round", round,
			"culprit", fmt.Sprintf("server %d (%s)", c.Server, p), "evidence", c.Why)
	} else {
		rec.Role, rec.Slot = "client", c.Slot
		excluded := ""
		if cl := v.Desc.Clients[c.Slot]; int(cl.Primary) == e.pos {
			if p, ok := e.reg.From(cl.RegKey); ok {
				var until uint64
				until, recs = s.strikes.Client(p, s.peerIPs(p), v.Desc.Number)
				excluded = fmt.Sprintf("refused here up to epoch %d", until)
			}
		}
		// The slot is the culprit's own; no honest client is tied to it.
		s.log.Warn("round blame: culprit named", "epoch", epochHex, "round", round,
			"culprit", fmt.Sprintf("client in slot %d", c.Slot), "evidence", c.Why, "exclusion", excluded)
	}
	s.mu.Unlock()
	s.saveStrikes(recs)
	if br, ok := s.store.(roundblame.Recorder); ok {
		if err := br.PutBlame(rec); err != nil {
			s.log.Error("round blame: record not stored", "err", err)
		}
	}
	s.ref.Cause(v.ID) // the public cause of its epoch's end
	if c.Server < 0 {
		// The long-term key (ltexclude.go): published by the slot's
		// primary, excluded everywhere it is checked.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.clientNamed(e, c.Slot)
		}()
	}
}

// equivocation names a server that signed two different roots for one
// batch (§5.2): the two signed roots are public evidence, sent to every
// chain server so that each checks and names it too. Called once per epoch
// (noteRoot's first conflict), without s.mu.
func (s *Server) equivocation(e *sepoch, a, b wire.Root) {
	ev := wire.Equivocation{A: a, B: b}
	body := ev.Marshal()
	t := int(a.S) - 1
	s.name(e, a.Round, roundblame.ServerCulprit(t, "server %d signed two roots for its output of round %d (equivocation)", t, a.Round), [][]byte{body})
	if err := s.sendEvidence(e, wire.TypeEquivocation, body, transport.ShortTimeout, t); err != nil {
		s.log.Warn("equivocation evidence not delivered everywhere", "err", err)
	}
}

// onEquivocation checks two signed roots of one batch that differ and
// names their signer.
func (s *Server) onEquivocation(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.Equivocation
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(ev.A.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	if !fromChain(e, from) {
		return 0, nil, errors.New("node: equivocation evidence not from a chain server")
	}
	if s.hookRun().RefuseEvidence(wire.TypeEquivocation) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	t, err := roundblame.CheckEquivocation(v, &ev)
	if err != nil {
		return 0, nil, err
	}
	a := ev.A
	s.mu.Lock()
	first := !e.equivNamed
	e.equivNamed = true
	s.end(e, fmt.Sprintf("round %d: server %d signed two batch roots", a.Round, a.S-1))
	s.mu.Unlock()
	if first {
		s.name(e, a.Round, roundblame.ServerCulprit(t, "server %d signed two roots for its output of round %d (equivocation)", t, a.Round), [][]byte{body})
	}
	return wire.TypeAck, ack, nil
}

// doubleSubmit names the client of a slot that signed two different onions
// for one round (§5.1): the two signed hashes are public evidence, sent to
// every chain server so that each checks and names it too. Without s.mu.
func (s *Server) doubleSubmit(e *sepoch, d wire.DoubleSubmit) {
	body := d.Marshal()
	s.nameDouble(e, d, body)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.walks().DropDouble(blameEp(e), d)
	}()
	if err := s.sendEvidence(e, wire.TypeDoubleSubmit, body, transport.ShortTimeout, -1); err != nil {
		s.log.Warn("double-submission evidence not delivered everywhere", "err", err)
	}
}

// noteDouble starts doubleSubmit once per slot for two different
// submissions of one slot. Call with s.mu held.
func (s *Server) noteDouble(e *sepoch, a, b *wire.Submit) {
	if e.doubleNamed[a.Slot] {
		return
	}
	if e.doubleNamed == nil {
		e.doubleNamed = map[uint32]bool{}
	}
	e.doubleNamed[a.Slot] = true
	d := wire.DoubleSubmit{Epoch: a.Epoch, Round: a.Round, Slot: a.Slot, HashA: mix.SubmissionDigest(a.Onion), SigA: a.Sig, HashB: mix.SubmissionDigest(b.Onion), SigB: b.Sig}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.doubleSubmit(e, d)
	}()
}

func (s *Server) nameDouble(e *sepoch, d wire.DoubleSubmit, body []byte) {
	s.name(e, d.Round, &roundblame.Culprit{Server: -1, Slot: int(d.Slot), Why: fmt.Sprintf("it signed two different onions for round %d", d.Round)}, [][]byte{body})
}

// onDoubleSubmit checks two signed submissions of one slot that differ and
// names its client.
func (s *Server) onDoubleSubmit(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var d wire.DoubleSubmit
	if err := d.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(d.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	if !fromChain(e, from) {
		return 0, nil, errors.New("node: double-submission evidence not from a chain server")
	}
	if s.hookRun().RefuseEvidence(wire.TypeDoubleSubmit) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	if err := roundblame.CheckDoubleSubmit(v, &d); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	first := !e.doubleNamed[d.Slot]
	if e.doubleNamed == nil {
		e.doubleNamed = map[uint32]bool{}
	}
	e.doubleNamed[d.Slot] = true
	s.mu.Unlock()
	if first {
		s.nameDouble(e, d, body)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.walks().DropDouble(blameEp(e), d)
		}()
	}
	return wire.TypeAck, ack, nil
}

// noteBadBatch names, once per epoch, server t whose signed batch of round
// r has entries that match its signed root but a wrong shape (a missing
// entry or one of the wrong size, §5.2): the batch itself is the public
// evidence, sent to every chain server so that each checks and names it.
// Call with s.mu held.
func (s *Server) noteBadBatch(e *sepoch, t int, r uint32, body []byte) {
	if e.badNamed {
		return
	}
	e.badNamed = true
	body = append([]byte(nil), body...)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.name(e, r, roundblame.ServerCulprit(t, "server %d signed a batch of round %d with a missing or wrong-size entry", t, r), [][]byte{body})
		if err := s.sendEvidence(e, wire.TypeBadBatch, body, transport.BulkTimeout, t); err != nil {
			s.log.Warn("malformed-batch evidence not delivered everywhere", "err", err)
		}
	}()
}

// onBadBatch checks a forwarded signed batch: its sender's signature, its
// entries against the signed root (entries that do not match it are no
// evidence: anyone could attach them), and its shape; a wrong shape names
// the sender.
func (s *Server) onBadBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	h, err := wire.PeekBatch(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(h.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	m := len(v.Chain)
	inChain := false
	for _, p := range v.Chain {
		inChain = inChain || p == from
	}
	S := int(h.S)
	if !inChain || S < 1 || S > m || h.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: malformed-batch evidence not from a chain server")
	}
	if s.hookRun().RefuseEvidence(wire.TypeBadBatch) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	lim := proto.LimitsFor(v.Desc.Params, m)
	lim.Frame = roundCaps(wire.TypeBadBatch)
	r, err := roundblame.CheckBadBatch(v, h, body, lim)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	s.end(e, fmt.Sprintf("round %d void: batch from server %d malformed", r, S-1))
	s.noteBadBatch(e, S-1, r, body)
	s.mu.Unlock()
	return wire.TypeAck, ack, nil
}
