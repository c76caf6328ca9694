package node

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Catching up on certified epoch numbers (§3 (v3)): a server that
// restarted or was away asks roster servers for the certificates after
// its last one, page by page, and takes each that verifies (certs.go).

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
		ctx, cancel := context.WithTimeout(ctx, shortTimeout)
		// From the last number held, whose certificate the peer's may
		// outrank (certOutranks): a server that certified it by an abort
		// takes the final one the others hold.
		rep, err := call(ctx, s.h, p, request{Proto: ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: max(top, 1)}).Marshal(), Timeout: shortTimeout})
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
			if c.Number < top {
				continue
			}
			if c.Number == top {
				if mine, ok := s.cert.certOf(top); ok && certOutranks(c, mine) && s.checkCert(c) == nil && s.keepCert(c) {
					got = true
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
