package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Certified epoch numbers (§3 (v3) "Epoch numbers and leaders") are
// package internal/certs's: the certificates kept, one a number by
// precedence, the timeout votes, the catch-up and the pushes, with their
// own lock. This file is what they ask of the server (certEnv) and the
// certificates this server makes from an epoch's signatures.

const (
	// CertDir is the directory of a data directory that holds one file
	// per certified number (the file name is the number, in decimal).
	CertDir = certs.Dir
	// EpochNumberFile holds the last epoch number in a data directory
	// (decimal, one line), written before this server signs the epoch's
	// open descriptor.
	EpochNumberFile = certs.NumberFile
)

// certEnv is what the certificates ask of the server.
type certEnv struct{ s *Server }

func (c certEnv) Self() peer.ID                     { return c.s.h.ID() }
func (c certEnv) Known(p peer.ID) bool              { return c.s.roster.get(p) != nil }
func (c certEnv) Chain() []peer.ID                  { return c.s.members.Chain() }
func (c certEnv) GroupChain() []peer.ID             { return c.s.members.Group() }
func (c certEnv) Excluded(p peer.ID) bool           { return c.s.rb.Has(p) }
func (c certEnv) LastNumber() uint64                { return c.s.lastNumber() }
func (c certEnv) Rejudge(n uint64, x blame.Context) { c.s.ref.Rejudge(n, x) }
func (c certEnv) Equivocations(final, timeout *wire.Cert) {
	c.s.noteEquivocations(final, timeout)
}
func (c certEnv) Certified()           { c.s.ix.Catch.Poke() }
func (c certEnv) Ctx() context.Context { return c.s.ctx }
func (c certEnv) Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	return transport.Call(ctx, c.s.h, p, r)
}
func (c certEnv) Each(ctx context.Context, peers []peer.ID, r transport.Request) ([][]byte, error) {
	return c.s.each(ctx, peers, r)
}
func (c certEnv) CertChecked(ct *wire.Cert)     { c.s.hookRun().CertChecked(ct) }
func (c certEnv) HideCerts() bool               { return c.s.hookRun().HideCerts() }
func (c certEnv) SyncPoked()                    { c.s.hookRun().SyncPoked() }
func (c certEnv) PushBack(to peer.ID, n uint64) { c.s.hookRun().PushBack(to, n) }

func (c certEnv) Go(f func()) {
	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		f()
	}()
}

func (c certEnv) SignedChains() [][]peer.ID  { return c.s.who.SignedChains() }
func (c certEnv) Founders() map[peer.ID]bool { return c.s.who.Founders() }

func (c certEnv) RaiseNumber(n uint64) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.raiseNumberLocked(n)
}

func (c certEnv) Running() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.s.running()
}

func (c certEnv) FinalHeld(id [32]byte) bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	e := c.s.epochs[id]
	return e != nil && e.final != nil
}

// Leader is the leader of n in the chain derived here from prev; ok is
// false when that chain is below MinServers.
func (c certEnv) Leader(n uint64, prev *wire.Cert) (peer.ID, bool) {
	mine := c.s.members.Derived(prev)
	if len(mine) < c.s.cfg.MinServers {
		return "", false
	}
	return proto.LeaderOf(n, mine), true
}

// madeCertLocked keeps a certificate made here (KeepMade: sent to the
// group when new) and moves this server's number up to it. Call with
// s.mu held.
func (s *Server) madeCertLocked(c *wire.Cert) {
	if s.cert.KeepMade(c) {
		s.raiseNumberLocked(c.Number)
	}
}

// raiseNumberLocked moves the last number to n if above, on disk first,
// and restarts the leader timeout (a number ended). Call with s.mu held.
func (s *Server) raiseNumberLocked(n uint64) {
	if n > s.number {
		if err := certs.SaveNumber(s.cfg.DataDir, n); err != nil {
			s.log.Error("epoch number not saved", "err", err)
			return
		}
		s.number = n
	}
	s.progressed()
	s.notify()
}

// certifyAbortLocked keeps the abort certificate of e, which a's signer
// ended: only for an epoch opened here (its open signatures are the
// certificate's) and not finalised (its final descriptor is). Call with
// s.mu held.
func (s *Server) certifyAbortLocked(e *sepoch, a *wire.Abort) {
	sigs := e.reg.OpenSigs()
	if e.final != nil || sigs == nil || a.Number != e.v.Desc.Number || a.Epoch != e.v.ID {
		return
	}
	c := &wire.Cert{Kind: wire.CertAbort, Number: a.Number, Epoch: e.v.ID, Chain: proto.ChainIDs(e.v.Chain), Abort: a.Marshal(), Cands: e.v.Desc.Cands}
	for i, sg := range sigs {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
	}
	s.madeCertLocked(c)
}
