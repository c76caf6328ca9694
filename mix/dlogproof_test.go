package mix

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// Known answers: the share proofs of a client registered from the seeded
// reader (two servers), at slot 5, for component 0 (U_{i,0}) and
// component 2 (P_i), each proof made with the reader seeded "share dlog
// proof". A change of tag, statement or encoding shows here.
var shareVectors = map[int][2]string{
	0: {"7ee2f62770d2dc1784eb779410c222dfb371a4e48f01e0434ee00e373bea9f4c", "c418d1145ef5c31d418d532f8977145942a722f45e8a512677d96429fc16ca444bf5a77ff870b881b6420f609a2eefccd2d7375d1b13ff0f04eded7f58767904"},
	2: {"945313cab0153108f7a39bec6cfe4afae65bd2816124879cec6c98320c663724", "beb7871940450bbb9249f534ceaf87fe1c5a6d31a09319b3337ea8f98734a70ef1f87c3241f86b349ccdc02401e339523ba0dcb8b60518163e9c389d636b470a"},
}

func shareVectorClient(t testing.TB) (EpochID, *ClientSecret) {
	t.Helper()
	rand := newDetRand("share dlog vector")
	_, X := testServers(t, 2, rand)
	reg := testRegKey(t, rand)
	epoch := testEpoch("share dlog")
	cs, _, err := Register(epoch, reg.Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	return epoch, cs
}

func TestShareProofVector(t *testing.T) {
	epoch, cs := shareVectorClient(t)
	defer cs.Close()
	for comp, want := range shareVectors {
		V, err := cs.Share(comp)
		if err != nil {
			t.Fatal(err)
		}
		proof, err := cs.ProveShare(epoch, 5, comp, newDetRand("share dlog proof"))
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(V.Bytes()); got != want[0] {
			t.Errorf("component %d value %s, want %s", comp, got, want[0])
		}
		if got := hex.EncodeToString(proof); got != want[1] {
			t.Errorf("component %d proof %s, want %s", comp, got, want[1])
		}
		// The vector verifies from its bytes alone.
		vb, _ := hex.DecodeString(want[0])
		pb, _ := hex.DecodeString(want[1])
		Vw, err := group.DecodeElement(vb)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyShare(epoch, 5, comp, Vw, pb); err != nil {
			t.Errorf("component %d vector: %v", comp, err)
		}
	}
	if P, _ := cs.Share(2); P.Equal(cs.Pseudonym()) != 1 {
		t.Error("component m is not the pseudonym")
	}
}

// Every change to the statement or the proof fails, and a copier that
// knows only the value cannot prove it.
func TestShareProofNegative(t *testing.T) {
	epoch, cs := shareVectorClient(t)
	defer cs.Close()
	rand := newDetRand("share dlog negative")
	V, _ := cs.Share(1)
	proof, err := cs.ProveShare(epoch, 7, 1, rand)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyShare(epoch, 7, 1, V, proof); err != nil {
		t.Fatalf("honest proof: %v", err)
	}
	other := testEpoch("other")
	U0, _ := cs.Share(0)
	bad := map[string]func() error{
		"other epoch":     func() error { return VerifyShare(other, 7, 1, V, proof) },
		"other slot":      func() error { return VerifyShare(epoch, 8, 1, V, proof) },
		"other component": func() error { return VerifyShare(epoch, 7, 0, V, proof) },
		"other value":     func() error { return VerifyShare(epoch, 7, 1, U0, proof) },
		"identity value":  func() error { return VerifyShare(epoch, 7, 1, group.NewElement(), proof) },
		"nil value":       func() error { return VerifyShare(epoch, 7, 1, nil, proof) },
		"component range": func() error { return VerifyShare(epoch, 7, MaxServers+1, V, proof) },
		"short":           func() error { return VerifyShare(epoch, 7, 1, V, proof[:63]) },
		"long":            func() error { return VerifyShare(epoch, 7, 1, V, append(append([]byte(nil), proof...), 0)) },
		"empty":           func() error { return VerifyShare(epoch, 7, 1, V, nil) },
		"non-canonical s": func() error {
			p := append([]byte(nil), proof...)
			for i := 32; i < 64; i++ {
				p[i] = 0xff
			}
			return VerifyShare(epoch, 7, 1, V, p)
		},
		"another key's proof": func() error {
			// A copier knows V but not its log: the best it can do is
			// a proof for a key it holds, which does not verify for V.
			x, _ := group.RandomScalar(rand)
			X := group.NewElement().ScalarBaseMult(x)
			p, err := proveSchnorr(x, X, shareDlogStatement(epoch, 7, 1), tagShareDlog, rand)
			if err != nil {
				return nil
			}
			return VerifyShare(epoch, 7, 1, V, p)
		},
	}
	for i := range proof {
		p := append([]byte(nil), proof...)
		p[i] ^= 1
		if VerifyShare(epoch, 7, 1, V, p) == nil {
			t.Errorf("proof with byte %d flipped verifies", i)
		}
	}
	for name, f := range bad {
		if f() == nil {
			t.Errorf("%s: verifies", name)
		}
	}
	if _, err := cs.ProveShare(epoch, 7, 3, rand); err == nil {
		t.Error("component m+1 proves")
	}
	cs.Close()
	if _, err := cs.ProveShare(epoch, 7, 1, rand); err == nil {
		t.Error("closed secret proves")
	}
}

// An aggregate key A_{s,j} that is the identity is refused, as a single
// key is (§4.1 v3): keys X and −X sum to it.
func TestAggregateKeyIdentity(t *testing.T) {
	_, X := testServers(t, 3, newDetRand("aggregate identity"))
	neg := group.NewElement().Negate(X[0])
	keys := []*group.Element{X[0], neg, X[2]}
	if _, err := AggregateKeys(keys, 0); !errors.Is(err, group.ErrIdentity) {
		t.Errorf("A_{0,1} = identity: %v", err)
	}
	if _, err := AggregateKeys(keys, 1); err != nil {
		t.Errorf("from server 1 no aggregate is the identity: %v", err)
	}
	if _, _, err := Register(testEpoch("x"), make(ed25519.PublicKey, 32), keys, newDetRand("r")); !errors.Is(err, group.ErrIdentity) {
		t.Errorf("registration under an identity aggregate: %v", err)
	}
}

// FuzzVerifyShare feeds arbitrary proof bytes and values to the decoder:
// it never panics, and only the honest proof verifies.
func FuzzVerifyShare(f *testing.F) {
	epoch, cs := shareVectorClient(f)
	V, _ := cs.Share(0)
	proof, err := cs.ProveShare(epoch, 5, 0, newDetRand("share dlog fuzz"))
	if err != nil {
		f.Fatal(err)
	}
	cs.Close()
	f.Add(V.Bytes(), proof, uint32(5))
	f.Add(make([]byte, 32), make([]byte, 64), uint32(0))
	f.Fuzz(func(t *testing.T, vb, pb []byte, slot uint32) {
		W, err := group.DecodeElement(vb)
		if err != nil {
			return
		}
		// A proof for another value or slot verifies only with the
		// log, which the fuzzer does not have: any such success is a
		// forgery.
		if VerifyShare(epoch, slot, 0, W, pb) == nil && (W.Equal(V) != 1 || slot != 5) {
			t.Fatalf("forged proof verifies: value %x slot %d", vb, slot)
		}
	})
}

// CheckAggregateKeys finds an identity sum at any (s, j), not only from
// server 0.
func TestCheckAggregateKeys(t *testing.T) {
	_, X := testServers(t, 4, newDetRand("check aggregate"))
	if err := CheckAggregateKeys(X); err != nil {
		t.Fatalf("honest keys: %v", err)
	}
	// X_1 + X_2 + X_3 = 0 with X_3 = −(X_1 + X_2): found at (1, 3).
	bad := append([]*group.Element(nil), X...)
	bad[3] = group.NewElement().Add(X[1], X[2])
	bad[3].Negate(bad[3])
	if err := CheckAggregateKeys(bad); !errors.Is(err, group.ErrIdentity) {
		t.Errorf("A_{1,3} = identity: %v", err)
	}
	if _, err := AggregateKeys(bad, 0); err != nil {
		t.Errorf("from server 0 the sums are not the identity: %v", err)
	}
	if _, err := AggregateKeys(bad, 1); !errors.Is(err, group.ErrIdentity) {
		t.Errorf("AggregateKeys(1): %v", err)
	}
	bad[3] = group.NewElement()
	if err := CheckAggregateKeys(bad); !errors.Is(err, group.ErrIdentity) {
		t.Errorf("single identity key: %v", err)
	}
}

// A copy of another client's value, sealed under a new registration key,
// passes every registration check, yet its holder cannot prove the value's
// discrete log: only the proof of §4.1 v3 tells the two apart.
func TestSealedCopyPassesRegistrationNotProof(t *testing.T) {
	rand := newDetRand("sealed copy")
	_, X := testServers(t, 2, rand)
	epoch := testEpoch("sealed copy")
	victimKey, copierKey := testRegKey(t, rand), testRegKey(t, rand)
	victim, _, err := Register(epoch, victimKey.Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	copier, reg, err := Register(epoch, copierKey.Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	U0, _ := victim.Share(0)
	ct, pf, err := SealComponent(epoch, copierKey.Public().(ed25519.PublicKey), X, 0, U0, rand)
	if err != nil {
		t.Fatal(err)
	}
	reg.Ciphertexts[0], reg.Proofs[0] = ct, pf
	if err := VerifyRegistration(epoch, copierKey.Public().(ed25519.PublicKey), X, reg); err != nil {
		t.Fatalf("the copy fails registration: %v", err)
	}
	vp, _ := victim.ProveShare(epoch, 4, 0, rand)
	cp, _ := copier.ProveShare(epoch, 3, 0, rand)
	if err := VerifyShare(epoch, 4, 0, U0, vp); err != nil {
		t.Errorf("victim cannot prove: %v", err)
	}
	if VerifyShare(epoch, 3, 0, U0, cp) == nil {
		t.Error("copier proves a value it did not draw")
	}
	if VerifyShare(epoch, 3, 0, U0, vp) == nil {
		t.Error("the victim's proof replays at the copier's slot")
	}
}
