package certs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Known is the group a certificate is verified against when this server
// holds neither the certificate before it nor founders (Group): this
// server, the live roster servers eligible by the group's rules and every
// server of a chain this server signed in the probation window. A
// certificate never makes its signers known (an outsider's own timeout
// certificate made it known again, issue 25).
func (cs *Certs) Known() map[peer.ID]bool {
	known := map[peer.ID]bool{cs.srv.Self(): true}
	for _, p := range cs.srv.GroupChain() {
		known[p] = true
	}
	for _, c := range cs.srv.SignedChains() {
		for _, p := range c {
			known[p] = true
		}
	}
	for p := range known {
		if cs.srv.Excluded(p) {
			delete(known, p)
		}
	}
	return known
}

// Group is the group certified for number n, whose signatures alone count
// for n's certificates and timeout votes: the founders for 1, the chain
// of n−1's certificate after. ok is false when it is not known here (no
// founders configured, or n−1's certificate not kept).
func (cs *Certs) Group(n uint64) (map[peer.ID]bool, bool) {
	if n <= 1 {
		f := cs.srv.Founders()
		return f, f != nil
	}
	c, ok := cs.Of(n - 1)
	if !ok {
		return nil, false
	}
	return GroupOf(c), true
}

// Check verifies c against the group certified for its number
// (proto.VerifyCertIn). Without that group here, a server with founders
// takes no certificate (it catches up from number 1, each certificate
// checked against the one before); one without founders checks c against
// the servers it knows (proto.VerifyCert), trusting its roster on first
// use.
func (cs *Certs) Check(c *wire.Cert) error {
	cs.srv.CertChecked(c)
	if g, ok := cs.Group(c.Number); ok {
		return proto.VerifyCertIn(c, g)
	}
	if cs.srv.Founders() != nil {
		return fmt.Errorf("node: certificate of %d: the certificate of %d is not here to check it against", c.Number, c.Number-1)
	}
	return proto.VerifyCert(c, cs.Known())
}

// Keep stores a verified certificate and reports whether it was new
// here: the first of its number, or one that outranks the one held
// (Outranks), which it replaces; what follows from the number's
// certificate is then recomputed (replaced).
func (cs *Certs) Keep(c *wire.Cert) bool { return cs.keep(c, false) }

// KeepMade is Keep of a certificate this server made (its final or open
// signatures, a quorum of timeout votes): it is sent to the group if it
// was new here (Push).
func (cs *Certs) KeepMade(c *wire.Cert) bool { return cs.keep(c, true) }

// Add keeps a verified certificate and moves this server's number up
// to it: it never signs an open descriptor of a certified number.
func (cs *Certs) Add(c *wire.Cert) {
	if cs.Keep(c) {
		cs.srv.RaiseNumber(c.Number)
	}
}

func (cs *Certs) keep(c *wire.Cert, made bool) bool {
	b := c.Marshal()
	cs.mu.Lock()
	var held *wire.Cert
	if old, ok := cs.certs[c.Number]; ok {
		held = new(wire.Cert)
		if held.Unmarshal(old) == nil && !Outranks(c, held) {
			cs.mu.Unlock()
			return false
		}
	}
	if c.Number+Keep <= cs.top {
		cs.mu.Unlock()
		return false
	}
	if err := cs.fitsBelowLocked(c); err != nil {
		cs.mu.Unlock()
		cs.log.Info("certificate not kept: the one below it here certifies another group", "number", c.Number, "err", err)
		return false
	}
	if err := os.MkdirAll(cs.dir, 0o700); err != nil {
		cs.mu.Unlock()
		cs.log.Error("certificate not saved", "err", err)
		return false
	}
	if err := proto.WriteFileDurably(filepath.Join(cs.dir, strconv.FormatUint(c.Number, 10)), b); err != nil {
		cs.mu.Unlock()
		cs.log.Error("certificate not saved", "err", err)
		return false
	}
	cs.certs[c.Number] = b
	var dropped []uint64
	if held == nil || !bytes.Equal(ChainKey(held.Chain), ChainKey(c.Chain)) {
		dropped = cs.dropPastLocked(c.Number)
	}
	past := c.Number > cs.top
	if past {
		cs.top = c.Number
	}
	for n := range cs.certs {
		if n+Keep <= cs.top {
			delete(cs.certs, n)
			_ = os.Remove(filepath.Join(cs.dir, strconv.FormatUint(n, 10)))
		}
	}
	var votes []*wire.Cert // the timeout votes of c's number, if it is final
	if nv := cs.votes[c.Number]; nv != nil && c.Kind == wire.CertFinal {
		for _, vs := range nv.sets {
			t := &wire.Cert{Kind: wire.CertTimeout, Number: c.Number, Chain: vs.chain}
			for i, sg := range vs.sigs {
				t.Sigs = append(t.Sigs, wire.CertSig{Index: i, Sig: sg})
			}
			sort.Slice(t.Sigs, func(i, j int) bool { return t.Sigs[i].Index < t.Sigs[j].Index })
			votes = append(votes, t)
		}
	}
	for n := range cs.votes {
		if n <= cs.top {
			delete(cs.votes, n)
		}
	}
	cs.mu.Unlock()
	if past {
		cs.srv.Certified() // an epoch went by: one this server missed may be closed (internal/catchup)
	}
	if held != nil && held.Kind == wire.CertTimeout {
		votes = append(votes, held)
	}
	if len(votes) > 0 {
		// Checked votes (OnTimeoutVote) or a verified certificate.
		cs.srv.Go(func() {
			for _, t := range votes {
				cs.srv.Equivocations(c, t)
			}
		})
	}
	// A final certificate is the epoch that every server logs as opened
	// and closed; a number that ended otherwise is worth a line.
	// What follows from the number's certificate is recomputed, also
	// for its first: evidence logged before it came was judged in the
	// epoch's own context (TestRejudgeRace).
	cs.replaced(c)
	if len(dropped) > 0 {
		cs.log.Warn("certificates past a replaced one dropped: they no longer verify against the group it certifies", "number", c.Number, "dropped", len(dropped))
		for _, n := range dropped {
			cs.srv.Rejudge(n, blame.Context{}) // no certificate: nothing of n counts
		}
		cs.PokeSync() // the group's, from the new one on
	}
	if held != nil {
		cs.log.Info("epoch number's certificate replaced", "number", c.Number, "kind", KindName(c.Kind), "was", KindName(held.Kind))
	} else if c.Kind == wire.CertFinal {
		cs.log.Debug("epoch number certified", "number", c.Number, "kind", KindName(c.Kind))
	} else {
		cs.log.Info("epoch number certified", "number", c.Number, "kind", KindName(c.Kind))
	}
	if held != nil || made {
		cs.Push(c, "", false) // so that every server keeps it (sync.go)
	}
	return true
}

// replaced recomputes what follows from the certificate of c's number
// once c replaced the one held there (Outranks), or came first: the
// charges of the number's evidence, from which the budgets, the derived
// chains and their leaders follow. (A final one over a timeout one names
// its equivocators: keep.)
func (cs *Certs) replaced(c *wire.Cert) {
	if ctx, err := blame.CertContext(c); err == nil {
		cs.srv.Rejudge(c.Number, ctx)
	}
}

// The certificates past a number (§3 "One certificate per number",
// safety). A certificate of n verifies against the group certified for n,
// the chain of n−1's certificate (Group); so the certificates kept here
// form a chain, each fitting the one below it, and one that no longer
// fits is dropped. A certificate of N replaced by one over another chain
// (a final one over a timeout one over the whole group) certifies another
// group for N+1: the certificate of N+1 held, verified against the old
// group, is checked against the new one, and when it no longer fits it
// and every one above it go, their charges with them, and the sync takes
// the group's (TestReplacedCertDropsPast: before, a server kept its N+1
// over the old group, and an honest server holding the new N certified
// another N+1; both kept their own for good).

// heldLocked decodes the certificate of n kept here. Call with cs.mu held.
func (cs *Certs) heldLocked(n uint64) *wire.Cert {
	b := cs.certs[n]
	if b == nil {
		return nil
	}
	var c wire.Cert
	if c.Unmarshal(b) != nil {
		return nil
	}
	return &c
}

// fitsBelowLocked checks c against the group the certificate of its
// number's predecessor kept here certifies (nothing to check without
// it), under the lock that stores c: c was verified before, but the one
// below may have been replaced meanwhile (its signatures still hold; the
// group may not). Call with cs.mu held.
func (cs *Certs) fitsBelowLocked(c *wire.Cert) error {
	if c.Number <= 1 {
		return nil
	}
	prev := cs.heldLocked(c.Number - 1)
	if prev == nil {
		return nil
	}
	return proto.FitsGroup(c, GroupOf(prev))
}

// dropPastLocked drops the certificates above n, here and on disk, when
// the one of n+1 no longer fits the group n's certifies, and returns their
// numbers; top goes back to n. Every certificate above n+1 was taken
// against a group that n+1's certified: none of them is certified any
// more. Call with cs.mu held, n's certificate stored.
func (cs *Certs) dropPastLocked(n uint64) []uint64 {
	next := cs.heldLocked(n + 1)
	if next == nil || cs.fitsBelowLocked(next) == nil {
		return nil
	}
	var out []uint64
	for m := range cs.certs {
		if m > n {
			out = append(out, m)
			delete(cs.certs, m)
			_ = os.Remove(filepath.Join(cs.dir, strconv.FormatUint(m, 10)))
		}
	}
	cs.top = n
	return out
}

// CheckPrevious is the certificate rule of a Prepare of n: the certificate
// of n−1 verifies against the servers known here (number 1 has none, and
// only a server with no certificate takes it). A verified certificate is
// kept.
func (cs *Certs) CheckPrevious(n uint64, c *wire.Cert) error {
	if n == 1 {
		if c.Kind != wire.CertNone {
			return errors.New("node: epoch 1 with a previous certificate")
		}
		if cs.Top() > 0 {
			return errors.New("node: epoch 1 after certified epochs")
		}
		return nil
	}
	if c.Number != n-1 {
		return fmt.Errorf("node: epoch %d with the certificate of %d", n, c.Number)
	}
	if mine, ok := cs.Of(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
		// Kept here: verified when it came.
		return nil
	}
	// Another certificate of a number certified here may be as good (a
	// timeout and an abort of one attempt), but it goes into the
	// descriptor: it must verify too, against the group certified for
	// its number.
	if c.Number > cs.Top()+1 {
		// Numbers between are missing here: fetch them meanwhile.
		cs.PokeSync()
	}
	if err := cs.PreviousOutranked(c); err != nil {
		return err
	}
	if err := cs.Check(c); err != nil {
		return err
	}
	cs.Add(c)
	return nil
}

// TakeOutranking keeps c if it outranks the certificate of its number held
// here (Outranks) and verifies: a Prepare's previous certificate is
// taken so before the Prepare's leader is checked, since the leader
// follows from the charges that the number's certificate decides.
func (cs *Certs) TakeOutranking(c *wire.Cert) {
	mine, ok := cs.Of(c.Number)
	if !ok || !Outranks(c, mine) {
		return
	}
	if err := cs.Check(c); err != nil {
		return
	}
	cs.Add(c)
}

// PreviousOutranked refuses a Prepare's previous certificate outranked by
// the one of its number held here (Outranks), so that its leader
// catches up (a refused Prepare pokes its certificate sync, which asks
// for the number it holds too) rather than the chain be derived from
// another certificate than the group's; and an abort after a final
// (AbortAfterFinal).
func (cs *Certs) PreviousOutranked(c *wire.Cert) error {
	if mine, ok := cs.Of(c.Number); ok && Outranks(mine, c) {
		return fmt.Errorf("node: previous certificate of %d of kind %s, %s here", c.Number, KindName(c.Kind), KindName(mine.Kind))
	}
	return cs.AbortAfterFinal(c)
}

// AbortAfterFinal refuses an abort certificate of a number this server
// knows went final: it keeps the number's final certificate, or holds
// the epoch's final descriptor. Any member of a final epoch's chain holds
// its open signatures and can add an abort of its own (AbortNoClose), so
// such a certificate proves nothing (an abort after a final is not
// evidence); carried as a Prepare's previous certificate or in its gap,
// it would end the walk's pin of that epoch for good (only a final
// certificate pins a record) and charge its leader at the clients.
func (cs *Certs) AbortAfterFinal(c *wire.Cert) error {
	if c.Kind != wire.CertAbort {
		return nil
	}
	if mine, ok := cs.Of(c.Number); ok && mine.Kind == wire.CertFinal {
		return fmt.Errorf("node: an abort certificate of %d, final here", c.Number)
	}
	if cs.srv.FinalHeld(c.Epoch) {
		return fmt.Errorf("node: an abort certificate of %d, whose final descriptor is here", c.Number)
	}
	return nil
}

// HoldsPrevGroup reports whether chain, proposed for number n, holds more
// than half of the chain of n−1's certificate kept here (HoldsGroup;
// true without one: the servers asked check it).
func (cs *Certs) HoldsPrevGroup(n uint64, chain []peer.ID) bool {
	if n <= 1 {
		return true
	}
	c, ok := cs.Of(n - 1)
	if !ok {
		return true
	}
	return HoldsGroup(proto.ChainIDs(chain), c)
}
