// Package certs is a server's certified epoch numbers (docs/protocol.md
// §3 (v3) "Epoch numbers and leaders", "One certificate per number";
// docs/proto-node.md "Certified epoch numbers"): the certificates it
// keeps, one a number by precedence (Outranks), each verified against the
// group the one below it certifies; the timeout votes it holds and the
// timeout certificates a quorum of them makes; the catch-up from roster
// servers (Sync) and the pushes that bring a better certificate to every
// server; and the bounds on a proposed epoch number (CheckNumber).
//
// Every setup attempt of a number N ends in a certificate signed by servers:
//
//   - final: every chain server's signature of N's final descriptor;
//   - abort: every chain server's signature of N's open descriptor, with
//     the signed Abort of one of them;
//   - timeout: more than half of the servers of a group chain C, other than
//     N's leader in C, each signed that no open descriptor of N came
//     within T_lead.
//
// The Prepare and the descriptor of N carry the certificate of N−1, and a
// server prepares N only when it verifies against the group certified
// here (Check). A server that restarted or was away asks roster servers
// for the certificates from Recheck below its last (Sync) and moves its
// number along the verified chain. Certificates are kept in the data
// directory (Dir), the newest Keep of them.
//
// Certs has its own lock, never held with the server's nor across a
// call to the server or the network (it is held across the write of a
// certificate's file). What it asks of the server (the roster, the
// group's rules, the number signed, the charges, the network) is Server.
//
//   - certs.go: the state, its reads, the tests' accessors.
//   - rules.go: the precedence, the groups, the epoch number's bounds and
//     file; pure functions.
//   - keep.go: the checks and the keeping of a certificate, and what
//     follows from it (the charges of its number, the ones past it).
//   - sync.go: the catch-up, the pushes, the Prepare's certificates.
//   - votes.go: timeout votes taken and counted.
package certs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/transport"
)

const (
	// Dir is the directory of a data directory that holds one file
	// per certified number (the file name is the number, in decimal).
	Dir = "certs"
	// Keep is how many certificates a server keeps: the window a
	// server away for longer than it catches up from (at 30 s an epoch,
	// over 8 hours).
	Keep = 1024
	// maxVoters bounds the signers whose votes are kept per number, one
	// vote each (its latest): servers whose rosters disagree sign
	// different chains, and a hostile one cannot crowd out the others'.
	maxVoters = wire.MaxServers
	// maxSyncPages bounds the pages one catch-up reads (then the next one
	// goes on).
	maxSyncPages = 8
	// Recheck is how far below its last number a server's sync asks
	// again, for certificates that outrank its own (sync.go): the
	// depth at which charges still leave a server out (2·m_max numbers,
	// m_max = 8).
	Recheck = 2 * 8
	// MaxPushBacks bounds the push-backs in flight to one peer: a sync
	// page's worth of numbers (Recheck). One dropped is no loss: the
	// peer's sync asks that far back and takes the better certificate.
	MaxPushBacks = Recheck
)

// Server is what the certificates ask of the server they run in. None of
// its methods is called with the certificates' lock held.
type Server interface {
	Self() peer.ID
	// Known reports whether p is on the roster.
	Known(p peer.ID) bool
	// Chain is the live servers in chain order, this one included;
	// GroupChain those of them eligible by the group's rules.
	Chain() []peer.ID
	GroupChain() []peer.ID
	// SignedChains is the chains this server signed in the probation
	// window.
	SignedChains() [][]peer.ID
	// Founders is the group's founders (nil: none configured).
	Founders() map[peer.ID]bool
	// Excluded reports whether a round blame named server p.
	Excluded(p peer.ID) bool
	// LastNumber is this server's epoch number; RaiseNumber moves it
	// up to n (it never signs an open descriptor of a certified number).
	LastNumber() uint64
	RaiseNumber(n uint64)
	// Running reports whether an epoch runs here.
	Running() bool
	// FinalHeld reports whether the final descriptor of epoch id is here.
	FinalHeld(id [32]byte) bool
	// Leader is the leader of n in the chain derived here from prev,
	// the certificate of n−1 (ok false when that chain is short).
	Leader(n uint64, prev *wire.Cert) (peer.ID, bool)
	// Rejudge recomputes the charges of number n in ctx.
	Rejudge(n uint64, ctx blame.Context)
	// Equivocations charges the servers that signed both final and
	// timeout, two certificates of one number.
	Equivocations(final, timeout *wire.Cert)
	// Certified says a number past the last one was certified.
	Certified()
	// Go runs f in the background, counted in the server's life.
	Go(f func())
	// Ctx ends with the server.
	Ctx() context.Context
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	Each(ctx context.Context, peers []peer.ID, r transport.Request) ([][]byte, error)
	// The tests' hook points (empty in the binary).
	CertChecked(c *wire.Cert)
	HideCerts() bool
	SyncPoked()
	PushBack(to peer.ID, n uint64)
}

// Certs is a server's certificates and the timeout votes it holds.
type Certs struct {
	srv Server
	dir string // the data directory's Dir
	log *slog.Logger
	// every and start are Tunables.CertSyncEvery and CertSyncStart.
	every, start time.Duration

	mu    sync.Mutex
	top   uint64            // the highest certified number
	certs map[uint64][]byte // encoded certificates, the newest Keep
	votes map[uint64]*numVotes
	poke  chan struct{}
	ask   int // rotates the roster server asked
	// backs is the push-backs in flight, by peer and number (Push).
	backs map[peer.ID]map[uint64]bool
	// index is who each kept certificate names (Roles), built once per
	// encoding stored; at most one entry more than certs.
	index map[uint64]*named
}

// named is who a certificate's encoding b names: its chain and its
// candidates.
type named struct {
	b            []byte
	chain, cands map[peer.ID]bool
}

// Init sets what the certificates run with and the ones kept in dataDir
// (Load).
func (cs *Certs) Init(srv Server, dataDir string, log *slog.Logger, every, start time.Duration, kept map[uint64][]byte, top uint64) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cs.srv, cs.dir, cs.log, cs.every, cs.start = srv, filepath.Join(dataDir, Dir), log, every, start
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.certs, cs.top, cs.poke = kept, top, make(chan struct{}, 1)
	if cs.certs == nil {
		cs.certs = map[uint64][]byte{}
	}
}

// Load reads the certificates of dataDir (the newest Keep).
func Load(dataDir string) (map[uint64][]byte, uint64, error) {
	out := map[uint64][]byte{}
	ents, err := os.ReadDir(filepath.Join(dataDir, Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return out, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("node: read certificates: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		if n, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && n > 0 {
			nums = append(nums, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	var top uint64
	for _, n := range nums[:min(len(nums), Keep)] {
		path := filepath.Join(dataDir, Dir, strconv.FormatUint(n, 10))
		if fi, err := os.Stat(path); err != nil || fi.Size() > wire.MaxCertSize {
			continue
		}
		b, err := os.ReadFile(path)
		var c wire.Cert
		if err != nil || c.Unmarshal(b) != nil || c.Number != n {
			continue
		}
		out[n] = b
		top = max(top, n)
	}
	return out, top, nil
}

// Of returns the kept certificate of n.
func (cs *Certs) Of(n uint64) (*wire.Cert, bool) {
	cs.mu.Lock()
	b := cs.certs[n]
	cs.mu.Unlock()
	if b == nil {
		return nil, false
	}
	var c wire.Cert
	if c.Unmarshal(b) != nil {
		return nil, false
	}
	return &c, true
}

// Roles reports whether the certificate of n is kept here, whether its
// chain holds p and whether it records p as a candidate: map lookups,
// since eligibility asks it of every peer it refuses (docs/protocol.md
// §3 "Who may serve"). The certificate is decoded once per encoding
// stored; a replacement (TakeOutranking) is a new encoding.
func (cs *Certs) Roles(n uint64, p peer.ID) (kept, inChain, cand bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	b := cs.certs[n]
	if len(b) == 0 {
		return false, false, false
	}
	x := cs.index[n]
	if x == nil || &x.b[0] != &b[0] || len(x.b) != len(b) {
		var c wire.Cert
		if c.Unmarshal(b) != nil {
			return false, false, false
		}
		x = &named{b: b, chain: map[peer.ID]bool{}, cands: map[peer.ID]bool{}}
		for _, q := range c.Chain {
			x.chain[peer.ID(q)] = true
		}
		for _, q := range c.Cands {
			x.cands[peer.ID(q)] = true
		}
		if cs.index == nil {
			cs.index = map[uint64]*named{}
		}
		if len(cs.index) > len(cs.certs) {
			for m := range cs.index {
				if cs.certs[m] == nil {
					delete(cs.index, m)
				}
			}
		}
		cs.index[n] = x
	}
	return true, x.chain[p], x.cands[p]
}

// Top is the highest certified number here.
func (cs *Certs) Top() uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.top
}

// Next is the number this server expects next: the one after the last
// certified here.
func (cs *Certs) Next() uint64 { return cs.Top() + 1 }

// Previous is the certificate a Prepare of n carries: that of n−1
// (none for 1).
func (cs *Certs) Previous(n uint64) (wire.Cert, error) {
	if n <= 1 {
		return wire.Cert{}, nil
	}
	c, ok := cs.Of(n - 1)
	if !ok {
		return wire.Cert{}, fmt.Errorf("node: no certificate of epoch %d here", n-1)
	}
	return *c, nil
}

// Window returns the top and the encoded certificates kept of the
// window numbers below it and it.
func (cs *Certs) Window(window uint64) (uint64, map[uint64][]byte) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	bs := map[uint64][]byte{}
	for n, b := range cs.certs {
		if n+window > cs.top {
			bs[n] = b
		}
	}
	return cs.top, bs
}

// Has reports whether the certificate of n is kept here, with the top,
// for rules over the numbers kept (f runs under the lock: no calls out).
func (cs *Certs) Has(f func(top uint64, has func(n uint64) bool)) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	f(cs.top, func(n uint64) bool { return cs.certs[n] != nil })
}

// page is the kept certificates from a number on: one page, oldest first.
func (cs *Certs) page(from uint64) *wire.Certs {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var nums []uint64
	for n := range cs.certs {
		if n >= from {
			nums = append(nums, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var page wire.Certs
	for _, n := range nums[:min(len(nums), wire.MaxCertPage)] {
		var c wire.Cert
		if c.Unmarshal(cs.certs[n]) == nil {
			page.Certs = append(page.Certs, c)
		}
	}
	return &page
}

// PokeSync asks the certificate loop for a catch-up now.
func (cs *Certs) PokeSync() {
	select {
	case cs.poke <- struct{}{}:
	default:
	}
}

// startPushBack reports whether a push-back of n to p may start, and
// records it in flight: none of n to p is, and fewer than MaxPushBacks
// to p.
func (cs *Certs) startPushBack(p peer.ID, n uint64) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	m := cs.backs[p]
	if m[n] || len(m) >= MaxPushBacks {
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
func (cs *Certs) endPushBack(p peer.ID, n uint64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.backs[p], n)
	if len(cs.backs[p]) == 0 {
		delete(cs.backs, p)
	}
}

// PushBacks is how many peers have push-backs in flight (tests).
func (cs *Certs) PushBacks() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.backs)
}

// Voters is the signers whose votes are held of each number (tests).
func (cs *Certs) Voters() map[uint64][]peer.ID {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := map[uint64][]peer.ID{}
	for n, nv := range cs.votes {
		for signer := range nv.by {
			out[n] = append(out[n], peer.ID(signer))
		}
	}
	return out
}

// All returns the top and a copy of every encoded certificate kept
// (tests).
func (cs *Certs) All() (uint64, map[uint64][]byte) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make(map[uint64][]byte, len(cs.certs))
	for n, b := range cs.certs {
		out[n] = b
	}
	return cs.top, out
}

// Put sets the encoded certificate of n, unchecked and unsaved, and
// raises the top to top (tests).
func (cs *Certs) Put(n uint64, b []byte, top uint64) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.certs == nil {
		cs.certs = map[uint64][]byte{}
	}
	cs.certs[n] = b
	cs.top = max(cs.top, top)
}
