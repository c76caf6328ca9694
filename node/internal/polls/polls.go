// Package polls bounds the long polls of the client protocol
// (docs/protocol.md §4.1, §5.3; docs/proto-node.md "Hostile peers and
// crashes"): WaitOpen, Register, WaitList and DupQuery hold a stream and a
// goroutine for up to a poll's timeout. A peer that holds no slot (an
// outsider: any libp2p identity, free to make) gets few of them and short
// ones; a registered client gets what its rounds need; and all of them
// together are bounded. Gate has its own lock and does no I/O; package
// node's intake.go says who is a client and enters each poll.
package polls

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
)

const (
	// MaxOutsiders bounds the outsiders' polls in flight at once.
	MaxOutsiders = 1024
	// MaxTotal bounds every poll in flight at once: a registered client
	// has at most a WaitList and its Register or WaitOpen in flight.
	MaxTotal = 4 * proto.MaxClientsCap
	// Polls in flight per peer.
	OutsiderPerPeer = 2
	ClientPerPeer   = 4
)

// Gate counts the long polls in flight. mu is a leaf lock.
type Gate struct {
	// Outsiders, if set, replaces MaxOutsiders (tests).
	Outsiders int

	mu        sync.Mutex
	total     int
	outsiders int
	waitOpen  int // WaitOpen polls: clients waiting for an epoch
	per       map[peer.ID]int
}

// Enter admits a long poll from p, a client or an outsider, or refuses it
// at once; with short set, the context it returns bounds an outsider's
// wait to outsiderWait (WaitOpen; a Register waits for its epoch's close,
// which its signed registration and the epoch's cap on clients bound).
// Call release when the poll ends.
func (g *Gate) Enter(ctx context.Context, p peer.ID, client, short bool, outsiderWait time.Duration) (context.Context, func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	perPeer, maxOutsiders := ClientPerPeer, MaxOutsiders
	if !client {
		perPeer = OutsiderPerPeer
	}
	if g.Outsiders > 0 {
		maxOutsiders = g.Outsiders
	}
	switch {
	case g.total >= MaxTotal:
		return nil, nil, errors.New("node: too many waiting clients, try again")
	case !client && g.outsiders >= maxOutsiders:
		return nil, nil, errors.New("node: too many waiting peers without a slot, try again")
	case g.per[p] >= perPeer:
		return nil, nil, errors.New("node: too many requests waiting from this peer")
	}
	if g.per == nil {
		g.per = map[peer.ID]int{}
	}
	g.total++
	g.per[p]++
	if short {
		g.waitOpen++
	}
	cancel := context.CancelFunc(func() {})
	if !client {
		g.outsiders++
		if short {
			ctx, cancel = context.WithTimeout(ctx, outsiderWait)
		}
	}
	release := func() {
		cancel()
		g.mu.Lock()
		defer g.mu.Unlock()
		g.total--
		if short {
			g.waitOpen--
		}
		if !client {
			g.outsiders--
		}
		if g.per[p]--; g.per[p] == 0 {
			delete(g.per, p)
		}
	}
	return ctx, release, nil
}

// Counts returns the polls in flight and, among them, the WaitOpen polls
// (clients waiting for an epoch).
func (g *Gate) Counts() (total, waitOpen int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total, g.waitOpen
}
