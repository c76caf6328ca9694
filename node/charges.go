package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Charges from evidence (docs/protocol.md §3, "Charges from evidence").
// Every charge to a refusal budget is chargeOf of one signed object (an
// abort, or a void list signed by the whole chain) and the absence
// attestations gathered with it, checked against the certificate of its
// epoch's number: the same bytes give the same charge on every server,
// whatever each saw and whenever. An absence counts against a server P
// only when more than half of the chain's servers other than P signed
// that they lacked P's part when their own deadline had passed; a claim
// of absence that the majority does not back counts against whoever made
// it (the abort's signer, the void's proposer S_0). Every server that
// holds such evidence adds its own attestation once, at first sight, and
// relays the evidence to the chain whenever it learned something new, so
// that the honest servers converge on the same attestations.

const tagAttest = "riffle/v3/attest"

func attestDigest(a *wire.Attest) [32]byte { return taggedHash(tagAttest, a.MarshalBody()) }

// chargeCtx is what chargeOf needs of the log: the certified chain of the
// evidence's number and whether that number's certificate is its final
// descriptor (an abort certificate or none: the registration never closed).
type chargeCtx struct {
	epoch [32]byte
	chain []peer.ID
	final bool
}

// certCtx is the chargeCtx of certificate c (none for a timeout: no epoch
// ran, nothing is charged).
func certCtx(c *wire.Cert) (chargeCtx, error) {
	if c.Kind == wire.CertTimeout {
		return chargeCtx{}, errors.New("node: evidence of a timed-out number")
	}
	chain, err := certChain(c)
	if err != nil {
		return chargeCtx{}, err
	}
	return chargeCtx{epoch: c.Epoch, chain: chain, final: c.Kind == wire.CertFinal}, nil
}

// chargeOf is the charge of ev in ctx: the server charged (empty for
// nobody) and why. It checks every signature it counts; an attestation
// that does not verify is an error (the evidence is refused whole).
func chargeOf(ev *wire.Charge, ctx chargeCtx) (peer.ID, string, error) {
	m := len(ctx.chain)
	if m == 0 {
		return "", "", errors.New("node: evidence without a chain")
	}
	var (
		signer  peer.ID // who made the claim
		kind    uint8   // the claim's kind (for the attestations)
		round   uint32
		epoch   [32]byte
		claimOf string
	)
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if err := a.Unmarshal(ev.Item); err != nil {
			return "", "", err
		}
		signer = peer.ID(a.Signer)
		if !inChain(ctx.chain, signer) {
			return "", "", errors.New("node: abort signed outside its chain")
		}
		if a.Kind != wire.AbortCoord && a.Number != ev.Number {
			return "", "", fmt.Errorf("node: abort of number %d as evidence of %d", a.Number, ev.Number)
		}
		if err := verifyPeerSig(signer, abortDigest(&a), a.Sig); err != nil {
			return "", "", err
		}
		epoch, kind, round, claimOf = a.Epoch, a.Kind, a.Round, string(a.Reason)
	case wire.EvVoid:
		var rl wire.RoundList
		if err := rl.Unmarshal(ev.Item, genericLimits()); err != nil {
			return "", "", err
		}
		if !rl.Void() || len(rl.Sigs) != m {
			return "", "", errors.New("node: a void's evidence is its list signed by the whole chain")
		}
		if rl.Blamed() {
			// Its cause is public (a culprit named): every honest
			// server signs it only with the blame's record.
			return "", "", errors.New("node: a blamed round's void is evidence against nobody")
		}
		dg := listDigest(&rl)
		for i, sg := range rl.Sigs {
			if err := verifyPeerSig(ctx.chain[i], dg, sg); err != nil {
				return "", "", err
			}
		}
		signer, epoch, kind, round = ctx.chain[0], rl.Epoch, wire.AbortNoPub, rl.Round
		claimOf = fmt.Sprintf("round %d void", rl.Round)
	default:
		return "", "", fmt.Errorf("node: evidence kind %d", ev.Kind)
	}
	if epoch != ctx.epoch {
		return "", "", errors.New("node: evidence of another epoch than its number's certificate")
	}
	for i := range ev.Attests {
		at := &ev.Attests[i]
		if at.Epoch != epoch || at.Number != ev.Number || at.Kind != kind || at.Round != round || int(at.Signer) >= m {
			return "", "", errors.New("node: attestation of another claim")
		}
		if err := verifyPeerSig(ctx.chain[at.Signer], attestDigest(at), at.Sig); err != nil {
			return "", "", fmt.Errorf("node: attestation: %w", err)
		}
	}
	lacked := attestedLacking(ev.Attests)
	// backed: more than half of the chain's servers other than j lacked
	// j's part.
	backed := func(j int) bool {
		n := 0
		for i, bits := range lacked {
			if int(i) != j && bits&(1<<uint(j)) != 0 {
				n++
			}
		}
		return 2*n > m-1
	}
	leader := leaderOf(ev.Number, ctx.chain)
	switch {
	case ev.Kind == wire.EvAbort && kind == wire.AbortFault:
		return signer, claimOf, nil
	case ev.Kind == wire.EvAbort && kind == wire.AbortCoord:
		if signer == leader && !ctx.final {
			return "", claimOf, nil // a registration that came to nothing
		}
		return signer, claimOf, nil
	case kind == wire.AbortNoClose:
		// Not conditioned on the number's certificate being final: one
		// server may keep the abort's certificate, another the final one,
		// of one attempt; an honest server that had the close attests none.
		for j, p := range ctx.chain {
			if p == leader && backed(j) {
				return leader, "registration never closed (attested): " + claimOf, nil
			}
		}
		return signer, "registration never closed (not backed): " + claimOf, nil
	default: // a missing publication: an abort of kind NoPub, or a void
		// No honest server attests a part of a round before the final
		// descriptor (it has no round), so no certificate kind is needed.
		for j := range m {
			if backed(j) {
				return ctx.chain[j], fmt.Sprintf("round %d: no part from position %d (attested)", round, j), nil
			}
		}
		return signer, fmt.Sprintf("round %d: absence not backed: %s", round, claimOf), nil
	}
}

// attestedLacking is what each signer of attests said it lacked: an
// honest server signs one attestation a claim, so a signer with two
// different ones equivocated and counts for nothing. The signatures are
// the caller's to check.
func attestedLacking(attests []wire.Attest) map[uint16]uint64 {
	first := map[uint16]wire.Attest{}
	lacked := map[uint16]uint64{}
	equiv := map[uint16]bool{}
	for _, a := range attests {
		if f, ok := first[a.Signer]; ok {
			equiv[a.Signer] = equiv[a.Signer] || f != a
			continue
		}
		first[a.Signer], lacked[a.Signer] = a, a.Lacking
	}
	for i := range equiv {
		if equiv[i] {
			delete(lacked, i)
		}
	}
	return lacked
}

// absenceDue is when each part of round q is due here (nil while q is
// not open here): the round opens by the group's schedule, not by any
// root a peer chose to send (openAt); S_0's part is due a round limit (its
// wait for the onions) and a hop after that, and each later part a hop
// after the part before it came here (partCame), or after that part's
// own due if it never came. A hop is a server's whole wait for its input
// (lackWindow) and its processing. Call with s.mu held.
func (e *sepoch) absenceDue(q uint32) []time.Time {
	open, ok := e.openAt[q]
	if !ok {
		return nil
	}
	v := e.final
	limit := time.Duration(v.desc.Params.RoundLimitMs) * time.Millisecond
	hop := lackWindow(e)
	due := make([]time.Time, len(v.chain))
	due[0] = open.Add(limit + hop)
	for j := 1; j < len(due); j++ {
		base := due[j-1]
		if at, ok := e.partCame(q, j-1); ok {
			base = at
		}
		due[j] = base.Add(hop)
	}
	return due
}

// partCame is when position j's part of round q (its signed root) came
// here, as far as dues go: one that came before the round opened here
// counts as come at the latest S_0 could mix the round (a round limit
// after the opening), since no honest server passes on a round before.
// Call with s.mu held.
func (e *sepoch) partCame(q uint32, j int) (time.Time, bool) {
	at, ok := e.rootAt[rootKey{q, uint16(j + 1)}]
	open, isOpen := e.openAt[q]
	if !ok || !isOpen {
		return time.Time{}, false
	}
	if at.Before(open) {
		at = open.Add(time.Duration(e.final.desc.Params.RoundLimitMs) * time.Millisecond)
	}
	return at, true
}

// roundAttestLocked is this server's signed attestation of what it lacks
// of round q's parts: bit j, the root of the batch that chain position j
// passes on (for the last, the publication). An attestation is a
// statement about the round while it ran here: it is signed once every
// part is due (absenceDue) or once the round stopped here (made void, or
// the epoch ended), and then sets the bit of a missing part only if its
// due passed before the round stopped, or if its server itself said it
// lacks its input (lack.go). Nothing is attested of a round not open here
// (a root alone opens nothing). The first one signed is the answer ever
// after: it speaks of times before it, and two of one signer would be its
// equivocation. nil when not due or unsigned. Call with s.mu held.
func (s *Server) roundAttestLocked(e *sepoch, q uint32) *wire.Attest {
	v := e.final
	if v == nil || q >= v.desc.Params.Rounds {
		return nil
	}
	if a := e.attested[q]; a != nil {
		return a
	}
	due := e.absenceDue(q)
	if due == nil {
		return nil
	}
	x := e.rounds[q]
	stop := e.endedAt
	if x != nil && !x.voidAt.IsZero() && (stop.IsZero() || x.voidAt.Before(stop)) {
		stop = x.voidAt
	}
	m := len(v.chain)
	if stop.IsZero() {
		if time.Now().Before(due[m-1]) {
			return nil
		}
		stop = time.Now()
	}
	var bits uint64
	if x == nil || x.list == nil || x.list.Void() {
		for j := range m {
			var held bool
			if j < m-1 {
				_, held = e.roots[rootKey{q, uint16(j + 1)}]
			} else {
				held = x != nil && (x.pubDone || x.publishing)
			}
			said := x != nil && x.lackBy != 0 && int(x.lackBy) == j
			if !held && (!due[j].After(stop) || said) {
				bits |= 1 << uint(j)
			}
		}
	}
	a := s.signAttestLocked(e, wire.AbortNoPub, q, bits)
	if a != nil {
		if e.attested == nil {
			e.attested = map[uint32]*wire.Attest{}
		}
		e.attested[q] = a
	}
	return a
}

// closeAttestLocked is this server's signed attestation that no close of
// the registration came from the leader by its own registration deadline
// plus half of T_lead; nil while that is not so here. Call with s.mu held.
func (s *Server) closeAttestLocked(e *sepoch) *wire.Attest {
	if e.closeAttest != nil {
		return e.closeAttest
	}
	if e.final != nil || e.regClosed || e.regDeadline.IsZero() || time.Since(e.regDeadline) < s.cfg.LeaderTimeout/2 {
		return nil
	}
	for j, p := range e.v.chain {
		if p == e.leader {
			e.closeAttest = s.signAttestLocked(e, wire.AbortNoClose, 0, 1<<uint(j))
			return e.closeAttest
		}
	}
	return nil
}

func (s *Server) signAttestLocked(e *sepoch, kind uint8, round uint32, bits uint64) *wire.Attest {
	if e.pos < 0 {
		return nil
	}
	a := &wire.Attest{AttestReq: wire.AttestReq{Epoch: e.v.id, Number: e.v.desc.Number, Kind: kind, Round: round}, Lacking: bits, Signer: uint16(e.pos)}
	sig, err := sign(s.priv, attestDigest(a))
	if err != nil {
		return nil
	}
	a.Sig = sig
	return a
}

// onAttestReq answers a chain server's request for this server's
// attestation, or says it is not due here.
func (s *Server) onAttestReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.lostRecords(); err != nil {
		return 0, nil, err
	}
	var q wire.AttestReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[q.Epoch]
	if e == nil || e.v == nil || !inChain(e.v.chain, from) || e.v.desc.Number != q.Number {
		return 0, nil, errors.New("node: attestation asked of an epoch not held here")
	}
	var a *wire.Attest
	if q.Kind == wire.AbortNoClose {
		a = s.closeAttestLocked(e)
	} else if e.final != nil && e.admit(q.Round) == nil {
		a = s.roundAttestLocked(e, q.Round)
	}
	if a == nil {
		return 0, nil, errors.New("node: no absence due here")
	}
	return wire.TypeAttest, a.Marshal(), nil
}

// evidenceSlot names who made the claim of ev, in which epoch, with what
// kind of evidence: an abort's signer, kind and round (an honest signer
// signs one abort an epoch; a claim of one round cannot stand for
// another's), a void's proposer (one a chain); "" if ev does not decode.
func evidenceSlot(ev *wire.Charge) string {
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return ""
		}
		return fmt.Sprintf("%x/%d/%x/%d/%d", a.Epoch, ev.Kind, a.Signer, a.Kind, a.Round)
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, genericLimits()) != nil {
			return ""
		}
		return fmt.Sprintf("%x/%d", rl.Epoch, ev.Kind)
	}
	return ""
}

// slotTaken reports whether recs hold evidence of slot with a key smaller
// than key.
func slotTaken(recs []refusal, slot, key string) bool {
	for i := range recs {
		if r := &recs[i]; r.Key < key && recordSlot(r) == slot {
			return true
		}
	}
	return false
}

// recordSlot is the evidenceSlot of a record's evidence.
func recordSlot(r *refusal) string {
	var ev wire.Charge
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil {
		return ""
	}
	return evidenceSlot(&ev)
}

// chargeKey names a piece of evidence by what its signers signed, not by
// the signatures: a signer can sign one digest afresh as often as it
// likes, and a copy under a new key would replace the record and drop the
// attestations it holds. "" if ev does not decode.
func chargeKey(ev *wire.Charge) string {
	var dg [32]byte
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return ""
		}
		dg = abortDigest(&a)
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, genericLimits()) != nil {
			return ""
		}
		dg = listDigest(&rl)
	default:
		return ""
	}
	h := sha256.Sum256(append([]byte{ev.Kind}, dg[:]...))
	return hex.EncodeToString(h[:])
}

// sameClaim keeps the attestations of as that attest the claim of ev
// (its epoch, kind and round): those a replaced record of ev's slot
// held count for its successor too.
func sameClaim(ev *wire.Charge, as []wire.Attest) []wire.Attest {
	var epoch [32]byte
	var kind uint8
	var round uint32
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return nil
		}
		epoch, kind, round = a.Epoch, a.Kind, a.Round
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, genericLimits()) != nil {
			return nil
		}
		epoch, kind, round = rl.Epoch, wire.AbortNoPub, rl.Round
	default:
		return nil
	}
	var out []wire.Attest
	for _, at := range as {
		if at.Epoch == epoch && at.Number == ev.Number && at.Kind == kind && at.Round == round {
			out = append(out, at)
		}
	}
	return out
}

// mergeAttests adds to into the attestations of from it lacks, at most
// two different ones a signer (the second proves it equivocated, which
// voids its word: chargeOf), and reports whether any was added. An
// attestation of no absence is kept too: it shows the signer's answer.
func mergeAttests(into *wire.Charge, from []wire.Attest) bool {
	grew := false
	for _, a := range from {
		n, dup := 0, false
		for _, b := range into.Attests {
			if b.Signer == a.Signer {
				n++
				dup = dup || b == a
			}
		}
		if dup || n >= 2 {
			continue
		}
		into.Attests = append(into.Attests, a)
		grew = true
	}
	sort.SliceStable(into.Attests, func(i, j int) bool { return into.Attests[i].Signer < into.Attests[j].Signer })
	return grew
}

// logCharge merges ev into the evidence held here and recomputes its
// charge (chargeOf in ctx); it reports whether the evidence held here
// grew. waived keeps the evidence uncounted (its epoch's cause is
// public). Never call with s.ref.mu held.
func (s *Server) logCharge(ev *wire.Charge, ctx chargeCtx, waived bool) (bool, error) {
	rs := &s.ref
	rs.loaded.Do(s.loadRefusals)
	key := chargeKey(ev)
	slot := evidenceSlot(ev)
	rs.mu.Lock()
	var rec *refusal
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	// One record a signer, epoch and kind of evidence: the smallest
	// key, the same on every server whatever the order, so that a
	// signer's flood of objects evicts nothing.
	if rec == nil && slot != "" && slotTaken(rs.recs, slot, key) {
		rs.mu.Unlock()
		return false, nil
	}
	merged := &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
	if rec != nil {
		if err := merged.Unmarshal(rec.Ev); err != nil {
			merged = &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
		}
	} else if slot != "" {
		// It will replace its slot's record: keep what that one held.
		for i := range rs.recs {
			var old wire.Charge
			if r := &rs.recs[i]; recordSlot(r) == slot && r.Ev != nil && old.Unmarshal(r.Ev) == nil {
				mergeAttests(merged, sameClaim(merged, old.Attests))
			}
		}
	}
	grew := mergeAttests(merged, ev.Attests)
	if rec != nil && !grew {
		rs.mu.Unlock()
		return false, nil
	}
	rs.mu.Unlock()
	// Checked outside the lock: signatures.
	charged, reason, err := chargeOf(merged, ctx)
	if err != nil {
		return false, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec = nil
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	if rec == nil && slot != "" {
		if slotTaken(rs.recs, slot, key) {
			return false, nil
		}
		// Checked: it replaces its slot's record of a larger key.
		for i := range rs.recs {
			if r := &rs.recs[i]; recordSlot(r) == slot {
				r.Key, rec = key, r
			}
		}
	}
	if rec == nil {
		rs.recs = append(rs.recs, refusal{Key: key, Number: ev.Number, Window: uint64(len(ctx.chain)),
			Epoch: hex.EncodeToString(ctx.epoch[:]), Waived: waived})
		rec = &rs.recs[len(rs.recs)-1]
	}
	was := rec.Peer
	// A waiver only adds: the copy logged first may have been judged
	// before the epoch's public cause was known here.
	rec.Waived = rec.Waived || waived
	rec.Peer, rec.Reason, rec.Ev = "", reason, merged.Marshal()
	if charged != "" {
		rec.Peer = charged.String()
	}
	rs.prune()
	s.saveRefusalsLocked()
	if rec.Peer != was && charged != "" && !rec.Waived {
		s.log.Info("abort on private grounds counted", "peer", charged.ShortString(), "number", ev.Number, "reason", reason)
	}
	return true, nil
}

// spreadCharge sends the evidence held here under ev's key to the servers
// of chain but this one and skip.
func (s *Server) spreadCharge(ev *wire.Charge, chain []peer.ID, skip peer.ID) {
	body := s.heldCharge(ev)
	if body == nil {
		return
	}
	var to []peer.ID
	for _, p := range chain {
		if p != s.h.ID() && p != skip {
			to = append(to, p)
		}
	}
	if len(to) > 0 {
		s.notifyAll(to, wire.TypeCharge, body)
	}
}

// heldCharge is the encoded evidence held here of ev's object.
func (s *Server) heldCharge(ev *wire.Charge) []byte {
	key := chargeKey(ev)
	s.ref.mu.Lock()
	defer s.ref.mu.Unlock()
	for _, r := range s.ref.recs {
		if r.Key == key {
			return r.Ev
		}
	}
	return nil
}

// noteChargeLocked logs ev of held epoch e, with this server's own
// attestation added at first sight (own), and relays it to the chain if
// anything was new here. Call with s.mu held.
func (s *Server) noteChargeLocked(e *sepoch, ev *wire.Charge, own *wire.Attest, from peer.ID, waived bool) {
	if own != nil && s.heldCharge(ev) == nil {
		ev.Attests = append(ev.Attests, *own)
	}
	ctx := s.chargeCtxLocked(e)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		grew, err := s.logCharge(ev, ctx, waived)
		if err != nil {
			s.log.Warn("evidence refused", "number", ev.Number, "err", err)
			return
		}
		if grew {
			s.spreadCharge(ev, ctx.chain, from)
		}
	}()
}

// chargeCtxLocked is e's chargeCtx: from its number's certificate when
// kept here, else from e itself. Call with s.mu held.
func (s *Server) chargeCtxLocked(e *sepoch) chargeCtx {
	if c, ok := s.certOf(e.v.desc.Number); ok && c.Epoch == e.v.id {
		if ctx, err := certCtx(c); err == nil {
			return ctx
		}
	}
	return chargeCtx{epoch: e.v.id, chain: e.v.chain, final: e.final != nil}
}

// onCharge takes evidence from a server: for an epoch held here and a
// sender of its chain, as an abort or void of that epoch (the abort ends
// it); otherwise checked against the certificate of its number, from a
// roster server, recent enough to count.
func (s *Server) onCharge(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.Charge
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var id [32]byte
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if err := a.Unmarshal(ev.Item); err != nil {
			return 0, nil, err
		}
		id = a.Epoch
		s.mu.Lock()
		e := s.epochs[a.Epoch]
		if e != nil && e.v != nil && inChain(e.v.chain, from) {
			defer s.mu.Unlock()
			return s.takeAbortLocked(e, from, &a, &ev)
		}
		s.mu.Unlock()
	case wire.EvVoid:
		var rl wire.RoundList
		if err := rl.Unmarshal(ev.Item, genericLimits()); err != nil {
			return 0, nil, err
		}
		id = rl.Epoch
		s.mu.Lock()
		e := s.epochs[rl.Epoch]
		if e != nil && e.final != nil && inChain(e.v.chain, from) && rl.Void() && !e.blameVoided(rl.Round) {
			var own *wire.Attest
			if e.admit(rl.Round) == nil {
				own = s.roundAttestLocked(e, rl.Round)
			}
			s.noteChargeLocked(e, &ev, own, from, s.publicCause(e))
			s.mu.Unlock()
			return wire.TypeAck, ack, nil
		}
		s.mu.Unlock()
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: evidence from outside the roster")
	}
	c, ok := s.certOf(ev.Number)
	if !ok || c.Epoch != id {
		return wire.TypeAck, ack, nil
	}
	ctx, err := certCtx(c)
	if err != nil {
		return wire.TypeAck, ack, nil
	}
	s.mu.Lock()
	old := ev.Number+2*uint64(len(ctx.chain)) <= s.number
	s.mu.Unlock()
	if old {
		return wire.TypeAck, ack, nil // too old to leave anyone out
	}
	if _, err := s.logCharge(&ev, ctx, false); err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, ack, nil
}

// askAttests gathers the attestations of kind and round from the other
// servers of e's chain but skip, once each, within shortTimeout: those
// that answer with a valid one. Never call with s.mu held.
func (s *Server) askAttests(e *sepoch, kind uint8, round uint32, skip peer.ID) []wire.Attest {
	q := (&wire.AttestReq{Epoch: e.v.id, Number: e.v.desc.Number, Kind: kind, Round: round}).Marshal()
	var to []peer.ID
	for _, p := range e.v.chain {
		if p != s.h.ID() && p != skip {
			to = append(to, p)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, shortTimeout)
	defer cancel()
	reps, _ := s.each(ctx, to, request{Proto: ProtoEpoch, Type: wire.TypeAttestReq, Body: q, Timeout: shortTimeout})
	var out []wire.Attest
	for i, rep := range reps {
		var a wire.Attest
		if rep == nil || a.Unmarshal(rep) != nil || a.Epoch != e.v.id || a.Kind != kind || a.Round != round ||
			int(a.Signer) >= len(e.v.chain) || e.v.chain[a.Signer] != to[i] {
			continue
		}
		if verifyPeerSig(to[i], attestDigest(&a), a.Sig) == nil {
			out = append(out, a)
		}
	}
	return out
}

// replayCharges is the charges of a log's evidence: for each server, the
// numbers of the epochs it is charged for (each once), in order. ctxOf
// gives the certified context of a number. The same evidence and
// certificates give the same charges on every server.
func replayCharges(evs [][]byte, ctxOf func(n uint64) (chargeCtx, bool)) map[peer.ID][]uint64 {
	byKey := map[string]*wire.Charge{}
	least := map[string]string{} // per evidenceSlot, its smallest key
	for _, b := range evs {
		var ev wire.Charge
		if ev.Unmarshal(b) != nil {
			continue
		}
		k := chargeKey(&ev)
		if have := byKey[k]; have != nil {
			mergeAttests(have, ev.Attests)
		} else {
			byKey[k] = &ev
		}
		if sl := evidenceSlot(&ev); sl != "" && (least[sl] == "" || k < least[sl]) {
			least[sl] = k
		}
	}
	for k, ev := range byKey {
		if sl := evidenceSlot(ev); sl != "" && least[sl] != k {
			// As logCharge: one record a slot, with the attestations
			// of its claim that the others held.
			keep := byKey[least[sl]]
			mergeAttests(keep, sameClaim(keep, ev.Attests))
			delete(byKey, k)
		}
	}
	seen := map[string]bool{}
	out := map[peer.ID][]uint64{}
	for _, ev := range byKey {
		ctx, ok := ctxOf(ev.Number)
		if !ok {
			continue
		}
		p, _, err := chargeOf(ev, ctx)
		if err != nil || p == "" {
			continue
		}
		k := p.String() + "/" + hex.EncodeToString(ctx.epoch[:])
		if !seen[k] {
			seen[k] = true
			out[p] = append(out[p], ev.Number)
		}
	}
	for p := range out {
		sort.Slice(out[p], func(i, j int) bool { return out[p][i] < out[p][j] })
	}
	return out
}
