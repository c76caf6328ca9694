package roundblame

import (
	"crypto/ed25519"
	"errors"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
)

// Public evidence a server sends the chain once it named a culprit
// without a walk (§5.1, §5.2): each server checks it here and names the
// culprit itself.

// CheckEquivocation checks two signed roots of one batch of the epoch of
// v that differ, and returns the chain position of their signer.
func CheckEquivocation(v *proto.View, ev *wire.Equivocation) (int, error) {
	a, b := ev.A, ev.B
	if b.Epoch != a.Epoch || b.Round != a.Round || b.S != a.S || a.Root == b.Root || a.S < 1 || int(a.S) > len(v.Chain) {
		return 0, errors.New("node: not two roots of one batch")
	}
	signer := v.Chain[a.S-1]
	for _, r := range []wire.Root{a, b} {
		bt := wire.Batch{Epoch: r.Epoch, Round: r.Round, S: r.S, Root: r.Root}
		if err := proto.VerifyPeerSig(signer, roundstep.BatchDigest(&bt), r.Sig); err != nil {
			return 0, err
		}
	}
	return int(a.S) - 1, nil
}

// CheckDoubleSubmit checks two signed submissions of one slot of the
// epoch of v that differ: both signed by the slot's client.
func CheckDoubleSubmit(v *proto.View, d *wire.DoubleSubmit) error {
	if int(d.Slot) >= len(v.Desc.Clients) || d.Round >= v.Desc.Params.Rounds || d.HashA == d.HashB {
		return errors.New("node: not two submissions of one slot")
	}
	key := ed25519.PublicKey(v.Desc.Clients[d.Slot].RegKey[:])
	for _, x := range []struct {
		h   [32]byte
		sig [64]byte
	}{{d.HashA, d.SigA}, {d.HashB, d.SigB}} {
		if err := mix.VerifySubmissionDigest(key, mix.EpochID(d.Epoch), uint64(d.Round), d.Slot, x.h, x.sig[:]); err != nil {
			return err
		}
	}
	return nil
}

// CheckBadBatch checks a signed batch of the epoch of v forwarded as
// evidence, whose head h is of a chain server's output: its signer's
// signature, its entries against the signed root (entries that do not
// match it are no evidence: anyone could attach them), and its shape
// under lim. It returns the batch's round if the shape is wrong (a
// missing entry or one of the wrong size), which names the signer.
func CheckBadBatch(v *proto.View, h wire.BatchHead, body []byte, lim wire.Limits) (uint32, error) {
	S := int(h.S)
	if err := proto.VerifyPeerSig(v.Chain[S-1], roundstep.BatchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return 0, err
	}
	var b wire.Batch
	if err := b.Unmarshal(body, lim); err != nil {
		return 0, err
	}
	if proto.MerkleRoot(b.Entries) != b.Root {
		return 0, errors.New("node: the entries do not match the signed root")
	}
	want := EntrySize(v, S)
	bad := len(b.Entries) != len(v.Desc.Clients)
	for _, x := range b.Entries {
		bad = bad || len(x) != want
	}
	if !bad {
		return 0, errors.New("node: the batch is well formed")
	}
	return b.Round, nil
}
