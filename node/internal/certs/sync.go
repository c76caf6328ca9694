package certs

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Catching up on certified epoch numbers (§3 (v3)): a server that
// restarted or was away asks roster servers for the certificates from
// Recheck below its last one, page by page, takes each new one that
// verifies (keep.go) and each that outranks its own.

// ack is the empty acknowledgement.
var ack = []byte{}

// OnCertReq serves a roster server's request for the kept certificates
// from a number on: one page, oldest first.
func (cs *Certs) OnCertReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var r wire.CertReq
	if err := r.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if !cs.srv.Known(from) {
		return 0, nil, errors.New("node: certificates only for roster servers")
	}
	if cs.srv.HideCerts() {
		return wire.TypeCerts, (&wire.Certs{}).Marshal(), nil
	}
	return wire.TypeCerts, cs.page(r.From).Marshal(), nil
}

// Loop catches up from roster servers' certificates at start (as soon
// as one answers), when poked (a refused Prepare, a vote or certificate
// ahead) and every CertSyncEvery while no epoch runs here.
func (cs *Certs) Loop(ctx context.Context) {
	asked := false
	for {
		every := cs.every
		if !asked {
			every = cs.start
		}
		select {
		case <-ctx.Done():
			return
		case <-cs.poke:
		case <-time.After(every):
			if cs.srv.Running() && asked {
				continue
			}
		}
		asked = cs.Sync(ctx) || asked
	}
}

// Sync asks roster servers, one after the other until one has any, for
// the certificates after this server's last, verifies them and moves its
// number: each certificate after the first of a catch-up must be of the
// number after the one before (a chain), and the first stays within the
// bounds of CheckNumber above this server's last number. It reports
// whether a roster server answered.
func (cs *Certs) Sync(ctx context.Context) bool {
	var peers []peer.ID
	for _, p := range cs.srv.Chain() {
		if p != cs.srv.Self() {
			peers = append(peers, p)
		}
	}
	if len(peers) == 0 {
		return false
	}
	cs.mu.Lock()
	cs.ask++
	start := cs.ask
	cs.mu.Unlock()
	answered := false
	for i := range min(len(peers), 3) {
		p := peers[(start+i)%len(peers)]
		got, ok, _ := cs.SyncFrom(ctx, p)
		answered = answered || ok
		if got {
			break
		}
	}
	return answered
}

// SyncFrom catches up from p; it reports whether p had any certificate
// past this server's last, whether it answered, and whether this server
// took every certificate p had past its last (caught up with p).
func (cs *Certs) SyncFrom(ctx context.Context, p peer.ID) (got, answered, whole bool) {
	first := true
	for range maxSyncPages {
		top := cs.Top()
		ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
		// From Recheck numbers below the last held, whose
		// certificates the peer's may outrank (Outranks): a server
		// that certified one by an abort, or was away when the better
		// one was sent to the group (Push), takes the final one the
		// others hold, and one that holds a better one sends it.
		from := uint64(1)
		if top > Recheck {
			from = top - Recheck
		}
		rep, err := cs.srv.Call(ctx, p, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: from}).Marshal(), Timeout: transport.ShortTimeout})
		cancel()
		if err != nil {
			cs.log.Debug("certificates not fetched", "peer", p.ShortString(), "err", err)
			return got, answered, false
		}
		answered = true
		var page wire.Certs
		if err := page.Unmarshal(rep); err != nil {
			cs.log.Warn("certificates malformed", "peer", p.ShortString(), "err", err)
			return got, answered, false
		}
		if len(page.Certs) == 0 {
			return got, answered, true
		}
		for i := range page.Certs {
			c := &page.Certs[i]
			if c.Number <= top {
				mine, ok := cs.Of(c.Number)
				if ok && Outranks(c, mine) && cs.Check(c) == nil && cs.Keep(c) {
					got = true
				} else if ok && Outranks(mine, c) {
					cs.Push(mine, p, true)
				}
				continue
			}
			if first {
				if err := CheckNumber(cs.srv.LastNumber(), c.Number); c.Number != top+1 && err != nil {
					cs.log.Warn("certificate out of bounds", "peer", p.ShortString(), "err", err)
					return got, answered, false
				}
			} else if c.Number != top+1 {
				cs.log.Warn("certificates not a chain", "peer", p.ShortString(), "number", c.Number, "after", top)
				return got, answered, false
			}
			// Each against the group certified for its number: the
			// chain of the one before, once kept.
			if err := cs.Check(c); err != nil {
				cs.log.Warn("certificate refused", "peer", p.ShortString(), "err", err)
				return got, answered, false
			}
			cs.Add(c)
			top, first, got = c.Number, false, true
		}
		if len(page.Certs) < wire.MaxCertPage {
			return got, answered, true
		}
	}
	return got, answered, false
}

// Every server keeps the same certificate of a number (§3 "One
// certificate per number"): the rule (Outranks) decides between any
// two, and a certificate that decides must reach every server. A server
// that replaces the certificate of a number sends the new one to the
// group's live servers, and one that finds a peer holding a certificate
// its own outranks (a sync page, a Prepare's previous certificate) sends
// its own to that peer: a better certificate shown to one server (a
// leader that held its final descriptor back, aborted and showed the
// final certificate once numbers past it were certified) reaches every
// honest server within the relay's delays, and they all recompute the
// number's charges alike (TestWithheldFinalShownToOne).

// Push sends c to the group's live servers but skip (a replacement
// here), or to skip alone when only is set (its holder's is outranked):
// then at most one push of a number to a peer is in flight, and
// MaxPushBacks to a peer (a push-back costs a call of up to ShortTimeout
// that the handlers' limits do not count). It runs in the background.
func (cs *Certs) Push(c *wire.Cert, to peer.ID, only bool) {
	if cs.srv.HideCerts() {
		return
	}
	if only && !cs.startPushBack(to, c.Number) {
		return
	}
	body := c.Marshal()
	cs.srv.Go(func() {
		var peers []peer.ID
		if only {
			defer cs.endPushBack(to, c.Number)
			cs.srv.PushBack(to, c.Number)
			peers = []peer.ID{to}
		} else {
			for _, p := range cs.srv.Chain() {
				if p != cs.srv.Self() && p != to {
					peers = append(peers, p)
				}
			}
		}
		if len(peers) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(cs.srv.Ctx(), transport.ShortTimeout)
		defer cancel()
		_, _ = cs.srv.Each(ctx, peers, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeCertPush, Body: body, Timeout: transport.ShortTimeout})
	})
}

// OnCertPush takes a roster server's certificate of a number certified
// here when it outranks the one held (Outranks) and verifies; nothing
// is stored otherwise. One the held certificate outranks goes back to the
// sender, and one of a number ahead pokes the certificate sync, each only
// once it verifies: a forged one of either cost a push-back or a sync
// (TestForgedPushCostsNothing).
func (cs *Certs) OnCertPush(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var c wire.Cert
	if err := c.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if !cs.srv.Known(from) {
		return 0, nil, errors.New("node: certificates only from roster servers")
	}
	top := cs.Top()
	mine, ok := cs.Of(c.Number)
	switch {
	case !ok && c.Number == top+1:
		// The next number: as the sync would take it.
	case !ok:
		if c.Number > top {
			if err := cs.checkAhead(&c); err != nil {
				return 0, nil, err
			}
			cs.srv.SyncPoked()
			cs.PokeSync()
		}
		return wire.TypeAck, ack, nil
	case Outranks(mine, &c):
		if err := cs.Check(&c); err != nil {
			return 0, nil, err
		}
		cs.Push(mine, from, true)
		return wire.TypeAck, ack, nil
	case !Outranks(&c, mine):
		return wire.TypeAck, ack, nil
	}
	if err := cs.Check(&c); err != nil {
		return 0, nil, err
	}
	cs.Add(&c)
	return wire.TypeAck, ack, nil
}

// checkAhead verifies c, of a number past the one after this server's
// last, whose group is not known here: against the newest group
// certified here (that of the number after the last), else as Check
// does without one. It only decides whether to catch up now; the sync
// checks each certificate against its own group.
func (cs *Certs) checkAhead(c *wire.Cert) error {
	if g, ok := cs.Group(cs.Top() + 1); ok {
		return proto.VerifyCertIn(c, g)
	}
	return cs.Check(c)
}

// OutrankedFrom is PreviousOutranked of c, a certificate from showed (a
// Prepare's previous one or one of its gap): one the certificate held
// here outranks is refused, and the one held here goes to from.
func (cs *Certs) OutrankedFrom(c *wire.Cert, from peer.ID) error {
	if mine, ok := cs.Of(c.Number); ok && Outranks(mine, c) {
		cs.Push(mine, from, true)
	}
	return cs.PreviousOutranked(c)
}

// TakeOutrankingFrom is TakeOutranking of the previous certificate of a
// Prepare of n from from, only when from leads n in the chain derived
// here from that certificate (the leader check that follows): a forged
// outranking certificate in any chain server's Prepare cost its m
// signature checks before the leader check refused it
// (TestForgedOutrankingFromNonLeader). One the number's leader carries is
// checked and taken, and the leader checked again under the charges it
// decides.
func (cs *Certs) TakeOutrankingFrom(n uint64, c *wire.Cert, from peer.ID) {
	if leader, ok := cs.srv.Leader(n, c); ok && leader != from {
		return
	}
	cs.TakeOutranking(c)
}
