package chargelog

import (
	"encoding/hex"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
)

// The evidence log (docs/protocol.md §3): evidence named by what was
// signed, one record a claimant's slot, merged, relayed to the chain and
// replayed into the same charges on every server.

// slotTaken reports whether recs hold evidence of slot with a key smaller
// than key.
func slotTaken(recs []Record, slot, key string) bool {
	for i := range recs {
		if r := &recs[i]; r.Key < key && recordSlot(r) == slot {
			return true
		}
	}
	return false
}

// slotClosed reports whether evidence of kind for slot may not replace
// the record recs hold there, whatever its key: an equivocation charges
// its signer once an epoch whichever pair shows it, and a signer grinding
// pairs of ever smaller keys rewrote the refusals file once a pair
// (TestEquivocationGrindWritesOnce).
func slotClosed(recs []Record, kind uint8, slot string) bool {
	return (kind == wire.EvEquiv || kind == wire.EvHeld || kind == wire.EvForward || kind == wire.EvAccount) && slotTaken(recs, slot, "\xff")
}

// recordSlot is the blame.EvidenceSlot of a record's evidence.
func recordSlot(r *Record) string {
	var ev wire.Charge
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil {
		return ""
	}
	return blame.EvidenceSlot(&ev)
}

// LogCharge merges ev into the evidence held here and recomputes its
// charge (blame.ChargeOf in ctx); it reports whether the evidence held here
// grew. Never call with rs.mu held.
func (rs *Log) LogCharge(ev *wire.Charge, ctx blame.Context) (bool, error) {
	rs.load()
	key := blame.ChargeKey(ev)
	slot := blame.EvidenceSlot(ev)
	rs.mu.Lock()
	var rec *Record
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	// One record a signer, epoch and kind of evidence: the smallest
	// key, the same on every server whatever the order, so that a
	// signer's flood of objects evicts nothing.
	if rec == nil && slot != "" && (slotTaken(rs.recs, slot, key) || slotClosed(rs.recs, ev.Kind, slot)) {
		rs.mu.Unlock()
		return false, nil
	}
	merged := &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
	if rec != nil {
		if err := merged.Unmarshal(rec.Ev); err != nil && rec.Ev != nil {
			// Never replaced by the incoming message alone: that
			// dropped every attestation the record held.
			rs.mu.Unlock()
			return false, err
		} else if err != nil {
			merged = &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
		}
	} else if slot != "" {
		// It will replace its slot's record: keep what that one held.
		for i := range rs.recs {
			var old wire.Charge
			if r := &rs.recs[i]; recordSlot(r) == slot && r.Ev != nil && old.Unmarshal(r.Ev) == nil {
				blame.MergeAttests(merged, blame.SameClaim(merged, old.Attests))
			}
		}
	}
	grew := blame.MergeAttests(merged, ev.Attests)
	if rec != nil && !grew {
		rs.mu.Unlock()
		return false, nil
	}
	rs.mu.Unlock()
	var charged peer.ID
	var reason string
	// Judged in the context of the number's certificate held when the
	// record is written: one read before a replacement, whose rejudge
	// ran meanwhile, would overwrite the recomputed charge
	// (TestRejudgeRace). The loop leaves with rs.mu held; it ends since a
	// number's certificate only ever rises in rank (certs.Outranks), so its
	// context changes at most twice.
	for {
		// Checked outside the lock: signatures.
		var err error
		if charged, reason, err = blame.ChargeOf(merged, ctx); err != nil {
			return false, err
		}
		rs.mu.Lock()
		cur, ok := rs.certCtx(ev.Number)
		if !ok || sameContext(cur, ctx) {
			break
		}
		rs.mu.Unlock()
		ctx = cur
	}
	defer rs.mu.Unlock()
	rec = nil
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	if rec == nil && slot != "" {
		if slotTaken(rs.recs, slot, key) || slotClosed(rs.recs, ev.Kind, slot) {
			return false, nil
		}
		// Checked: it replaces its slot's record of a larger key.
		for i := range rs.recs {
			if r := &rs.recs[i]; recordSlot(r) == slot {
				r.Key, rec = key, r
			}
		}
	}
	added := rec == nil
	if added {
		rs.recs = append(rs.recs, Record{Key: key, Number: ev.Number, Window: uint64(len(ctx.Chain)),
			Epoch: hex.EncodeToString(ctx.Epoch[:])})
		rec = &rs.recs[len(rs.recs)-1]
	}
	was := rec.Peer
	rec.Cause = blame.PublicCause(merged, charged)
	rec.Peer, rec.Reason, rec.Ev = "", reason, merged.Marshal()
	if charged != "" {
		rec.Peer = charged.String()
	}
	now, epoch, waived, cause := rec.Peer, rec.Epoch, rec.Waived, rec.Cause
	rs.prune() // moves the records: rec is stale
	kept := slices.ContainsFunc(rs.recs, func(r Record) bool { return r.Key == key })
	if !kept && added {
		// Pruned at once (another record counts its server's number):
		// the log is as it was, and nothing is relayed.
		return false, nil
	}
	rs.saveRefusalsLocked()
	if kept && now != was && charged != "" && !waived && (cause || !rs.causeOf(epoch)) {
		rs.log.Info("abort on private grounds counted", "peer", charged.ShortString(), "number", ev.Number, "reason", reason)
	}
	return kept, nil
}

// certCtx is the context of n's certificate held here, if it names an
// epoch. Call with rs.mu held (the certificates' lock is taken after it).
func (rs *Log) certCtx(n uint64) (blame.Context, bool) {
	if rs.cert == nil {
		return blame.Context{}, false
	}
	c, ok := rs.cert(n)
	if !ok {
		return blame.Context{}, false
	}
	ctx, err := blame.CertContext(c)
	return ctx, err == nil
}

// sameContext reports whether a and b judge alike.
func sameContext(a, b blame.Context) bool {
	return a.Epoch == b.Epoch && a.Final == b.Final && slices.Equal(a.Chain, b.Chain)
}

// HeldCharge is the encoded evidence held here of ev's object.
func (rs *Log) HeldCharge(ev *wire.Charge) []byte {
	key := blame.ChargeKey(ev)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.recs {
		if r.Key == key {
			return r.Ev
		}
	}
	return nil
}

// Rejudge recomputes the charge of every record of number n in ctx, the
// context of n's certificate after it was replaced (a certificate of a
// higher rank): a server that certified n by an abort and then took its
// final certificate must charge what the others charge (seeds 165 and 167
// of the swarm). Evidence of another epoch than ctx's charges nobody now.
// Evidence held for the certificate (Pend) is logged. Never call with
// rs.mu held.
func (rs *Log) Rejudge(n uint64, ctx blame.Context) {
	rs.load()
	type judged struct {
		key, peer, reason string
		cause             bool
	}
	rs.mu.Lock()
	var early []wire.Charge
	if len(ctx.Chain) > 0 {
		early = rs.takePending(n, ctx.Epoch)
	}
	var evs []*wire.Charge
	for i := range rs.recs {
		var ev wire.Charge
		if r := &rs.recs[i]; r.Number == n && r.Ev != nil && ev.Unmarshal(r.Ev) == nil {
			evs = append(evs, &ev)
		}
	}
	rs.mu.Unlock()
	// Checked outside the lock: signatures.
	var out []judged
	for _, ev := range evs {
		j := judged{key: blame.ChargeKey(ev)}
		charged, reason, err := blame.ChargeOf(ev, ctx)
		if err != nil {
			j.reason = err.Error()
		} else if j.reason = reason; charged != "" {
			j.peer, j.cause = charged.String(), blame.PublicCause(ev, charged)
		}
		out = append(out, j)
	}
	rs.mu.Lock()
	changed := false
	for _, j := range out {
		for i := range rs.recs {
			if r := &rs.recs[i]; r.Key == j.key && r.Number == n && (r.Peer != j.peer || r.Cause != j.cause) {
				rs.log.Info("charge recomputed from the number's new certificate", "number", n, "was", r.Peer, "now", j.peer, "reason", j.reason)
				r.Peer, r.Reason, r.Cause, changed = j.peer, j.reason, j.cause, true
			}
		}
	}
	if changed {
		rs.prune()
		rs.saveRefusalsLocked()
	}
	rs.mu.Unlock()
	// Evidence that came before this certificate is judged now.
	for i := range early {
		if _, err := rs.LogCharge(&early[i], ctx); err != nil {
			rs.log.Debug("evidence held for its certificate refused", "number", n, "err", err)
		}
	}
}

// Equivocations is the evidence against every server that signed both
// final, a final certificate, and timeout, a timeout certificate of its
// number (the timeout's signatures not yet checked: the charge checks
// them), with each signer: one charge each (wire.EvEquiv).
func Equivocations(final, timeout *wire.Cert) ([]*wire.Charge, []peer.ID) {
	if final.Kind != wire.CertFinal || timeout.Kind != wire.CertTimeout || final.Number != timeout.Number {
		return nil, nil
	}
	pos := map[string]int{}
	for i, b := range final.Chain {
		pos[string(b)] = i
	}
	var evs []*wire.Charge
	var who []peer.ID
	for _, sg := range timeout.Sigs {
		j := int(sg.Index)
		if j >= len(timeout.Chain) {
			continue
		}
		i, ok := pos[string(timeout.Chain[j])]
		if !ok {
			continue
		}
		if ev := Equivocation(final, i, timeout, j); ev != nil {
			evs, who = append(evs, ev), append(who, peer.ID(timeout.Chain[j]))
		}
	}
	return evs, who
}

// Equivocation is the evidence that p, at position i of final's chain,
// signed final's descriptor and at position j of timeout's chain the
// timeout of its number, with sig that timeout signature.
func Equivocation(final *wire.Cert, i int, timeout *wire.Cert, j int) *wire.Charge {
	f := &wire.Cert{Kind: wire.CertFinal, Number: final.Number, Epoch: final.Epoch, Digest: final.Digest, Chain: final.Chain, Cands: final.Cands}
	for _, sg := range final.Sigs {
		if int(sg.Index) == i {
			f.Sigs = []wire.CertSig{sg}
		}
	}
	t := &wire.Cert{Kind: wire.CertTimeout, Number: timeout.Number, Chain: timeout.Chain}
	for _, sg := range timeout.Sigs {
		if int(sg.Index) == j {
			t.Sigs = []wire.CertSig{sg}
		}
	}
	if len(f.Sigs) != 1 || len(t.Sigs) != 1 {
		return nil
	}
	return &wire.Charge{Kind: wire.EvEquiv, Number: final.Number, Item: blame.EquivItem(f, t)}
}
