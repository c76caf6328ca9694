package roundblame

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
)

// Setup is the setup's public steps that routes are checked against: the
// inputs of every step and its result (§4.2).
type Setup struct {
	Inputs [][][]group.Ciphertext
	Steps  []*mix.StepResult
}

// Roots is the signed batch root of round r at server t's input held
// here, if any.
type Roots func(r uint32, t int) (wire.Root, bool)

// CheckEvidence checks that ev is server t's input entry at pos in round r
// as its sender signed it: a client's submission at S_0, else an entry of
// S_{t-1}'s signed batch. A second root that S_{t-1} signed for the same
// batch names S_{t-1} (equivocation, §5.2).
func CheckEvidence(ep *Ep, roots Roots, r uint32, t, pos int, ev *wire.Evidence) (*Culprit, error) {
	v := ep.V
	if len(ev.Entry) != ep.EntrySize(t) {
		return nil, fmt.Errorf("entry of %d bytes, want %d", len(ev.Entry), ep.EntrySize(t))
	}
	if pos < 0 || pos >= ep.N() {
		return nil, fmt.Errorf("position %d of %d", pos, ep.N())
	}
	if t == 0 {
		c := v.Desc.Clients[pos]
		return nil, mix.VerifySubmissionDigest(ed25519.PublicKey(c.RegKey[:]), mix.EpochID(v.ID), uint64(r), uint32(pos), mix.SubmissionDigest(ev.Entry), ev.Sig[:])
	}
	b := wire.Batch{Epoch: v.ID, Round: r, S: uint16(t), Root: ev.Root}
	if err := proto.VerifyPeerSig(v.Chain[t-1], roundstep.BatchDigest(&b), ev.Sig); err != nil {
		return nil, fmt.Errorf("root signature of server %d: %w", t-1, err)
	}
	if !blame.MerkleCheck(ep.N(), pos, ev.Entry, ev.Path, ev.Root) {
		return nil, errors.New("merkle path does not reach the signed root")
	}
	old, ok := roots(r, t)
	if ok && old.Root != ev.Root {
		return ServerCulprit(t-1, "server %d signed two roots for its output of round %d (equivocation)", t-1, r), nil
	}
	return nil, nil
}

// CheckAccusation returns the accuser as the culprit if its accusation
// does not hold: its share proof fails, its evidence is not what its
// predecessor signed, or the MAC there verifies.
func CheckAccusation(ep *Ep, su Setup, roots Roots, a *wire.Accuse) *Culprit {
	v := ep.V
	id := mix.EpochID(v.ID)
	S, p, r := int(a.S), int(a.Pos), a.Round
	if c, err := CheckEvidence(ep, roots, r, S, p, &a.In); c != nil || err != nil {
		if c != nil {
			return c
		}
		return ServerCulprit(S, "its accusation of round %d shows no signed entry: %v", r, err)
	}
	Zp, err := group.DecodeNonIdentity(a.Zp[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, S, uint64(r), p, mix.MACKey, v.Yp[S][r], su.Steps[S].U[p], Zp, a.ZpProof[:])
	}
	if err != nil {
		return ServerCulprit(S, "its MAC share for round %d does not verify: %v", r, err)
	}
	key := mix.ShareKey(id, S, uint64(r), mix.MACKey, Zp)
	if mix.CheckMAC(id, uint64(r), S, key, a.In.Entry) {
		return ServerCulprit(S, "it accused an entry of round %d whose MAC verifies (false accusation)", r)
	}
	return nil
}

// CheckStep checks server t's step of round r at output position out,
// whose entry is outEntry (§8 step 3); it names t if the step does not
// check (or t's predecessor if the step shows it signed two roots).
func CheckStep(ep *Ep, su Setup, roots Roots, r uint32, t, out int, outEntry []byte, st *wire.BlameStep) *Culprit {
	v := ep.V
	id := mix.EpochID(v.ID)
	if err := proto.VerifyPeerSig(v.Chain[t], blame.BlameStepDigest(st), st.Sig); err != nil {
		return ServerCulprit(t, "its step of round %d is not signed by it: %v", r, err)
	}
	if st.Epoch != v.ID || st.Round != r || int(st.T) != t || int(st.Out) != out {
		return ServerCulprit(t, "its step answers another question (round %d, server %d, output %d)", st.Round, st.T, st.Out)
	}
	in := int(st.In)
	if err := mix.VerifyRoute(id, t, v.ServerKeys, su.Inputs[t], su.Steps[t], out, in, st.Route); err != nil {
		return ServerCulprit(t, "its route from output %d of round %d does not verify against its setup shuffle: %v", out, r, err)
	}
	U := su.Steps[t].U[in]
	Z, err := group.DecodeNonIdentity(st.Z[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, t, uint64(r), in, mix.EncKey, v.Y[t][r], U, Z, st.ZProof[:])
	}
	if err != nil {
		return ServerCulprit(t, "its encryption share of round %d does not verify: %v", r, err)
	}
	Zp, err := group.DecodeNonIdentity(st.Zp[:])
	if err == nil {
		err = mix.VerifyRoundKey(id, t, uint64(r), in, mix.MACKey, v.Yp[t][r], U, Zp, st.ZpProof[:])
	}
	if err != nil {
		return ServerCulprit(t, "its MAC share of round %d does not verify: %v", r, err)
	}
	if c, err := CheckEvidence(ep, roots, r, t, in, &st.Input); c != nil || err != nil {
		if c != nil {
			return c
		}
		return ServerCulprit(t, "its input entry of round %d is not as its sender signed it: %v", r, err)
	}
	if !mix.CheckMAC(id, uint64(r), t, mix.ShareKey(id, t, uint64(r), mix.MACKey, Zp), st.Input.Entry) {
		return ServerCulprit(t, "it passed on an entry of round %d whose MAC fails", r)
	}
	plain, err := mix.DecryptLayer(uint64(r), t, mix.ShareKey(id, t, uint64(r), mix.EncKey, Z), st.Input.Entry)
	if err != nil || !bytes.Equal(plain, outEntry) {
		return ServerCulprit(t, "its output of round %d is not its input with its layer removed (it altered the entry)", r)
	}
	return nil
}

// CheckDrop checks server t's drop step of round r at input position in;
// it names t if the step is not its, answers another question, or its
// route proof does not verify against t's setup shuffle.
func CheckDrop(ep *Ep, su Setup, r uint32, t, in int, st *wire.DropStep) *Culprit {
	v := ep.V
	if err := proto.VerifyPeerSig(v.Chain[t], blame.DropStepDigest(st), st.Sig); err != nil {
		return ServerCulprit(t, "its drop step of round %d is not signed by it: %v", r, err)
	}
	if st.Epoch != v.ID || st.Round != r || int(st.T) != t || int(st.In) != in {
		return ServerCulprit(t, "its drop step answers another question (round %d, server %d, input %d)", st.Round, st.T, st.In)
	}
	if err := mix.VerifyRoute(mix.EpochID(v.ID), t, v.ServerKeys, su.Inputs[t], su.Steps[t], int(st.Out), in, st.Route[:]); err != nil {
		return ServerCulprit(t, "its drop step sends input %d of the dead slot to output %d, which its setup shuffle does not prove: %v", in, st.Out, err)
	}
	return nil
}
