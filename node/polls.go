package node

import (
	"context"
	"errors"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Long polls on the client protocol (WaitOpen, Register, WaitList) hold a
// stream and a goroutine for up to pollTimeout. A peer that holds no slot
// here (an outsider: any libp2p identity, free to make) gets few of them
// and short ones; a registered client gets what its rounds need; and all
// of them together are bounded (docs/proto-node.md "Hostile peers and
// crashes").
var (
	// An outsider's poll waits at most Tunables.OutsiderPoll (a client
	// waiting for the next epoch asks again).
	// maxOutsiderPolls bounds the outsiders' polls in flight at once.
	maxOutsiderPolls = 1024
	// maxPolls bounds every poll in flight at once: a registered client
	// has at most a WaitList and its Register or WaitOpen in flight.
	maxPolls = 4 * MaxClientsCap
)

// Polls in flight per peer.
const (
	outsiderPollsPerPeer = 2
	clientPollsPerPeer   = 4
)

// pollGate counts the long polls in flight.
type pollGate struct {
	mu        sync.Mutex
	total     int
	outsiders int
	waitOpen  int // WaitOpen polls: clients waiting for an epoch (waitstate.go)
	per       map[peer.ID]int
}

// isClientPeer reports whether p registered a slot or a registration of
// a running epoch with this server.
func (s *Server) isClientPeer(p peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if !e.ended && e.Table.RegisteredBy(p) {
			return true
		}
	}
	return false
}

// enterPoll admits a long poll from p, or refuses it at once; with short
// set, the context it returns bounds an outsider's wait to Tunables.OutsiderPoll
// (WaitOpen; a Register waits for its epoch's close, which its signed
// registration and the epoch's cap on clients bound). Call release when
// the poll ends.
func (s *Server) enterPoll(ctx context.Context, p peer.ID, short bool) (context.Context, func(), error) {
	client := s.isClientPeer(p)
	g := &s.polls
	g.mu.Lock()
	defer g.mu.Unlock()
	perPeer := clientPollsPerPeer
	if !client {
		perPeer = outsiderPollsPerPeer
	}
	switch {
	case g.total >= maxPolls:
		return nil, nil, errors.New("node: too many waiting clients, try again")
	case !client && g.outsiders >= maxOutsiderPolls:
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
			ctx, cancel = context.WithTimeout(ctx, s.cfg.Timing.OutsiderPoll)
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
