package node

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Catching up on certified epoch numbers (§3 (v3)): a server that
// restarted or was away asks roster servers for the certificates from
// certRecheck below its last one, page by page, takes each new one that
// verifies (certs.go) and each that outranks its own.

// onCertReq serves a roster server's request for the kept certificates
// from a number on: one page, oldest first.
func (s *Server) onCertReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var r wire.CertReq
	if err := r.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: certificates only for roster servers")
	}
	if s.hookHideCerts() {
		return wire.TypeCerts, (&wire.Certs{}).Marshal(), nil
	}
	s.cert.mu.Lock()
	var nums []uint64
	for n := range s.cert.certs {
		if n >= r.From {
			nums = append(nums, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var page wire.Certs
	for _, n := range nums[:min(len(nums), wire.MaxCertPage)] {
		var c wire.Cert
		if c.Unmarshal(s.cert.certs[n]) == nil {
			page.Certs = append(page.Certs, c)
		}
	}
	s.cert.mu.Unlock()
	return wire.TypeCerts, page.Marshal(), nil
}

// pokeSync asks the certificate loop for a catch-up now.
func (cs *certState) pokeSync() {
	select {
	case cs.poke <- struct{}{}:
	default:
	}
}

// certLoop catches up from roster servers' certificates at start (as soon
// as one answers), when poked (a refused Prepare, a vote or certificate
// ahead) and every CertSyncEvery while no epoch runs here.
func (s *Server) certLoop(ctx context.Context) {
	asked := false
	for {
		every := s.cfg.Timing.CertSyncEvery
		if !asked {
			every = s.cfg.Timing.CertSyncStart
		}
		select {
		case <-ctx.Done():
			return
		case <-s.cert.poke:
		case <-time.After(every):
			s.mu.Lock()
			run := s.running()
			s.mu.Unlock()
			if run && asked {
				continue
			}
		}
		asked = s.syncCerts(ctx) || asked
	}
}

// syncCerts asks roster servers, one after the other until one has any,
// for the certificates after this server's last, verifies them and moves
// its number: each certificate after the first of a catch-up must be of
// the number after the one before (a chain), and the first stays within
// the bounds of checkEpochNumber above this server's last number. It
// reports whether a roster server answered.
func (s *Server) syncCerts(ctx context.Context) bool {
	var peers []peer.ID
	for _, p := range s.chain() {
		if p != s.h.ID() {
			peers = append(peers, p)
		}
	}
	if len(peers) == 0 {
		return false
	}
	s.cert.mu.Lock()
	s.cert.ask++
	start := s.cert.ask
	s.cert.mu.Unlock()
	answered := false
	for i := range min(len(peers), 3) {
		p := peers[(start+i)%len(peers)]
		got, ok, _ := s.syncFrom(ctx, p)
		answered = answered || ok
		if got {
			break
		}
	}
	return answered
}

// syncFrom catches up from p; it reports whether p had any certificate
// past this server's last, whether it answered, and whether this server
// took every certificate p had past its last (caught up with p).
func (s *Server) syncFrom(ctx context.Context, p peer.ID) (got, answered, whole bool) {
	first := true
	for range maxSyncPages {
		top := s.cert.certTop()
		ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
		// From certRecheck numbers below the last held, whose
		// certificates the peer's may outrank (certOutranks): a server
		// that certified one by an abort, or was away when the better
		// one was sent to the group (pushCert), takes the final one the
		// others hold, and one that holds a better one sends it.
		from := uint64(1)
		if top > certRecheck {
			from = top - certRecheck
		}
		rep, err := transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: from}).Marshal(), Timeout: transport.ShortTimeout})
		cancel()
		if err != nil {
			s.log.Debug("certificates not fetched", "peer", p.ShortString(), "err", err)
			return got, answered, false
		}
		answered = true
		var page wire.Certs
		if err := page.Unmarshal(rep); err != nil {
			s.log.Warn("certificates malformed", "peer", p.ShortString(), "err", err)
			return got, answered, false
		}
		if len(page.Certs) == 0 {
			return got, answered, true
		}
		for i := range page.Certs {
			c := &page.Certs[i]
			if c.Number <= top {
				mine, ok := s.cert.certOf(c.Number)
				if ok && certOutranks(c, mine) && s.checkCert(c) == nil && s.keepCert(c) {
					got = true
				} else if ok && certOutranks(mine, c) {
					s.pushCert(mine, p, true)
				}
				continue
			}
			if first {
				if err := checkEpochNumber(s.lastNumber(), c.Number); c.Number != top+1 && err != nil {
					s.log.Warn("certificate out of bounds", "peer", p.ShortString(), "err", err)
					return got, answered, false
				}
			} else if c.Number != top+1 {
				s.log.Warn("certificates not a chain", "peer", p.ShortString(), "number", c.Number, "after", top)
				return got, answered, false
			}
			// Each against the group certified for its number: the
			// chain of the one before, once kept.
			if err := s.checkCert(c); err != nil {
				s.log.Warn("certificate refused", "peer", p.ShortString(), "err", err)
				return got, answered, false
			}
			s.addCert(c)
			top, first, got = c.Number, false, true
		}
		if len(page.Certs) < wire.MaxCertPage {
			return got, answered, true
		}
	}
	return got, answered, false
}

// Every server keeps the same certificate of a number (§3 "One
// certificate per number"): the rule (certOutranks) decides between any
// two, and a certificate that decides must reach every server. A server
// that replaces the certificate of a number sends the new one to the
// group's live servers, and one that finds a peer holding a certificate
// its own outranks (a sync page, a Prepare's previous certificate) sends
// its own to that peer: a better certificate shown to one server (a
// leader that held its final descriptor back, aborted and showed the
// final certificate once numbers past it were certified) reaches every
// honest server within the relay's delays, and they all recompute the
// number's charges alike (TestWithheldFinalShownToOne).

// maxPushBacks bounds the push-backs in flight to one peer: a sync page's
// worth of numbers (certRecheck). One dropped is no loss: the peer's sync
// asks that far back and takes the better certificate.
const maxPushBacks = certRecheck

// pushCert sends c to the group's live servers but skip (a replacement
// here), or to skip alone when only is set (its holder's is outranked):
// then at most one push of a number to a peer is in flight, and
// maxPushBacks to a peer (a push-back costs a call of up to ShortTimeout
// that the handlers' limits do not count). Safe with s.mu held: it runs
// in the background.
func (s *Server) pushCert(c *wire.Cert, to peer.ID, only bool) {
	if s.hookHideCerts() {
		return
	}
	if only && !s.cert.startPushBack(to, c.Number) {
		return
	}
	body := c.Marshal()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var peers []peer.ID
		if only {
			defer s.cert.endPushBack(to, c.Number)
			s.hookPushBack(to, c.Number)
			peers = []peer.ID{to}
		} else {
			for _, p := range s.chain() {
				if p != s.h.ID() && p != to {
					peers = append(peers, p)
				}
			}
		}
		if len(peers) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, transport.ShortTimeout)
		defer cancel()
		_, _ = s.each(ctx, peers, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCertPush, Body: body, Timeout: transport.ShortTimeout})
	}()
}

// startPushBack reports whether a push-back of n to p may start, and
// records it in flight: none of n to p is, and fewer than maxPushBacks
// to p.
func (cs *certState) startPushBack(p peer.ID, n uint64) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	m := cs.backs[p]
	if m[n] || len(m) >= maxPushBacks {
		return false
	}
	if m == nil {
		if cs.backs == nil {
			cs.backs = map[peer.ID]map[uint64]bool{}
		}
		m = map[uint64]bool{}
		cs.backs[p] = m
	}
	m[n] = true
	return true
}

// endPushBack removes a push-back of n to p, and p's entry once empty.
func (cs *certState) endPushBack(p peer.ID, n uint64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.backs[p], n)
	if len(cs.backs[p]) == 0 {
		delete(cs.backs, p)
	}
}

// onCertPush takes a roster server's certificate of a number certified
// here when it outranks the one held (certOutranks) and verifies; nothing
// is stored otherwise. One the held certificate outranks goes back to the
// sender, and one of a number ahead pokes the certificate sync, each only
// once it verifies: a forged one of either cost a push-back or a sync
// (TestForgedPushCostsNothing).
func (s *Server) onCertPush(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var c wire.Cert
	if err := c.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: certificates only from roster servers")
	}
	top := s.cert.certTop()
	mine, ok := s.cert.certOf(c.Number)
	switch {
	case !ok && c.Number == top+1:
		// The next number: as the sync would take it.
	case !ok:
		if c.Number > top {
			if err := s.checkCertAhead(&c); err != nil {
				return 0, nil, err
			}
			s.hookSyncPoked()
			s.cert.pokeSync()
		}
		return wire.TypeAck, ack, nil
	case certOutranks(mine, &c):
		if err := s.checkCert(&c); err != nil {
			return 0, nil, err
		}
		s.pushCert(mine, from, true)
		return wire.TypeAck, ack, nil
	case !certOutranks(&c, mine):
		return wire.TypeAck, ack, nil
	}
	if err := s.checkCert(&c); err != nil {
		return 0, nil, err
	}
	s.addCert(&c)
	return wire.TypeAck, ack, nil
}

// checkCertAhead verifies c, of a number past the one after this
// server's last, whose group is not known here: against the newest group
// certified here (that of the number after the last), else as checkCert
// does without one. It only decides whether to catch up now; the sync
// checks each certificate against its own group.
func (s *Server) checkCertAhead(c *wire.Cert) error {
	if g, ok := s.certGroup(s.cert.certTop() + 1); ok {
		return proto.VerifyCertIn(c, g)
	}
	return s.checkCert(c)
}

// outrankedFrom is previousOutranked of c, a certificate from showed (a
// Prepare's previous one or one of its gap): one the certificate held
// here outranks is refused, and the one held here goes to from.
func (s *Server) outrankedFrom(c *wire.Cert, from peer.ID) error {
	if mine, ok := s.cert.certOf(c.Number); ok && certOutranks(mine, c) {
		s.pushCert(mine, from, true)
	}
	return s.previousOutranked(c)
}

// takeOutrankingFrom is takeOutranking of the previous certificate of a
// Prepare of n from from, only when from leads n in the chain derived
// here from that certificate (the leader check that follows): a forged
// outranking certificate in any chain server's Prepare cost its m
// signature checks before the leader check refused it
// (TestForgedOutrankingFromNonLeader). One the number's leader carries is
// checked and taken, and the leader checked again under the charges it
// decides.
func (s *Server) takeOutrankingFrom(n uint64, c *wire.Cert, from peer.ID) {
	if mine := s.derivedChain(c); len(mine) >= s.cfg.MinServers && proto.LeaderOf(n, mine) != from {
		return
	}
	s.takeOutranking(c)
}
