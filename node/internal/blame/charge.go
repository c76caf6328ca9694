package blame

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Charges from evidence (docs/protocol.md §3, "Charges from evidence").
// Every charge to a refusal budget is ChargeOf of one signed object (an
// abort, or a void list signed by the whole chain) and the absence
// attestations gathered with it, checked against the certificate of its
// epoch's number: the same bytes give the same charge on every server,
// whatever each saw and whenever. An absence counts against a server P
// only when more than half of the chain's servers other than P signed
// that they lacked P's part when their own deadline had passed; a claim
// of absence that the majority does not back counts against whoever made
// it (the abort's signer; for a void, the server whose signed lack claim
// it carries, else its proposer S_0).

// Context is what ChargeOf needs of the log: the certified chain of the
// evidence's number and whether that number's certificate is its final
// descriptor (an abort certificate or none: the registration never closed).
type Context struct {
	Epoch [32]byte
	Chain []peer.ID
	Final bool
}

// CertContext is the Context of certificate c (none for a timeout: no epoch
// ran, nothing is charged).
func CertContext(c *wire.Cert) (Context, error) {
	if c.Kind == wire.CertTimeout {
		return Context{}, errors.New("blame: evidence of a timed-out number")
	}
	chain, err := proto.CertChain(c)
	if err != nil {
		return Context{}, err
	}
	return Context{Epoch: c.Epoch, Chain: chain, Final: c.Kind == wire.CertFinal}, nil
}

// ChargeOf is the charge of ev in ctx: the server charged (empty for
// nobody) and why. It checks every signature it counts; an attestation
// that does not verify is an error (the evidence is refused whole).
func ChargeOf(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	m := len(ctx.Chain)
	if m == 0 {
		return "", "", errors.New("blame: evidence without a chain")
	}
	if ev.Kind == wire.EvEquiv {
		return chargeEquiv(ev, ctx)
	}
	if ev.Kind == wire.EvHeld {
		return chargeHeld(ev, ctx)
	}
	if ev.Kind == wire.EvSilent {
		return chargeSilent(ev, ctx)
	}
	if ev.Kind == wire.EvForward {
		return chargeForward(ev, ctx)
	}
	if ev.Kind == wire.EvAccount {
		return chargeAccount(ev, ctx)
	}
	var (
		signer  peer.ID // who made the claim
		kind    uint8   // the claim's kind (for the attestations)
		round   uint32
		epoch   [32]byte
		claimOf string
	)
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if err := a.Unmarshal(ev.Item); err != nil {
			return "", "", err
		}
		signer = peer.ID(a.Signer)
		if !proto.InChain(ctx.Chain, signer) {
			return "", "", errors.New("blame: abort signed outside its chain")
		}
		if a.Kind != wire.AbortCoord && a.Number != ev.Number {
			return "", "", fmt.Errorf("blame: abort of number %d as evidence of %d", a.Number, ev.Number)
		}
		if err := proto.VerifyPeerSig(signer, proto.AbortDigest(&a), a.Sig); err != nil {
			return "", "", err
		}
		epoch, kind, round, claimOf = a.Epoch, a.Kind, a.Round, string(a.Reason)
	case wire.EvVoid:
		var rl wire.RoundList
		if err := rl.Unmarshal(ev.Item, proto.GenericLimits()); err != nil {
			return "", "", err
		}
		if !rl.Void() || len(rl.Sigs) != m {
			return "", "", errors.New("blame: a void's evidence is its list signed by the whole chain")
		}
		if rl.Blamed() {
			// Its cause is public (a culprit named): every honest
			// server signs it only with the blame's record.
			return "", "", errors.New("blame: a blamed round's void is evidence against nobody")
		}
		dg := proto.ListDigest(&rl)
		for i, sg := range rl.Sigs {
			if err := proto.VerifyPeerSig(ctx.Chain[i], dg, sg); err != nil {
				return "", "", err
			}
		}
		signer, epoch, kind, round = ctx.Chain[0], rl.Epoch, wire.AbortNoPub, rl.Round
		claimOf = fmt.Sprintf("round %d void", rl.Round)
	default:
		return "", "", fmt.Errorf("blame: evidence kind %d", ev.Kind)
	}
	if epoch != ctx.Epoch {
		return "", "", errors.New("blame: evidence of another epoch than its number's certificate")
	}
	// claimant: the first chain position whose signed lack claim of the
	// void's round is in the evidence (0: none).
	claimant := 0
	for i := range ev.Attests {
		at := &ev.Attests[i]
		if at.Epoch != epoch || at.Number != ev.Number || at.Round != round || int(at.Signer) >= m {
			return "", "", errors.New("blame: attestation of another claim")
		}
		switch {
		case at.Kind == kind:
		case at.Kind == wire.ClaimLack && ev.Kind == wire.EvVoid:
			if at.Signer == 0 || at.Lacking != 1<<(at.Signer-1) {
				return "", "", errors.New("blame: a lack claim of another part than its signer's input")
			}
			if claimant == 0 || int(at.Signer) < claimant {
				claimant = int(at.Signer)
			}
		default:
			return "", "", errors.New("blame: attestation of another claim")
		}
		if err := proto.VerifyPeerSig(ctx.Chain[at.Signer], AttestDigest(at), at.Sig); err != nil {
			return "", "", fmt.Errorf("blame: attestation: %w", err)
		}
	}
	lacked := AttestedLacking(ev.Attests)
	attested := map[uint16]bool{} // signers with an attestation here, equivocators too
	for _, a := range ev.Attests {
		if a.Kind != wire.ClaimLack {
			attested[a.Signer] = true
		}
	}
	// backed: more than half of the chain's servers other than j lacked
	// j's part.
	backed := func(j int) bool {
		n := 0
		for i, bits := range lacked {
			if int(i) != j && bits&(1<<uint(j)) != 0 {
				n++
			}
		}
		return 2*n > m-1
	}
	// mayBack: j's part could still be backed by the attestations not in
	// the evidence yet, each counted as lacking it.
	mayBack := func(j int) bool {
		n := 0
		for i := range m {
			if i == j {
				continue
			}
			if bits, ok := lacked[uint16(i)]; ok && bits&(1<<uint(j)) != 0 || !attested[uint16(i)] {
				n++
			}
		}
		return 2*n > m-1
	}
	leader := proto.LeaderOf(ev.Number, ctx.Chain)
	switch {
	case ev.Kind == wire.EvAbort && kind == wire.AbortFault:
		return signer, claimOf, nil
	case ev.Kind == wire.EvAbort && kind == wire.AbortUnfilled:
		// A dry slot: its client sent no onion, or its primary held it;
		// nobody but those two can tell, and S_0 is neither
		// (TestStalledOnionFramesS0, node). Only S_0 fills rounds: the
		// kind from another signer is its own fault abort.
		if signer != ctx.Chain[0] {
			return signer, claimOf, nil
		}
		return "", fmt.Sprintf("round %d not filled: a dry slot, no server charged", round), nil
	case ev.Kind == wire.EvAbort && kind == wire.AbortCoord:
		if signer == leader && !ctx.Final {
			return "", claimOf, nil // a registration that came to nothing
		}
		return signer, claimOf, nil
	case kind == wire.AbortNoClose:
		// Not conditioned on the number's certificate being final: one
		// server may keep the abort's certificate, another the final one,
		// of one attempt; an honest server that had the close attests none.
		for j, p := range ctx.Chain {
			if p == leader && backed(j) {
				return leader, "registration never closed (attested): " + claimOf, nil
			}
		}
		return signer, "registration never closed (not backed): " + claimOf, nil
	case kind == wire.AbortDown:
		// "P was down": P's refusal budget, without blame, when the
		// majority of the others back it; else the claimant's.
		if j := int(round); j < m && ctx.Chain[j] != signer && backed(j) {
			return ctx.Chain[j], fmt.Sprintf("position %d down (attested): %s", j, claimOf), nil
		}
		return signer, "server down (not backed): " + claimOf, nil
	case kind == wire.AbortNoList:
		// No final list of a published round: no honest server signs
		// one (node listdue.go). The attestations that none came by
		// a server's due framed an honest S_0 whose list a corrupt
		// signer held back, so they count for nothing; the signer's.
		return signer, fmt.Sprintf("round %d: no list (signer's claim): %s", round, claimOf), nil
	default: // a missing publication: an abort of kind NoPub, or a void
		// Two different attestations of the round by one signer charge
		// it only where the second is pivotal (below): charged whatever
		// else the evidence held, the equivocator took a charge already
		// given, when the pair chose (TestEquivocationMovesNoCharge).
		if ev.Kind == wire.EvAbort && !ctx.Final {
			// No round ran before the final descriptor, and no honest
			// server ends its epoch on such an abort before it holds
			// the descriptor (node/internal/evidence PreFinal): nobody, until
			// the number's final certificate comes, if it does.
			// Charged to its signer at once, the verdict moved with
			// the certificate a server held (TestAbortBeforeFinalCharged;
			// the rev42a review's F3).
			return "", fmt.Sprintf("round %d: no round before the final descriptor: %s", round, claimOf), nil
		}
		// No honest server attests a part of a round before the final
		// descriptor (it has no round), so no certificate kind is needed.
		// The verdict is given only once no attestation still to come
		// can move it: a part is charged when backed and no earlier
		// part may still be; the claimant when no part may still be.
		// Judged on a partial set, a void or an abort charged its
		// claimant for the milliseconds before the others' came,
		// whatever they then backed (TestEarlyRootLateInputFramesS0,
		// node; TestAbortNoPubChargeStays).
		verdict := func() (peer.ID, string) {
			for j := range m {
				if backed(j) {
					return ctx.Chain[j], fmt.Sprintf("round %d: no part from position %d (attested)", round, j)
				}
				if mayBack(j) {
					return "", fmt.Sprintf("round %d: position %d's part may still be backed: %s", round, j, claimOf)
				}
			}
			if claimant > 0 {
				// A void on a server's signed claim that it lacked
				// its input: the claim is the claimant's, not its
				// proposer's (TestStaggeredRootFramesS0, node).
				return ctx.Chain[claimant], fmt.Sprintf("round %d: lack claimed by position %d not backed: %s", round, claimant, claimOf)
			}
			return signer, fmt.Sprintf("round %d: absence not backed: %s", round, claimOf)
		}
		// A signer with two different attestations of the round: judged
		// with every such signer's word both as the parts all of its
		// attestations lack and as the parts any lacks. If the two agree,
		// its second changes nothing; if not, it is pivotal and the lowest
		// such signer is charged, proven corrupt by its own signatures.
		// Either word alone let a corrupt second move a given charge onto
		// an honest server where the honest views differ (adding, onto an
		// earlier part; taking back, onto the claimant: the rev42b
		// review's G2 and G6, TestEquivocationNeverFrames).
		lacked = wordLacking(ev.Attests, kind, false)
		p, why := verdict()
		if k, ok := equivocator(ev.Attests, kind); ok {
			lacked = wordLacking(ev.Attests, kind, true)
			if q, _ := verdict(); q != p {
				return ctx.Chain[k], fmt.Sprintf("round %d: position %d signed two attestations, the second pivotal: %s", round, k, claimOf), nil
			}
		}
		return p, why, nil
	}
}

// wordLacking is, for each signer of an attestation of kind in attests,
// the parts every one of its attestations says it lacked, or with any,
// the parts one of them does. An honest server signs one a round.
func wordLacking(attests []wire.Attest, kind uint8, any bool) map[uint16]uint64 {
	out := map[uint16]uint64{}
	for _, a := range attests {
		if a.Kind != kind {
			continue
		}
		if w, ok := out[a.Signer]; !ok {
			out[a.Signer] = a.Lacking
		} else if any {
			out[a.Signer] = w | a.Lacking
		} else {
			out[a.Signer] = w & a.Lacking
		}
	}
	return out
}

// equivocator is the lowest chain position with two different
// attestations of kind in attests.
func equivocator(attests []wire.Attest, kind uint8) (uint16, bool) {
	first := map[uint16]wire.Attest{}
	var low uint16
	found := false
	for _, a := range attests {
		if a.Kind != kind {
			continue
		}
		if f, ok := first[a.Signer]; ok && f != a && (!found || a.Signer < low) {
			low, found = a.Signer, true
		} else if !ok {
			first[a.Signer] = a
		}
	}
	return low, found
}

// AttestedLacking is what each signer of attests said it lacked: an
// honest server signs one attestation a claim, so a signer with two
// different ones equivocated and counts for nothing. A lack claim
// (wire.ClaimLack) is no attestation. The signatures are the caller's to
// check.
func AttestedLacking(attests []wire.Attest) map[uint16]uint64 {
	first := map[uint16]wire.Attest{}
	lacked := map[uint16]uint64{}
	equiv := map[uint16]bool{}
	for _, a := range attests {
		if a.Kind == wire.ClaimLack {
			continue
		}
		if f, ok := first[a.Signer]; ok {
			equiv[a.Signer] = equiv[a.Signer] || f != a
			continue
		}
		first[a.Signer], lacked[a.Signer] = a, a.Lacking
	}
	for i := range equiv {
		if equiv[i] {
			delete(lacked, i)
		}
	}
	return lacked
}

const tagAttest = "riffle/v3/attest"

func AttestDigest(a *wire.Attest) [32]byte { return proto.TaggedHash(tagAttest, a.MarshalBody()) }

// PublicCause reports whether ev, charged to charged (ChargeOf), is a
// public cause of its epoch's end: a departure the majority attests
// (wire.AbortDown charged to the server down, not its signer). The other
// counts of that epoch are then taken back at every server that holds it.
func PublicCause(ev *wire.Charge, charged peer.ID) bool {
	if ev.Kind != wire.EvAbort || charged == "" {
		return false
	}
	var a wire.Abort
	return a.Unmarshal(ev.Item) == nil && a.Kind == wire.AbortDown && peer.ID(a.Signer) != charged
}
