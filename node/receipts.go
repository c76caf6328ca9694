package node

import (
	"context"
	"errors"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Receipts of registrations (docs/protocol.md §3 v3). A primary sends each
// registration it takes, signed by it, to every chain server; each answers
// with a signed receipt until its registration closes (the leader's close,
// after the deadline and only once enough clients are in). The primary
// keeps the receipts for its client, which fetches them; a server refuses
// a final descriptor that leaves out a registration it receipted when the
// selection took less than that registration's primary's quota
// (checkReceipted).

// fanOut sends this primary's signed registration f to every chain server
// of e (itself included) and keeps the receipts that verify for its
// client. A server that does not answer gives no receipt; that is no
// ground to refuse anything.
func (s *Server) fanOut(ctx context.Context, e *sepoch, f *wire.Forwarded) {
	fb := f.Marshal()
	chain := e.v.Chain
	var mu sync.Mutex
	var got []wire.Receipt
	var wg sync.WaitGroup
	for j, p := range chain {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rep []byte
			var err error
			if p == s.h.ID() {
				_, rep, err = s.onForwardedRegister(p, fb)
			} else {
				rep, err = transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoEpoch, Type: wire.TypeForward, Body: fb, Timeout: transport.ShortTimeout})
			}
			var r wire.Receipt
			if err == nil {
				err = r.Unmarshal(rep)
			}
			if err == nil && int(r.Server) != j {
				err = errors.New("node: receipt of another chain position")
			}
			if err == nil {
				err = proto.CheckReceipt(&r, e.v.ID, &f.Reg, chain)
			}
			if err != nil {
				s.log.Debug("registration receipt", "position", j, "err", err)
				return
			}
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	e.reg.KeepReceipts(f.Reg.RegKey, got)
}

// onReceiptSet answers a client's request for the receipts of the
// registration it sent here (only the peer that registered it asks).
func (s *Server) onReceiptSet(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.ReceiptSet
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if len(q.Receipts) != 0 {
		return 0, nil, errors.New("node: a receipt request carries receipts")
	}
	s.mu.Lock()
	e := s.epochs[q.Epoch]
	s.mu.Unlock()
	var ok bool
	if e != nil {
		q.Receipts, ok = e.reg.Receipts(q.RegKey, from)
	}
	if !ok {
		return 0, nil, errors.New("node: no registration of this peer in that epoch")
	}
	return wire.TypeReceiptSet, q.Marshal(), nil
}
