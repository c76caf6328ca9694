package node

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Signed relays of a part's root (docs/protocol.md §5.2, "every honest
// server holds the same parts"): a server that takes a part in time
// (blame.Dues.TakenIn) signs it and relays it at once to every chain
// server not known to hold it, with the relay signatures of the copy it
// took; a copy with k of them counts as in time k relay steps past the
// part's due (blame.Dues.RelayStep, Dolev–Strong), so that whatever one
// honest server takes in time every honest server takes in time, and
// their attestations of the round agree.

const tagRelay = "riffle/v3/rootrelay"

// relayDigest is what a relay signature signs: the part's epoch, round,
// position and root.
func relayDigest(r *wire.Root) [32]byte {
	var b [32 + 4 + 2 + 32]byte
	copy(b[:], r.Epoch[:])
	b[32], b[33], b[34], b[35] = byte(r.Round>>24), byte(r.Round>>16), byte(r.Round>>8), byte(r.Round)
	b[36], b[37] = byte(r.S>>8), byte(r.S)
	copy(b[38:], r.Root[:])
	return proto.TaggedHash(tagRelay, b[:])
}

// partCopy is what this server took of one part's copies: in, the
// earliest arrival less a relay step a signature; holders, the chain
// positions known to have taken it (relay signers, the signer); best, the
// relay signatures of the copy that gave in; sent, whether this server
// signed and relayed it. One a part held (roots), so at most R·(m − 1)
// an epoch.
type partCopy struct {
	in      time.Time
	holders uint64
	best    []wire.RelaySig
	sent    bool
}

// relayOut is one signed relay to send: the part, the signatures it
// carries before this server's, and the positions to skip.
type relayOut struct {
	r    wire.Root
	sigs []wire.RelaySig
	skip uint64
}

func (s *Server) onRootRelay(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rr wire.RootRelay
	if err := rr.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	return s.takeRoot(from, rr.Root, rr.Relays)
}

// checkRelays verifies the relay signatures of a copy of r: of distinct
// chain positions other than its signer's. Never call with s.mu held.
func checkRelays(chain []peer.ID, r *wire.Root, relays []wire.RelaySig) error {
	var seen uint64
	dg := relayDigest(r)
	for _, x := range relays {
		i := int(x.Index)
		if i >= len(chain) || i == int(r.S)-1 || seen&(1<<uint(i)) != 0 {
			return errors.New("node: a relay signature of no other chain server, or twice")
		}
		seen |= 1 << uint(i)
		if err := proto.VerifyPeerSig(chain[i], dg, x.Sig); err != nil {
			return err
		}
	}
	return nil
}

// relayTaken reports whether this server already signed and relayed
// part k with root r: a further copy of it changes nothing here. Call
// with s.mu held.
func (e *sepoch) relayTaken(k rootKey, r *wire.Root) bool {
	c := e.copies[k]
	old, ok := e.roots[k]
	return c != nil && c.sent && ok && old.Root == r.Root && old.Sig == r.Sig
}

// takeCopyLocked notes a copy of part r (held in roots) with its relay
// signatures (verified), come now, and returns the relays this server
// owes: of every part of r's round it now takes in time and has not
// relayed (its dues may have moved with this part). Call with s.mu held.
func (s *Server) takeCopyLocked(e *sepoch, r wire.Root, relays []wire.RelaySig, now time.Time) []relayOut {
	m := len(e.final.Chain)
	k := rootKey{r.Round, r.S}
	if e.copies == nil {
		e.copies = map[rootKey]*partCopy{}
	}
	c := e.copies[k]
	if c == nil {
		c = &partCopy{}
		e.copies[k] = c
	}
	c.holders |= 1 << uint(r.S-1)
	for _, x := range relays {
		c.holders |= 1 << uint(x.Index)
	}
	d := e.dues()
	in := now.Add(-time.Duration(min(len(relays), blame.Faults(m))) * d.RelayStep())
	if c.in.IsZero() || in.Before(c.in) {
		c.in, c.best = in, append([]wire.RelaySig(nil), relays...)
	}
	var out []relayOut
	rt := e.times(r.Round)
	due := d.Due(rt)
	for j := 0; j < m-1; j++ {
		pk := rootKey{r.Round, uint16(j + 1)}
		pc := e.copies[pk]
		if pc == nil || pc.sent || j == e.pos {
			continue
		}
		if d.Late(rt, due, j) {
			continue
		}
		pc.sent = true
		if len(pc.best) >= blame.Faults(m) {
			continue // an honest signer among them relayed it everywhere
		}
		out = append(out, relayOut{r: e.roots[pk], sigs: pc.best, skip: pc.holders})
	}
	return out
}

// sendRelays signs and sends each relay to every chain server but this
// one and those it skips: m − 2 messages at most a part and server, once.
// Never call with s.mu held.
func (s *Server) sendRelays(e *sepoch, outs []relayOut) {
	if s.h == nil || e.pos < 0 {
		return
	}
	v := e.final
	for _, o := range outs {
		sig, err := proto.Sign(s.priv, relayDigest(&o.r))
		if err != nil {
			continue
		}
		msg := (&wire.RootRelay{Root: o.r, Relays: append(append([]wire.RelaySig(nil), o.sigs...), wire.RelaySig{Index: uint16(e.pos), Sig: sig})}).Marshal()
		for i, p := range v.Chain {
			if i == e.pos || o.skip&(1<<uint(i)) != 0 || !s.hookRun().RootTo(o.r.Round, p, int(o.r.S) == i) {
				continue
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if _, err := transport.Call(s.ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeRootRelay, Body: msg, Timeout: transport.ShortTimeout}); err != nil {
					s.log.Debug("relay part", "round", o.r.Round, "to", p.ShortString(), "err", err)
				}
			}()
		}
	}
}
