package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// answerDup is the client's side of a duplicate share at setup
// (docs/protocol.md §4.1 v3), run when an epoch ended before its rounds:
// it asks its primary for the abort and answers only after checking it
// (every chain server's signature, its own slot named, the named value
// equal to its own), with a proof of knowledge of the value's discrete log
// bound to the epoch and its slot. The epoch's secrets are dropped
// afterwards and the next epoch draws new ones (u, q, registration and
// X25519 keys: join).
func (e *cepoch) answerDup(ctx context.Context) error {
	c := e.c
	rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeDupQuery, Body: (&wire.EpochRef{Epoch: e.v.ID}).Marshal(), Timeout: transport.PollTimeout})
	if err != nil {
		return err // typically: no duplicate in this epoch
	}
	var a wire.DupAbort
	if err := a.Unmarshal(rep); err != nil {
		return err
	}
	if err := checkDupAbort(e, &a); err != nil {
		return err
	}
	own, err := e.cs.Share(int(a.Comp))
	if err != nil {
		return err
	}
	// Only a value this client holds is proven (a test's client may
	// answer otherwise).
	holds := bytes.Equal(own.Bytes(), a.Value[:])
	if !hooks.DupAnswers(&c.hk, holds) {
		return nil
	}
	proof, err := e.cs.ProveShare(mix.EpochID(e.v.ID), e.slot, int(a.Comp), c.rand)
	if err != nil {
		return err
	}
	msg := wire.DupProof{Epoch: e.v.ID, Slot: e.slot}
	copy(msg.Proof[:], proof)
	_, err = c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeDupProof, Body: msg.Marshal(), Timeout: transport.ShortTimeout})
	return err
}

// checkDupAbort checks an abort against the epoch: its id, every chain
// server's signature (each signs only after verifying the proven lists and
// walking both positions back itself), and this client's slot among the
// two named.
func checkDupAbort(e *cepoch, a *wire.DupAbort) error {
	v := e.v
	if a.Epoch != v.ID || len(a.Sigs) != len(v.Chain) || int(a.Comp) > len(v.Chain) || a.SlotA == a.SlotB {
		return errors.New("node: duplicate abort malformed")
	}
	if a.SlotA != e.slot && a.SlotB != e.slot {
		return errors.New("node: duplicate abort does not name this client")
	}
	d := proto.DupDigest(a)
	for j, p := range v.Chain {
		if err := proto.VerifyPeerSig(p, d, a.Sigs[j]); err != nil {
			return fmt.Errorf("node: duplicate abort signature of server %d: %w", j, err)
		}
	}
	return nil
}
