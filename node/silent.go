package node

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A silent primary (docs/protocol.md §5.4): a primary that took an onion,
// signed its receipt and then answered nothing for the round. Any chain
// server asks each primary for its account of a round (wire.Account, the
// onions it receipted, with its forward root if it forwarded the round:
// accountGiven) over accountAsks round limits and then signs which
// primaries gave it none covering the receipts shown to it (an Attest of
// kind wire.AttestSilent). A server holding a shown receipt of a primary it
// attests so gathers the chain's attestations and logs the receipt with
// them (wire.EvSilent): more than half of the others attesting charges the
// primary (blame.ChargeOf), the same on every server. An honest primary
// answers every ask with every onion it receipted, so no honest server
// attests it.

// accountKey names a primary's account of a round: the round and the
// primary's chain position.
type accountKey struct {
	round uint32
	pos   int
}

// keptAccounts is what a primary answers the asks for its accounts of an
// epoch with: its chain, position, slots and receipts.
type keptAccounts struct {
	chain     []peer.ID
	pos       int
	rounds    uint32
	slots     []uint32
	endedAt   time.Time
	keep      time.Duration
	receipted map[dryKey][32]byte
	// roots: its forward roots of the rounds it holds receipts of.
	roots map[uint32]*wire.ForwardRoot
	// floor: the rounds below it may have lost receipts (receiptFloor).
	floor uint32
	// ended: the epoch ended here, so an account may be final.
	ended bool
}

// maxKeptReceipts bounds the receipts (and the slots copied with them) a
// primary keeps past its epochs' forget, over every kept epoch. Receipts go only by their keep: one
// evicted sooner turns an honest primary's answer into "not held here",
// which askers attest as silence, and short epochs (a silent client ends
// one within a minute) would otherwise push out one still asked about (the
// rev44 review). What is kept is bounded by the rounds run within a keep,
// one receipt a slot a round, and each epoch's by heldCap: the cap is a
// backstop no honest group reaches (a million onions receipted within
// accountKeep, about 40 MiB).
const maxKeptReceipts = 1 << 20

// maxKeptEpochs bounds the kept epochs themselves: an epoch's keep follows
// its own round limit, which a corrupt leader may set high, and each kept
// epoch copies its slots. Evicting one within its keep needs more than
// this many epochs with receipts ending here within one keep (14 minutes
// at the defaults), which no group reaches.
const maxKeptEpochs = 1024

// accountAsks is how many round limits a server asks a primary for its
// account before it may attest it silent, asking anew at the start of
// each. The round limit bounds a hop of the round under the model's
// delays (§3), so an honest primary's answer, an ask and its reply, takes
// at most one: attesting after one ask of one limit made one slow link
// between two honest servers, with one liar, the charge of an honest
// primary in m = 4 (the rev43 review). An account is cheap; four limits
// heard from four moments leave a link four times past the bound, or an
// ask lost or stuck on one connection, no silence.
const accountAsks = 4

// accountStartBy is how long after an epoch's end here a shown receipt
// starts the asks for its round's accounts: a client learns the end from
// its primary's answer to its poll, at the poll timeout at the latest. An
// attestation asked by another server starts them the asks' window and a
// round limit later still (the asker's own asks came first), and a
// primary keeps its receipts (accountKeep) past both, so that no receipt
// shown late has an honest primary that forgot the epoch attested (the
// rev43 review). limit is the epoch's round limit.
func accountStartBy(limit time.Duration, asked bool) time.Duration {
	if asked {
		return transport.PollTimeout + (accountAsks+2)*limit
	}
	return transport.PollTimeout + limit
}

// accountKeep is how long after its end a primary keeps an epoch's
// receipts: past the latest ask's start and the asks' window, with two
// round limits for the servers' ends apart.
func accountKeep(limit time.Duration) time.Duration {
	return accountStartBy(limit, true) + (accountAsks+2)*limit
}

// accountsHeld bounds the ended epochs forgotten while their account asks
// run (accountsBusy) whose attestations are still answered.
const accountsHeld = 4

// keepAskingLocked keeps e, forgotten, for the answers to the asks for its
// silent attestations while its account asks run (askingLocked): epochs
// end faster than the asks run where rounds are quick, and an asked server
// that forgot one answered no attestation. At most accountsHeld, pruned
// once not busy. Call with s.mu held.
func (s *Server) keepAskingLocked(e *sepoch) {
	for id, x := range s.asking {
		if !x.accountsBusy() {
			delete(s.asking, id)
		}
	}
	if len(s.asking) >= accountsHeld || !e.accountsBusy() {
		return
	}
	if s.asking == nil {
		s.asking = map[[32]byte]*sepoch{}
	}
	s.asking[e.v.ID] = e
}

// askingLocked is epoch id, forgotten while its account asks run, or nil.
// Call with s.mu held.
func (s *Server) askingLocked(id [32]byte) *sepoch {
	if e := s.asking[id]; e != nil && e.accountsBusy() {
		return e
	}
	return nil
}

// accountsBusy reports whether an ask for accounts of e, or the gathering
// after it, may still run: begun within the asks' window, an asked
// server's window and a round limit, and within accountKeep of e's end
// (an epoch ends faster than the asks run where rounds are quick). Call
// with s.mu held.
func (e *sepoch) accountsBusy() bool {
	if e.final == nil || len(e.accountAsk) == 0 {
		return false
	}
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	if time.Since(e.endedAt) > accountKeep(limit) {
		return false
	}
	for _, at := range e.accountAsk {
		if time.Since(at) < (2*accountAsks+2)*limit {
			return true
		}
	}
	return false
}

// keepAccountsLocked keeps e's receipts past its forget, at its end.
// Call with s.mu held.
func (s *Server) keepAccountsLocked(e *sepoch) {
	if e.final == nil || e.pos < 0 || len(e.receipted) == 0 {
		return
	}
	slots := e.clientsOf(e.pos)
	total := len(e.receipted) + len(slots)
	for id, k := range s.kept {
		if time.Since(k.endedAt) > k.keep {
			delete(s.kept, id)
		} else {
			total += len(k.receipted) + len(k.slots)
		}
	}
	for (total > maxKeptReceipts || len(s.kept) >= maxKeptEpochs) && len(s.kept) > 0 {
		var oldest *keptAccounts
		var oid [32]byte
		for id, k := range s.kept {
			if oldest == nil || k.endedAt.Before(oldest.endedAt) {
				oldest, oid = k, id
			}
		}
		total -= len(oldest.receipted) + len(oldest.slots)
		delete(s.kept, oid)
	}
	if s.kept == nil {
		s.kept = map[[32]byte]*keptAccounts{}
	}
	roots := map[uint32]*wire.ForwardRoot{}
	for k := range e.receipted {
		if x := e.rounds[k.round]; x != nil && x.fwdRoot != nil {
			roots[k.round] = x.fwdRoot
		}
	}
	s.kept[e.final.ID] = &keptAccounts{chain: e.final.Chain, pos: e.pos, rounds: e.final.Desc.Params.Rounds,
		slots: slots, endedAt: time.Now(), keep: accountKeep(time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond),
		receipted: maps.Clone(e.receipted), roots: roots, floor: e.receiptFloor, ended: true}
}

// accountsOfLocked is epoch id's receipts here, and its forward root of
// round r: of the epoch held, or kept past its forget. Call with s.mu
// held.
func (s *Server) accountsOfLocked(id [32]byte, r uint32) *keptAccounts {
	if e := s.epochs[id]; e != nil && e.final != nil {
		k := &keptAccounts{chain: e.final.Chain, pos: e.pos, rounds: e.final.Desc.Params.Rounds, slots: e.clientsOf(e.pos), receipted: e.receipted,
			floor: e.receiptFloor, ended: e.ended}
		if x := e.rounds[r]; x != nil && x.fwdRoot != nil {
			k.roots = map[uint32]*wire.ForwardRoot{r: x.fwdRoot}
		}
		return k
	}
	if k := s.kept[id]; k != nil && time.Since(k.endedAt) <= k.keep {
		return k
	}
	return nil
}

// onAccountReq answers a chain server's ask for this primary's account of
// a round: every onion of it receipted here, whenever asked, from the
// receipts kept past the epoch's end and its forget (keepAccountsLocked),
// and its forward root of the round if it forwarded it: an account of a
// round forwarded counts only with its root (accountGivenLocked), so
// that a primary that keeps a round from S_0 cannot give its account and
// withhold the root its receipts would be matched against (rev44 G1).
func (s *Server) onAccountReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.EpochRef
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	k := s.accountsOfLocked(q.Epoch, q.Round)
	ok := k != nil && k.pos >= 0 && proto.InChain(k.chain, from) && q.Round < k.rounds
	s.mu.Unlock()
	if !ok {
		return 0, nil, errors.New("node: an account is a chain server's to ask, of a round of an epoch held here")
	}
	if s.hookRun().DrySilent(q.Epoch, q.Round) {
		return 0, nil, errors.New("node: no answer")
	}
	if d := max(s.hookRun().ServeLate(q.Round), s.hookRun().AccountLate(from, q.Round)); d > 0 {
		select {
		case <-time.After(d):
		case <-s.ctx.Done():
			return 0, nil, s.ctx.Err()
		}
	}
	s.mu.Lock()
	// Final once the epoch ended here (no onion is taken after), of a
	// round whose receipts are all kept.
	a := wire.Account{Epoch: q.Epoch, Round: q.Round, Server: uint16(k.pos), Ended: k.ended && q.Round >= k.floor}
	for _, sl := range k.slots {
		if d, ok := k.receipted[dryKey{q.Round, sl}]; ok {
			a.Entries = append(a.Entries, wire.AccountEntry{Slot: sl, Digest: d})
		}
	}
	if f := k.roots[q.Round]; f != nil && !s.hookRun().AccountUnforwarded(q.Epoch, q.Round) {
		a.Forwarded, a.Root = true, f
	}
	s.mu.Unlock()
	sig, err := proto.Sign(s.priv, proto.AccountDigest(&a))
	if err != nil {
		return 0, nil, err
	}
	a.Sig = sig
	return wire.TypeAccount, a.Marshal(), nil
}

// accountRound reports whether this server asks the primaries for their
// accounts of round r of e: a round of the epoch with no final list here
// whose receipts it keeps (heldRound). Call with s.mu held.
func (e *sepoch) accountRound(r uint32) bool {
	if e.final == nil || e.pos < 0 || r >= e.final.Desc.Params.Rounds || !e.heldRound(r) {
		return false
	}
	x := e.rounds[r]
	return x == nil || x.list == nil
}

// startAccountsLocked starts asking the primaries for their accounts of
// round r, once a round, once e ended here and until accountStartBy
// after (asked: for another server's request): begun while the round may
// still run, the attestation, the answer ever after, would speak of
// accounts given before the onions were, and begun later a primary may no
// longer keep the epoch's receipts. Call with s.mu held.
func (s *Server) startAccountsLocked(e *sepoch, r uint32, asked bool) {
	if _, ok := e.accountAsk[r]; ok || !e.ended || !e.accountRound(r) {
		return
	}
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	if time.Since(e.endedAt) > accountStartBy(limit, asked) {
		return
	}
	if e.accountAsk == nil {
		e.accountAsk = map[uint32]time.Time{}
	}
	e.accountAsk[r] = time.Now()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.askAccounts(e, r)
	}()
}

// shownOf is the receipts of round r by the primary at chain position j
// shown here. Call with s.mu held.
func (e *sepoch) shownOf(r uint32, j int) []wire.OnionReceipt {
	var out []wire.OnionReceipt
	for k, rc := range e.shown {
		if k.round == r && int(rc.Server) == j {
			out = append(out, rc)
		}
	}
	return out
}

// primariesOf is the chain positions of e other than this server's that
// serve a slot. Call with s.mu held.
func (e *sepoch) primariesOf() []int {
	var out []int
	for j := range e.final.Chain {
		if j != e.pos && len(e.clientsOf(j)) > 0 {
			out = append(out, j)
		}
	}
	return out
}

// askAccounts asks every other primary for its account of round r for
// accountAsks round limits (askAccount); then it signs which gave none
// covering the receipts shown here (wire.AttestSilent) and gathers the
// chain's attestations against each of those of which a receipt is held
// here. Without s.mu.
func (s *Server) askAccounts(e *sepoch, r uint32) {
	s.mu.Lock()
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	end := e.accountAsk[r].Add(accountAsks * limit)
	ps := e.primariesOf()
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.askAccount(e, r, j, end)
		}()
	}
	wg.Wait()
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	var bits uint64
	for _, j := range ps {
		if j < 64 && (!e.accounted[accountKey{r, j}] || s.hookRun().SilentAll(r)) {
			bits |= 1 << uint(j)
		}
	}
	own := s.signAttestLocked(e, wire.AttestSilent, r, bits)
	if own == nil {
		s.mu.Unlock()
		return
	}
	if e.silentAttest == nil {
		e.silentAttest = map[uint32]*wire.Attest{}
	}
	e.silentAttest[r] = own
	held := map[uint16]wire.OnionReceipt{}
	for k, rc := range e.shown {
		if k.round == r && rc.Server < 64 && bits&(1<<uint(rc.Server)) != 0 {
			if old, ok := held[rc.Server]; !ok || rc.Slot < old.Slot {
				held[rc.Server] = rc
			}
		}
	}
	s.mu.Unlock()
	for _, rc := range held {
		s.gatherSilent(e, rc, own)
	}
}

// askAccount asks the primary at chain position j for its account of
// round r until one covers every receipt of it shown here when it was
// asked, or until end: a new ask starts each round limit, and every ask
// stays open until end, so that a primary whose answer to any of them
// comes by end is heard however slow, and an ask lost or stuck on one
// connection is not the last (at most accountAsks open at once). A
// receipt shown after an ask is not held against its answer: an honest
// primary's covers every receipt it signed before it answered, and a
// client showing one at the last moment would otherwise have it attested.
// Without s.mu.
func (s *Server) askAccount(e *sepoch, r uint32, j int, end time.Time) {
	s.mu.Lock()
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	s.mu.Unlock()
	ctx, cancel := context.WithDeadline(s.ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	for i := range accountAsks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i) * limit):
			}
			if s.askAccountFrom(ctx, e, r, j, end) {
				cancel()
			}
		}()
	}
	wg.Wait()
}

// askAccountFrom is one of askAccount's asks: it asks until an account
// covers the receipts shown here and counts (accountGiven), each ask open until end and asked again
// an eighth of a round limit after one that fails or does not cover them,
// and reports whether one did. Without s.mu.
func (s *Server) askAccountFrom(ctx context.Context, e *sepoch, r uint32, j int, end time.Time) bool {
	s.mu.Lock()
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	chain, id := e.final.Chain, e.final.ID
	lim := proto.LimitsFor(e.final.Desc.Params, len(chain))
	s.mu.Unlock()
	every := max(limit/8, 50*time.Millisecond)
	q := (&wire.EpochRef{Epoch: id, Round: r}).Marshal()
	for wait := time.Until(end); wait > 0 && ctx.Err() == nil; wait = time.Until(end) {
		s.mu.Lock()
		want := e.shownOf(r, j)
		s.mu.Unlock()
		rep, err := transport.Call(ctx, s.h, chain[j], transport.Request{Proto: ProtoRound, Type: wire.TypeAccountReq, Body: q, Timeout: wait})
		var a wire.Account
		if err == nil && a.Unmarshal(rep, lim) == nil && int(a.Server) == j && proto.CheckAccount(&a, id, r, chain) == nil &&
			s.accountGiven(e, &a, r, j, want) {
			s.mu.Lock()
			if e.accounted == nil {
				e.accounted = map[accountKey]bool{}
			}
			e.accounted[accountKey{r, j}] = true
			s.mu.Unlock()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(every, max(time.Until(end), 0))):
		}
	}
	return false
}

// silentAttestLocked is this server's signed attestation of which
// primaries gave it no account of round r, the answer ever after; nil
// until its asks are over (askAccounts), which another server's request
// starts once e ended here. Call with s.mu held.
func (s *Server) silentAttestLocked(e *sepoch, r uint32) *wire.Attest {
	if a := e.silentAttest[r]; a != nil {
		return a
	}
	s.startAccountsLocked(e, r, true)
	return nil
}

// gatherSilent asks the chain's other servers but rc's primary for their
// attestations of rc's round until more than half of them back the
// primary's silence, or the asks' window (which an asked server starts
// only then) and a round limit pass, and logs rc with them
// (wire.EvSilent) and relays it: unbacked, it charges nobody until
// attestations that back it come. Never call with s.mu held.
func (s *Server) gatherSilent(e *sepoch, rc wire.OnionReceipt, own *wire.Attest) {
	s.mu.Lock()
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	p, m := e.final.Chain[rc.Server], len(e.final.Chain)
	s.mu.Unlock()
	deadline := time.Now().Add((accountAsks+1)*limit + s.cfg.Timing.AbortSettle)
	ev := &wire.Charge{Kind: wire.EvSilent, Number: own.Number, Item: rc.Marshal(), Attests: []wire.Attest{*own}}
	for !backedAgainst(ev, m, int(rc.Server)) && time.Now().Before(deadline) {
		blame.MergeAttests(ev, s.askAttests(e, wire.AttestSilent, rc.Round, p))
		if backedAgainst(ev, m, int(rc.Server)) {
			break
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(max(limit/4, 100*time.Millisecond)):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if backedAgainst(ev, m, int(rc.Server)) {
		s.log.Warn("a primary gave no account of an onion it receipted", "round", rc.Round, "slot", rc.Slot, "primary", p.ShortString())
	}
	s.noteChargeLocked(e, ev, nil, "")
}
