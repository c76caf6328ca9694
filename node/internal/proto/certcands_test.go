package proto

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestCertCandsSigned (§3 "Admission to chains"): a final or abort
// certificate's candidates are under its signatures, so none can be added,
// dropped or swapped on the way; without candidates the digests are those
// of a certificate that has none.
func TestCertCandsSigned(t *testing.T) {
	var keys []crypto.PrivKey
	var chain []peer.ID
	for range 3 {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		keys, chain = append(keys, priv), append(chain, id)
	}
	order := []int{0, 1, 2}
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			if bytes.Compare([]byte(chain[order[j]]), []byte(chain[order[i]])) < 0 {
				order[i], order[j] = order[j], order[i]
			}
		}
	}
	var ids []peer.ID
	var ks []crypto.PrivKey
	for _, i := range order {
		ids, ks = append(ids, chain[i]), append(ks, keys[i])
	}
	cands := [][]byte{[]byte("cand-a"), []byte("cand-b")}
	c := &wire.Cert{Kind: wire.CertFinal, Number: 7, Epoch: [32]byte{1}, Digest: [32]byte{2}, Chain: ChainIDs(ids), Cands: cands}
	for i, k := range ks {
		sig, err := Sign(k, FinalCertDigest(c.Number, c.Epoch, c.Digest, c.Cands))
		if err != nil {
			t.Fatal(err)
		}
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sig})
	}
	if err := CheckCertSigs(c, ids); err != nil {
		t.Fatalf("a certificate with its signed candidates: %v", err)
	}
	for name, alt := range map[string][][]byte{"dropped": cands[:1], "added": append(cands[:2:2], []byte("cand-c")), "none": nil, "swapped": {[]byte("cand-a"), []byte("cand-x")}} {
		d := *c
		d.Cands = alt
		if CheckCertSigs(&d, ids) == nil {
			t.Errorf("candidates %s: the signatures still verify", name)
		}
	}
	if FinalCertDigest(7, c.Epoch, c.Digest, nil) != TaggedHash(TagDescFinal, u64(7), c.Epoch[:], c.Digest[:]) {
		t.Error("the final digest without candidates changed")
	}
	if OpenCertDigest(7, c.Epoch, nil) != TaggedHash(TagDescOpen, u64(7), c.Epoch[:]) {
		t.Error("the open digest without candidates changed")
	}
}
