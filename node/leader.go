package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// leaderLoop runs epochs while this server heads the chain of live servers.
func (s *Server) leaderLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		chain := s.chain()
		if len(chain) < s.cfg.MinServers || chain[0] != s.h.ID() {
			continue
		}
		if err := s.runEpoch(ctx, chain); err != nil && ctx.Err() == nil {
			s.log.Warn("epoch failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}
}

func (s *Server) abortAll(ctx context.Context, chain []peer.ID, id [32]byte, reason string) {
	body := (&wire.EpochRef{Epoch: id, Reason: []byte(reason)}).Marshal()
	_, _ = s.each(context.WithoutCancel(ctx), chain, ProtoEpoch, wire.TypeAbort, body, wire.TypeAck, 16, shortTimeout)
}

// runEpoch drives one epoch as leader (§3, §4): prepare, sign and open the
// descriptor, wait for registrations, close, sign the final descriptor; the
// setup and the rounds then run from events until the epoch ends.
func (s *Server) runEpoch(ctx context.Context, chain []peer.ID) error {
	s.mu.Lock()
	number := s.number + 1
	s.mu.Unlock()
	var nonce [32]byte
	if _, err := s.rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("node: epoch nonce: %w", err)
	}
	prep := wire.Prepare{Number: number, Nonce: nonce, Params: s.cfg.Params}
	for _, p := range chain {
		prep.Chain = append(prep.Chain, []byte(p))
	}
	reps, err := s.each(ctx, chain, ProtoEpoch, wire.TypePrepare, prep.Marshal(), wire.TypeEntry, 1<<20, shortTimeout)
	if err != nil {
		return fmt.Errorf("node: prepare epoch %d: %w", number, err)
	}
	desc := wire.Descriptor{Number: number, Nonce: nonce, Params: s.cfg.Params, Group: make([]wire.GroupEntry, len(chain))}
	for i, r := range reps {
		if err := desc.Group[i].Unmarshal(r, genericLimits()); err != nil {
			return fmt.Errorf("node: entry of server %d: %w", i, err)
		}
	}
	sigs, err := s.collectSigs(ctx, chain, &wire.Signed{Desc: desc})
	if err != nil {
		return fmt.Errorf("node: sign open descriptor %d: %w", number, err)
	}
	open := &wire.Signed{Desc: desc, Sigs: sigs}
	id := epochID(&desc)
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSigned, open.Marshal(), wire.TypeAck, 16, shortTimeout); err != nil {
		s.abortAll(ctx, chain, id, "open failed")
		return fmt.Errorf("node: open epoch %d: %w", number, err)
	}
	s.log.Info("epoch open", "number", number, "epoch", fmt.Sprintf("%x", id[:6]), "servers", len(chain))

	// Registration: at least the window, and until enough clients.
	deadline := time.Now().Add(time.Duration(desc.Params.RegWindowMs) * time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		for _, p := range chain {
			if p != s.h.ID() && s.roster.get(p) == nil {
				s.abortAll(ctx, chain, id, "server left")
				return fmt.Errorf("node: server %s left during registration", p.ShortString())
			}
		}
		s.mu.Lock()
		e := s.epochs[id]
		count := 0
		if e != nil {
			count = len(e.fwd)
		}
		s.mu.Unlock()
		if e == nil {
			return errors.New("node: epoch vanished during registration")
		}
		if time.Now().After(deadline) && count >= s.cfg.MinClients {
			break
		}
	}
	reps, err = s.each(ctx, chain, ProtoEpoch, wire.TypeCloseReq, (&wire.EpochRef{Epoch: id}).Marshal(), wire.TypeRegList, 256<<20, shortTimeout)
	if err != nil {
		s.abortAll(ctx, chain, id, "close failed")
		return fmt.Errorf("node: close registration: %w", err)
	}
	s.mu.Lock()
	e := s.epochs[id]
	all := map[[32]byte]wire.Register{}
	for k, r := range e.fwd {
		all[k] = r
	}
	s.mu.Unlock()
	lim := limitsFor(desc.Params, len(chain))
	primaryOf := map[[32]byte]uint16{}
	for i, r := range reps {
		var rl wire.RegList
		if err := rl.Unmarshal(r, lim); err != nil {
			s.abortAll(ctx, chain, id, "bad registration list")
			return fmt.Errorf("node: registration list of server %d: %w", i, err)
		}
		parsed, _, err := verifyRegs(e.v, rl.Regs, s.rand)
		if err != nil {
			s.abortAll(ctx, chain, id, "registrations unverifiable")
			return err
		}
		for j, reg := range rl.Regs {
			if parsed[j] == nil {
				continue
			}
			all[reg.RegKey] = reg
			primaryOf[reg.RegKey] = uint16(i)
		}
	}
	keys := make([][32]byte, 0, len(all))
	for k := range all {
		if _, ok := primaryOf[k]; ok {
			keys = append(keys, k)
		}
	}
	// Slot order: by registration key, a public order nobody chooses
	// (keys are fresh per epoch).
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	// §4.1: duplicate keys are rejected. A second registration with an
	// X25519 key already taken (by a lower registration key) is dropped,
	// so that the list every server checks has none.
	seenX := map[[32]byte]bool{}
	kept := keys[:0]
	for _, k := range keys {
		x := all[k].XKey
		if seenX[x] || seenX[k] {
			continue
		}
		seenX[x], seenX[k] = true, true
		kept = append(kept, k)
	}
	keys = kept
	if len(keys) > int(desc.Params.MaxClients) {
		keys = keys[:desc.Params.MaxClients]
	}
	if len(keys) < s.cfg.MinClients {
		s.abortAll(ctx, chain, id, "too few clients")
		return fmt.Errorf("node: %d valid registrations < %d", len(keys), s.cfg.MinClients)
	}
	fin := desc
	ordered := wire.RegList{Epoch: id}
	for _, k := range keys {
		r := all[k]
		ordered.Regs = append(ordered.Regs, r)
		fin.Clients = append(fin.Clients, wire.ClientEntry{RegKey: k, Primary: primaryOf[k], XKey: r.XKey, RegHash: sha256.Sum256(r.Reg)})
	}
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeRegList, ordered.Marshal(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.abortAll(ctx, chain, id, "registration list refused")
		return fmt.Errorf("node: send registrations: %w", err)
	}
	sigs, err = s.collectSigs(ctx, chain, &wire.Signed{Final: true, Desc: fin})
	if err != nil {
		s.abortAll(ctx, chain, id, "final descriptor refused")
		return fmt.Errorf("node: sign final descriptor: %w", err)
	}
	final := &wire.Signed{Final: true, Desc: fin, Sigs: sigs}
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSigned, final.Marshal(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.abortAll(ctx, chain, id, "final descriptor not delivered")
		return fmt.Errorf("node: publish final descriptor: %w", err)
	}
	s.log.Info("epoch closed", "epoch", fmt.Sprintf("%x", id[:6]), "clients", len(keys))
	// The epoch now runs from events; the leader waits for its end.
	return s.waitFor(ctx, func() bool { return e.ended })
}

func (s *Server) collectSigs(ctx context.Context, chain []peer.ID, req *wire.Signed) ([][64]byte, error) {
	reps, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSignReq, req.Marshal(), wire.TypeSig, 256, bulkTimeout)
	if err != nil {
		return nil, err
	}
	sigs := make([][64]byte, len(chain))
	for i, r := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(r); err != nil || int(sg.Index) != i {
			return nil, fmt.Errorf("node: signature reply of server %d malformed", i)
		}
		sigs[i] = sg.Sig
	}
	return sigs, nil
}
