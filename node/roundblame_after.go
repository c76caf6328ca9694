package node

import (
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/internal/strikes"
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
		// The long-term key (internal/evidence): published by the
		// slot's primary, excluded everywhere it is checked.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.evs().ClientNamed(evEp(e), c.Slot)
		}()
	}
}

// noteDouble: two different submissions of one slot (intake.go), named
// once (roundblame.Service.NoteDouble). Call with s.mu held.
func (s *Server) noteDouble(e *sepoch, a, b *wire.Submit) { s.walks().NoteDouble(blameEp(e), a, b) }

// noteBadBatch: server t's signed batch of round r of the wrong shape
// (mixing.go), named once an epoch (roundblame.Service.NoteBadBatch).
// Call with s.mu held.
func (s *Server) noteBadBatch(e *sepoch, t int, r uint32, body []byte) {
	s.walks().NoteBadBatch(blameEp(e), t, r, body)
}
