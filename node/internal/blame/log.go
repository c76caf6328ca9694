package blame

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The evidence log (docs/protocol.md §3): evidence named by what was
// signed, one record a claimant's slot, merged, and replayed into the
// same charges on every server.

// EvidenceSlot names who made the claim of ev, in which epoch, with what
// kind of evidence: an abort's signer, kind and round (an honest signer
// signs one abort an epoch; a claim of one round cannot stand for
// another's), a void's proposer (one a chain); "" if ev does not decode.
func EvidenceSlot(ev *wire.Charge) string {
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return ""
		}
		return fmt.Sprintf("%x/%d/%x/%d/%d", a.Epoch, ev.Kind, a.Signer, a.Kind, a.Round)
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, proto.GenericLimits()) != nil {
			return ""
		}
		return fmt.Sprintf("%x/%d", rl.Epoch, ev.Kind)
	case wire.EvEquiv:
		final, _, err := ParseEquiv(ev.Item)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("%x/%d/%x", final.Epoch, ev.Kind, []byte(equivSigner(final)))
	case wire.EvHeld:
		return heldSlot(ev)
	case wire.EvSilent:
		return silentSlot(ev)
	case wire.EvForward:
		return forwardSlot(ev)
	case wire.EvAccount:
		return accountSlot(ev)
	}
	return ""
}

// ChargeKey names a piece of evidence by what its signers signed, not by
// the signatures: a signer can sign one digest afresh as often as it
// likes, and a copy under a new key would replace the record and drop the
// attestations it holds. "" if ev does not decode.
func ChargeKey(ev *wire.Charge) string {
	var dg [32]byte
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return ""
		}
		dg = proto.AbortDigest(&a)
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, proto.GenericLimits()) != nil {
			return ""
		}
		dg = proto.ListDigest(&rl)
	case wire.EvEquiv:
		final, timeout, err := ParseEquiv(ev.Item)
		if err != nil {
			return ""
		}
		dg = equivKey(final, timeout)
	case wire.EvHeld:
		var ok bool
		if dg, ok = heldKey(ev); !ok {
			return ""
		}
	case wire.EvForward:
		var ok bool
		if dg, ok = forwardKey(ev); !ok {
			return ""
		}
	case wire.EvAccount:
		var ok bool
		if dg, ok = accountKey(ev); !ok {
			return ""
		}
	case wire.EvSilent:
		// By the claim, a primary and round, whichever of its receipts
		// shows it: every receipt merges into one record, and none a
		// primary grinds replaces it.
		sl := silentSlot(ev)
		if sl == "" {
			return ""
		}
		dg = sha256.Sum256([]byte(sl))
	default:
		return ""
	}
	h := sha256.Sum256(append([]byte{ev.Kind}, dg[:]...))
	return hex.EncodeToString(h[:])
}

// SameClaim keeps the attestations of as that attest the claim of ev
// (its epoch, kind and round): those a replaced record of ev's slot
// held count for its successor too.
func SameClaim(ev *wire.Charge, as []wire.Attest) []wire.Attest {
	var epoch [32]byte
	var kind uint8
	var round uint32
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if a.Unmarshal(ev.Item) != nil {
			return nil
		}
		epoch, kind, round = a.Epoch, a.Kind, a.Round
	case wire.EvVoid:
		var rl wire.RoundList
		if rl.Unmarshal(ev.Item, proto.GenericLimits()) != nil {
			return nil
		}
		epoch, kind, round = rl.Epoch, wire.AbortNoPub, rl.Round
	case wire.EvSilent:
		var r wire.OnionReceipt
		if r.Unmarshal(ev.Item) != nil {
			return nil
		}
		epoch, kind, round = r.Epoch, wire.AttestSilent, r.Round
	default:
		return nil
	}
	var out []wire.Attest
	for _, at := range as {
		claim := at.Kind == wire.ClaimLack && ev.Kind == wire.EvVoid
		if at.Epoch == epoch && at.Number == ev.Number && (at.Kind == kind || claim) && at.Round == round {
			out = append(out, at)
		}
	}
	return out
}

// MergeAttests adds to into the attestations of from it lacks, at most
// two different ones a signer and kind (the second proves it
// equivocated, which voids its word: ChargeOf; a lack claim is one kind,
// its signer's attestation another), and reports whether any was added.
// Of a round's (kind AbortNoPub), whose signer's words are the parts all
// its attestations say it lacked and the parts any does (ChargeOf),
// another is added only if it changes either within a group's chain
// (below MaxGroupServers): at most seventeen a signer, so that a record
// stays within the wire's bound on a Charge's attestations (65 a signer
// pushed one past it: TestUnionFloodKeepsEvidence), and both words are
// the same whichever came first. An attestation of no absence is kept
// too: it shows the signer's answer.
func MergeAttests(into *wire.Charge, from []wire.Attest) bool {
	grew := false
	for _, a := range from {
		n, dup := 0, false
		all, some := ^uint64(0), uint64(0)
		for _, b := range into.Attests {
			if b.Signer == a.Signer && b.Kind == a.Kind {
				n++
				dup = dup || b == a
				all &= b.Lacking
				some |= b.Lacking
			}
		}
		const parts = 1<<proto.MaxGroupServers - 1
		moves := (all&^a.Lacking|a.Lacking&^some)&parts != 0
		if dup || a.Kind != wire.AbortNoPub && n >= 2 || a.Kind == wire.AbortNoPub && n > 0 && !moves {
			continue
		}
		into.Attests = append(into.Attests, a)
		grew = true
	}
	sort.SliceStable(into.Attests, func(i, j int) bool { return into.Attests[i].Signer < into.Attests[j].Signer })
	return grew
}

// ReplayCharges is the charges of a log's evidence: for each server, the
// numbers of the epochs it is charged for (each once), in order. ctxOf
// gives the certified context of a number. The same evidence and
// certificates give the same charges on every server.
func ReplayCharges(evs [][]byte, ctxOf func(n uint64) (Context, bool)) map[peer.ID][]uint64 {
	byKey := map[string]*wire.Charge{}
	least := map[string]string{} // per EvidenceSlot, its smallest key
	for _, b := range evs {
		var ev wire.Charge
		if ev.Unmarshal(b) != nil {
			continue
		}
		k := ChargeKey(&ev)
		if have := byKey[k]; have != nil {
			MergeAttests(have, ev.Attests)
		} else {
			byKey[k] = &ev
		}
		if sl := EvidenceSlot(&ev); sl != "" && (least[sl] == "" || k < least[sl]) {
			least[sl] = k
		}
	}
	for k, ev := range byKey {
		if sl := EvidenceSlot(ev); sl != "" && least[sl] != k {
			// As logCharge: one record a slot, with the attestations
			// of its claim that the others held.
			keep := byKey[least[sl]]
			MergeAttests(keep, SameClaim(keep, ev.Attests))
			delete(byKey, k)
		}
	}
	seen := map[string]bool{}
	out := map[peer.ID][]uint64{}
	for _, ev := range byKey {
		ctx, ok := ctxOf(ev.Number)
		if !ok {
			continue
		}
		p, _, err := ChargeOf(ev, ctx)
		if err != nil || p == "" {
			continue
		}
		k := p.String() + "/" + hex.EncodeToString(ctx.Epoch[:])
		if !seen[k] {
			seen[k] = true
			out[p] = append(out[p], ev.Number)
		}
	}
	for p := range out {
		sort.Slice(out[p], func(i, j int) bool { return out[p][i] < out[p][j] })
	}
	return out
}
