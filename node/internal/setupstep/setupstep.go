// Package setupstep is one server's step of an epoch's setup chain
// (docs/protocol.md §4.2) as functions of the epoch's public state: this
// server's step computed and proven, its result signed for the chain, and
// another server's signed step checked against the inputs it took. A
// check tells the fault of the step's server (public evidence, §8: its
// signed step does not parse or verify) from a signature that names
// nobody, and returns a share fault a step proves (§4.2 step 3: a client's
// share is the identity or repeated) beside a complete result, for the
// walk back to its client. No I/O, no lock, no clock: package node's
// setup.go waits for the steps, broadcasts, names and walks.
package setupstep

import (
	"errors"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Epoch is what a step reads of its epoch: the final descriptor's id,
// chain and server keys, and its slots.
type Epoch struct {
	ID         [32]byte
	Chain      []peer.ID
	ServerKeys []*group.Element
	N          int // slots
}

// Digest is what server k signs of its step's result.
func Digest(id [32]byte, k int, result []byte) [32]byte {
	return proto.TaggedHash(proto.TagStep, id[:], []byte{byte(k >> 8), byte(k)}, result)
}

// Own computes this server's step k over inputs with its secret sk,
// proven. sec, the step's secret, is returned whenever the step made one,
// errors included, so that its holder erases it on every path; a share
// fault is returned beside a complete result, not as an error (the result
// is broadcast anyway so that everyone can check the claim).
func Own(ep Epoch, k int, sk *mix.ServerSecret, inputs [][]group.Ciphertext, rand io.Reader) (*mix.StepResult, *mix.StepSecret, *mix.ShareError, error) {
	var shareErr *mix.ShareError
	r, sec, err := mix.SetupStep(mix.EpochID(ep.ID), k, ep.ServerKeys, sk, inputs, rand)
	if errors.As(err, &shareErr) && r != nil && sec != nil {
		err = nil
	} else {
		shareErr = nil
	}
	if err != nil {
		return nil, sec, nil, fmt.Errorf("node: setup step %d: %w", k, err)
	}
	return r, sec, shareErr, nil
}

// Sign is server k's step message over its marshalled result raw.
func Sign(priv crypto.PrivKey, id [32]byte, k int, raw []byte) (*wire.Step, error) {
	sig, err := proto.Sign(priv, Digest(id, k, raw))
	if err != nil {
		return nil, err
	}
	return &wire.Step{Epoch: id, S: uint16(k), Result: raw, Sig: sig}, nil
}

// Check checks server k's signed step st against the inputs it took. A
// signature that does not verify names nobody (fault nil): anyone could
// have sent it. A signed step that does not parse or verify is its
// server's fault (fault, the cause; the step is the evidence). A share
// fault the step proves is returned beside the result, not as an error.
func Check(ep Epoch, k int, inputs [][]group.Ciphertext, st *wire.Step, rand io.Reader) (res *mix.StepResult, shareErr *mix.ShareError, fault, err error) {
	if err := proto.VerifyPeerSig(ep.Chain[k], Digest(ep.ID, k, st.Result), st.Sig); err != nil {
		return nil, nil, nil, fmt.Errorf("node: setup step %d: %w", k, err)
	}
	r, err := mix.ParseStepResult(st.Result, ep.N, len(ep.Chain), k)
	if err != nil {
		return nil, nil, err, fmt.Errorf("node: setup step %d: %w", k, err)
	}
	if err := mix.VerifyStep(mix.EpochID(ep.ID), k, ep.ServerKeys, inputs, r, rand); err != nil && !errors.As(err, &shareErr) {
		return nil, nil, err, fmt.Errorf("node: setup step %d does not verify: %w", k, err)
	}
	return r, shareErr, nil, nil
}
