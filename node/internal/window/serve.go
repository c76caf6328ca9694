package window

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Peers is what the window's handlers ask of their server: who a peer
// is, its reply slots, and its calls.
type Peers interface {
	Self() peer.ID
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// EnterClient takes one of the clients' window slots for p until ctx
	// ends (by its address range).
	EnterClient(ctx context.Context, p peer.ID) error
	// Group reports whether p is a server of the group here.
	Group(p peer.ID) bool
	// EnterServer takes one of the servers' slots for p, a server of the
	// group, until ctx ends.
	EnterServer(ctx context.Context, p peer.ID) error
	// Refuse and Reply are the tests' hooks: a refused request, a reply
	// altered.
	Refuse(p peer.ID) bool
	Reply(p peer.ID, w *wire.Window)
}

// Service serves the window before an epoch number to clients and to the
// group's servers, and asks the servers for it.
type Service struct {
	Items *Items
	Peers Peers
}

// OnClientReq answers a client's request for the window before an epoch
// number: for each number below it, back the budget's look-back, the
// certified epoch's descriptor without clients, closing record and pool
// as far as this server holds them. The client checks every part.
func (s *Service) OnClientReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.WindowReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if s.Peers.Refuse(from) {
		return 0, nil, errors.New("node: window request refused")
	}
	// Any peer may ask, before it registers: a window costs what a few
	// index pages cost, so it takes one of the window slots
	// (slots.MaxWindowServing, one a peer, slots.MaxWindowPerRange a
	// range), held until the reply is written or its short deadline
	// passed.
	if err := s.Peers.EnterClient(ctx, from); err != nil {
		return 0, nil, err
	}
	w := wire.Window{Items: s.Items.Served(q.Number)}
	s.Peers.Reply(from, &w)
	return wire.TypeWindow, w.Marshal(), nil
}

// OnServerReq answers, over the epoch protocol, a server of the group
// that asks for the window before an epoch number (Ask): a member of N's
// chain that lacks a part of the window N's Prepare pins, N's leader
// choosing it, or a server asked whether it would serve. It takes none of
// the clients' slots, so peers with no role that hold those keep no
// member from the window it must hold to answer the Prepare; a peer
// outside the group is refused before any work, and a server has one
// reply at a time.
func (s *Service) OnServerReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if !s.Peers.Group(from) {
		return 0, nil, errors.New("node: window requests on the epoch protocol only from the group's servers")
	}
	var q wire.WindowReq
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.Peers.EnterServer(ctx, from); err != nil {
		return 0, nil, err
	}
	w := wire.Window{Items: s.Items.ServedToServers(q.Number)}
	return wire.TypeWindow, w.Marshal(), nil
}

// Ask asks the peers other than this server, servers of the group, for
// the window before number over the epoch protocol (OnServerReq), at
// once, and returns what those that answered gave.
func (s *Service) Ask(ctx context.Context, peers []peer.ID, number uint64) []wire.WindowItem {
	req := (&wire.WindowReq{Number: number}).Marshal()
	var (
		mu  sync.Mutex
		out []wire.WindowItem
		wg  sync.WaitGroup
	)
	for _, p := range peers {
		if p == s.Peers.Self() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.Peers.Call(ctx, p, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeWindowReq, Body: req, Timeout: transport.ShortTimeout, Max: proto.MaxLookbackWindow})
			var w wire.Window
			if err != nil || w.Unmarshal(rep) != nil {
				return
			}
			mu.Lock()
			out = append(out, w.Items...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// Certs is what a gap's check reads and keeps of the certificates here
// (node's internal/certs).
type Certs interface {
	Of(n uint64) (*wire.Cert, bool)
	AbortAfterFinal(c *wire.Cert) error
	Check(c *wire.Cert) error
	Add(c *wire.Cert)
}

// CheckGap is a member's check of a Prepare's Gap: its shape, then each
// certificate, the oldest first, as the kept one or verified against the
// group certified for its number (Certs.Check) and then kept, as the
// previous certificate is kept.
func CheckGap(cs Certs, number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if err := CheckGapShape(number, prev, gap); err != nil {
		return err
	}
	for i := len(gap) - 1; i >= 0; i-- {
		c := &gap[i]
		if mine, ok := cs.Of(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
			continue
		}
		if err := cs.AbortAfterFinal(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		if err := cs.Check(c); err != nil {
			return fmt.Errorf("node: the gap's certificate of %d: %w", c.Number, err)
		}
		cs.Add(c)
	}
	return nil
}
