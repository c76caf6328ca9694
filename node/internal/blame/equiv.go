package blame

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Equivocation (docs/protocol.md §3, "One certificate per number"): a
// server's signature of a number's final descriptor and its timeout
// signature of the same number. An honest server signs a final descriptor
// only after its open descriptor, never signs an open descriptor of a
// number whose timeout it signed, and never signs the timeout of a number
// whose final descriptor it signed (node/internal/signed, both kept on
// disk before the signature leaves), so the pair is a corrupt server's.

// EquivItem is the item of an EvEquiv charge: final and timeout, each a
// certificate of one number holding the accused server's signature alone.
func EquivItem(final, timeout *wire.Cert) []byte {
	var e wire.Enc
	e.Bytes(final.Marshal())
	e.Bytes(timeout.Marshal())
	return e.B
}

// ParseEquiv decodes an EvEquiv item: the final part, then the timeout
// part, each of one signature.
func ParseEquiv(item []byte) (final, timeout *wire.Cert, err error) {
	d := wire.Dec{B: item}
	fb := d.Bytes(wire.MaxCertSize, "equivocation final")
	tb := d.Bytes(wire.MaxCertSize, "equivocation timeout")
	if err := d.Done("equivocation"); err != nil {
		return nil, nil, err
	}
	final, timeout = new(wire.Cert), new(wire.Cert)
	if err := final.Unmarshal(fb); err != nil {
		return nil, nil, err
	}
	if err := timeout.Unmarshal(tb); err != nil {
		return nil, nil, err
	}
	if final.Kind != wire.CertFinal || timeout.Kind != wire.CertTimeout || final.Number != timeout.Number ||
		len(final.Sigs) != 1 || len(timeout.Sigs) != 1 {
		return nil, nil, errors.New("blame: equivocation is a final and a timeout signature of one number")
	}
	return final, timeout, nil
}

// equivSigner is the server whose two signatures item holds (unchecked).
func equivSigner(final *wire.Cert) peer.ID {
	return peer.ID(final.Chain[final.Sigs[0].Index])
}

// equivKey names an equivocation by what was signed and by whom.
func equivKey(final, timeout *wire.Cert) [32]byte {
	fd := proto.FinalCertDigest(final.Number, final.Epoch, final.Digest, final.Cands)
	td := proto.TimeoutDigest(timeout.Number, timeout.Chain)
	return sha256.Sum256(bytes.Join([][]byte{fd[:], td[:], []byte(equivSigner(final))}, nil))
}

// chargeEquiv is ChargeOf of an EvEquiv charge: its signer, once both
// signatures verify, the final one in the number's certified chain.
func chargeEquiv(ev *wire.Charge, ctx Context) (peer.ID, string, error) {
	if len(ev.Attests) != 0 {
		return "", "", errors.New("blame: equivocation with attestations")
	}
	final, timeout, err := ParseEquiv(ev.Item)
	if err != nil {
		return "", "", err
	}
	if final.Number != ev.Number || final.Epoch != ctx.Epoch || len(final.Chain) != len(ctx.Chain) {
		return "", "", errors.New("blame: equivocation of another epoch than its number's certificate")
	}
	for i, b := range final.Chain {
		if peer.ID(b) != ctx.Chain[i] {
			return "", "", errors.New("blame: equivocation over another chain than its number's certificate")
		}
	}
	p := equivSigner(final)
	if peer.ID(timeout.Chain[timeout.Sigs[0].Index]) != p {
		return "", "", errors.New("blame: equivocation of two signers")
	}
	if err := proto.VerifyPeerSig(p, proto.FinalCertDigest(final.Number, final.Epoch, final.Digest, final.Cands), final.Sigs[0].Sig); err != nil {
		return "", "", fmt.Errorf("blame: equivocation's final signature: %w", err)
	}
	if err := proto.VerifyPeerSig(p, proto.TimeoutDigest(timeout.Number, timeout.Chain), timeout.Sigs[0].Sig); err != nil {
		return "", "", fmt.Errorf("blame: equivocation's timeout signature: %w", err)
	}
	return p, fmt.Sprintf("signed the final descriptor of %d and its timeout", ev.Number), nil
}
