package mix

import (
	"bytes"
	"crypto/ed25519"
	"slices"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

func TestServerKeyPoK(t *testing.T) {
	rand := newDetRand("server key")
	sk, err := NewServerSecret(rand)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewServerSecret(rand)
	ctx := KeyContext(7, [32]byte{1}, []byte("peer A"))
	proof, err := sk.ProveKey(ctx, rand)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyKey(sk.Public(), ctx, proof); err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), proof...)
	flipped[3] ^= 1
	for name, err := range map[string]error{
		"other number":    VerifyKey(sk.Public(), KeyContext(8, [32]byte{1}, []byte("peer A")), proof),
		"other nonce":     VerifyKey(sk.Public(), KeyContext(7, [32]byte{2}, []byte("peer A")), proof),
		"other peer":      VerifyKey(sk.Public(), KeyContext(7, [32]byte{1}, []byte("peer B")), proof),
		"other key":       VerifyKey(other.Public(), ctx, proof),
		"identity key":    VerifyKey(group.NewElement(), ctx, proof),
		"flipped byte":    VerifyKey(sk.Public(), ctx, flipped),
		"short proof":     VerifyKey(sk.Public(), ctx, proof[:63]),
		"non-canonical s": VerifyKey(sk.Public(), ctx, append(proof[:32:32], bytes.Repeat([]byte{0xff}, 32)...)),
	} {
		if err == nil {
			t.Errorf("%s: key proof verifies", name)
		}
	}
	sk.Close()
	if sk.x.Equal(group.NewScalar()) != 1 {
		t.Error("Close left x_s")
	}
}

func TestRegistration(t *testing.T) {
	rand := newDetRand("registration")
	epoch := testEpoch("registration")
	_, X := testServers(t, 3, rand)
	key := testRegKey(t, rand)
	pub := key.Public().(ed25519.PublicKey)
	cs, reg, err := Register(epoch, pub, X, rand)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRegistration(epoch, pub, X, reg); err != nil {
		t.Fatal(err)
	}
	keys := mustKeys(X, 0)
	enc, err := reg.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != RegistrationSize(3) {
		t.Fatalf("%d bytes, want %d", len(enc), RegistrationSize(3))
	}
	back, err := ParseRegistration(enc, 3)
	if err != nil {
		t.Fatal(err)
	}
	enc2, _ := back.MarshalBinary()
	if !bytes.Equal(enc, enc2) {
		t.Fatal("round trip changed the registration")
	}
	if err := VerifyRegistration(epoch, pub, X, back); err != nil {
		t.Fatal(err)
	}
	otherPub := testRegKey(t, rand).Public().(ed25519.PublicKey)
	otherX := append([]*group.Element(nil), X...)
	otherX[1] = group.NewElement().Add(X[1], group.Base())
	g := group.Base()
	edit := func(f func(r *Registration)) *Registration {
		r, _ := ParseRegistration(enc, 3)
		f(r)
		return r
	}
	// Another client takes this registration and re-randomises every
	// ciphertext: it cannot prove knowledge of the new randomness, and the
	// old proofs are bound to the old ciphertexts and registration key.
	rerand := edit(func(r *Registration) {
		for j := range r.Ciphertexts {
			k := keys[j]
			r.Ciphertexts[j].A.Add(r.Ciphertexts[j].A, g)
			r.Ciphertexts[j].B.Add(r.Ciphertexts[j].B, k)
		}
	})
	for name, err := range map[string]error{
		"other epoch":            VerifyRegistration(testEpoch("other"), pub, X, reg),
		"other registration key": VerifyRegistration(epoch, otherPub, X, reg),
		"other server key":       VerifyRegistration(epoch, pub, otherX, reg),
		"fewer servers":          VerifyRegistration(epoch, pub, X[:2], reg),
		"ciphertext B changed":   VerifyRegistration(epoch, pub, X, edit(func(r *Registration) { r.Ciphertexts[1].B.Add(r.Ciphertexts[1].B, g) })),
		"ciphertext A changed":   VerifyRegistration(epoch, pub, X, edit(func(r *Registration) { r.Ciphertexts[3].A.Add(r.Ciphertexts[3].A, g) })),
		"proofs swapped":         VerifyRegistration(epoch, pub, X, edit(func(r *Registration) { r.Proofs[0], r.Proofs[1] = r.Proofs[1], r.Proofs[0] })),
		"components swapped": VerifyRegistration(epoch, pub, X, edit(func(r *Registration) {
			r.Ciphertexts[0], r.Ciphertexts[1] = r.Ciphertexts[1], r.Ciphertexts[0]
			r.Proofs[0], r.Proofs[1] = r.Proofs[1], r.Proofs[0]
		})),
		"proof byte flipped":           VerifyRegistration(epoch, pub, X, edit(func(r *Registration) { r.Proofs[2][7] ^= 1 })),
		"re-randomised by another key": VerifyRegistration(epoch, otherPub, X, rerand),
		"re-randomised, same key":      VerifyRegistration(epoch, pub, X, rerand),
		"identity component":           VerifyRegistration(epoch, pub, X, edit(func(r *Registration) { r.Ciphertexts[0].B = group.NewElement() })),
	} {
		if err == nil {
			t.Errorf("%s: registration verifies", name)
		}
	}
	// A client that shares r across components is rejected (§4.1 v2).
	_, shared := registerSharedR(t, epoch, pub, X, rand)
	if err := VerifyRegistration(epoch, pub, X, shared); err == nil || !strings.Contains(err.Error(), "randomness") {
		t.Errorf("shared randomness: got %v", err)
	}
	// Parsing is strict.
	bad := append([]byte(nil), enc...)
	clear(bad[:32]) // identity A
	if _, err := ParseRegistration(bad, 3); err == nil {
		t.Error("identity component parses")
	}
	if _, err := ParseRegistration(enc, 2); err == nil {
		t.Error("registration parses for another m")
	}
	// Duplicates across registrations.
	_, reg2, _ := Register(epoch, otherPub, X, rand)
	if err := CheckDistinct([]*Registration{reg, reg2}); err != nil {
		t.Fatal(err)
	}
	if err := CheckDistinct([]*Registration{reg, reg2, back}); err == nil || !strings.Contains(err.Error(), "0 and 2") {
		t.Errorf("duplicate registration: got %v", err)
	}
	if reg.CiphertextHash() == reg2.CiphertextHash() || reg.CiphertextHash() != back.CiphertextHash() {
		t.Error("ciphertext hash does not follow the ciphertexts")
	}
	cs.Close()
	if _, err := cs.PIRKey(); err == nil {
		t.Error("closed client secret still yields its PIR key")
	}
	if _, err := cs.LayerKeys(epoch, 0, nil, nil); err == nil {
		t.Error("closed client secret still derives layer keys")
	}
}

func TestVerifyRegistrations(t *testing.T) {
	// Made by Register, and parsed from their bytes as servers get them
	// (whose challenges hash the parsed bytes).
	for _, parsed := range []bool{false, true} {
		rand := newDetRand("registrations")
		epoch := testEpoch("registrations")
		_, X := testServers(t, 3, rand)
		_, keys, regs := testClients(t, epoch, X, 6, rand)
		if parsed {
			for i, reg := range regs {
				b, err := reg.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if regs[i], err = ParseRegistration(b, 3); err != nil {
					t.Fatal(err)
				}
			}
		}
		pubs := make([]ed25519.PublicKey, len(keys))
		for i, k := range keys {
			pubs[i] = k.Public().(ed25519.PublicKey)
		}
		bad, err := VerifyRegistrations(epoch, pubs, X, regs, rand)
		if err != nil || len(bad) != 0 {
			t.Fatalf("parsed %v: honest registrations: bad %v, err %v", parsed, bad, err)
		}
		bad, _ = VerifyRegistrations(testEpoch("other"), pubs, X, regs, rand)
		if len(bad) != 6 {
			t.Fatalf("parsed %v: another epoch: bad %v, want all", parsed, bad)
		}
		regs[1].Proofs[2][9] ^= 1
		// A replaced element: a parsed registration's kept bytes no longer
		// apply, and the proof fails.
		regs[2].Ciphertexts[1].B = group.NewElement().Add(regs[2].Ciphertexts[1].B, group.Base())
		pubs[4] = pubs[3]
		regs[5] = &Registration{Ciphertexts: regs[5].Ciphertexts[:2], Proofs: regs[5].Proofs[:2]}
		bad, err = VerifyRegistrations(epoch, pubs, X, regs, rand)
		if err != nil || !slices.Equal(bad, []int{1, 2, 4, 5}) {
			t.Fatalf("parsed %v: bad %v (err %v), want [1 2 4 5]", parsed, bad, err)
		}
		for i, reg := range regs {
			if single := VerifyRegistration(epoch, pubs[i], X, reg); (single == nil) == slices.Contains(bad, i) {
				t.Fatalf("parsed %v: slot %d: batch and single verdicts differ", parsed, i)
			}
		}
		if _, err := VerifyRegistrations(epoch, pubs[:2], X, regs, rand); err == nil {
			t.Fatal("mismatched lists accepted")
		}
	}
}

// TestRegistrationDecrypts checks the ciphertexts' content: component j
// opens to U_{i,j} = u_{i,j}·G under x_0 + … + x_j, component m to P_i.
func TestRegistrationDecrypts(t *testing.T) {
	rand := newDetRand("decrypts")
	epoch := testEpoch("decrypts")
	sks, X := testServers(t, 3, rand)
	cs, reg, err := Register(epoch, testRegKey(t, rand).Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	for j, ct := range reg.Ciphertexts {
		k := group.NewScalar()
		for s := 0; s <= min(j, 2); s++ {
			k.Add(k, sks[s].x)
		}
		M := group.NewElement().Subtract(ct.B, group.NewElement().ScalarMult(k, ct.A))
		want := cs.P
		if j < 3 {
			want = group.NewElement().ScalarBaseMult(cs.u[j])
		}
		if M.Equal(want) != 1 {
			t.Errorf("component %d does not decrypt to its plaintext", j)
		}
	}
}

func TestRoundKeyProof(t *testing.T) {
	rand := newDetRand("round key proof")
	epoch := testEpoch("rk")
	rk, err := NewRoundKeys(4, rand)
	if err != nil {
		t.Fatal(err)
	}
	Y, Yp := rk.Public()
	u, _ := nonZeroScalar(rand)
	U := group.NewElement().ScalarBaseMult(u)
	Z, proof, err := ProveRoundKey(epoch, 1, 2, 5, MACKey, rk, U, rand)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[2], U, Z, proof); err != nil {
		t.Fatal(err)
	}
	// The revealed share gives the MAC key that the server and the client use,
	// and not the encryption key.
	keys, err := ServerLayerKeys(epoch, 1, 2, rk, []*group.Element{U})
	if err != nil {
		t.Fatal(err)
	}
	mk := ShareKey(epoch, 1, 2, MACKey, Z)
	if !equalKeys(mk, keys[0].MAC) || equalKeys(mk, keys[0].Enc) {
		t.Fatal("revealed share does not give the layer's MAC key alone")
	}
	Ze, pe, err := ProveRoundKey(epoch, 1, 2, 5, EncKey, rk, U, rand)
	if err != nil {
		t.Fatal(err)
	}
	if !equalKeys(ShareKey(epoch, 1, 2, EncKey, Ze), keys[0].Enc) {
		t.Fatal("revealed enc share does not give the encryption key")
	}
	wrongZ := group.NewElement().Add(Z, group.Base())
	flipped := append([]byte(nil), proof...)
	flipped[33] ^= 1
	for name, err := range map[string]error{
		"enc key with mac proof": VerifyRoundKey(epoch, 1, 2, 5, EncKey, Y[2], U, Z, proof),
		"kind changed":           VerifyRoundKey(epoch, 1, 2, 5, EncKey, Yp[2], U, Z, proof),
		"other round key":        VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[3], U, Z, proof),
		"other round":            VerifyRoundKey(epoch, 1, 3, 5, MACKey, Yp[2], U, Z, proof),
		"other server":           VerifyRoundKey(epoch, 0, 2, 5, MACKey, Yp[2], U, Z, proof),
		"other position":         VerifyRoundKey(epoch, 1, 2, 6, MACKey, Yp[2], U, Z, proof),
		"other epoch":            VerifyRoundKey(testEpoch("x"), 1, 2, 5, MACKey, Yp[2], U, Z, proof),
		"wrong share":            VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[2], U, wrongZ, proof),
		"enc share as mac":       VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[2], U, Ze, pe),
		"flipped byte":           VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[2], U, Z, flipped),
		"identity share":         VerifyRoundKey(epoch, 1, 2, 5, MACKey, Yp[2], group.NewElement(), Z, proof),
		"unknown kind":           VerifyRoundKey(epoch, 1, 2, 5, KeyKind(9), Yp[2], U, Z, proof),
	} {
		if err == nil {
			t.Errorf("%s: round key proof verifies", name)
		}
	}
	if _, _, err := ProveRoundKey(epoch, 1, 4, 5, MACKey, rk, U, rand); err == nil {
		t.Error("proof for a round past R")
	}
	rk.Close()
	if _, _, err := ProveRoundKey(epoch, 1, 2, 5, MACKey, rk, U, rand); err == nil {
		t.Error("closed round keys still prove")
	}
}

func TestReencryptionProof(t *testing.T) {
	rand := newDetRand("reenc")
	epoch := testEpoch("reenc")
	_, X := testServers(t, 2, rand)
	key := X[1]
	r0, _ := nonZeroScalar(rand)
	in := group.Ciphertext{A: group.NewElement().ScalarBaseMult(r0), B: group.NewElement().ScalarMult(r0, key)}
	r, _ := nonZeroScalar(rand)
	out := group.Ciphertext{A: group.NewElement().Add(in.A, group.NewElement().ScalarBaseMult(r)), B: group.NewElement().Add(in.B, group.NewElement().ScalarMult(r, key))}
	proof, err := ProveReencryption(epoch, 1, 3, 4, 2, key, in, out, r, rand)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyReencryption(epoch, 1, 3, 4, 2, key, in, out, proof); err != nil {
		t.Fatal(err)
	}
	moved := group.Ciphertext{A: out.A, B: group.NewElement().Add(out.B, group.Base())}
	for name, err := range map[string]error{
		"plaintext changed":  VerifyReencryption(epoch, 1, 3, 4, 2, key, in, moved, proof),
		"other key":          VerifyReencryption(epoch, 1, 3, 4, 2, X[0], in, out, proof),
		"other component":    VerifyReencryption(epoch, 1, 3, 4, 1, key, in, out, proof),
		"other input pos":    VerifyReencryption(epoch, 1, 2, 4, 2, key, in, out, proof),
		"in and out swapped": VerifyReencryption(epoch, 1, 3, 4, 2, key, out, in, proof),
		"other epoch":        VerifyReencryption(testEpoch("y"), 1, 3, 4, 2, key, in, out, proof),
	} {
		if err == nil {
			t.Errorf("%s: re-encryption proof verifies", name)
		}
	}
	// A proof with the wrong scalar does not verify.
	bad, _ := ProveReencryption(epoch, 1, 3, 4, 2, key, in, moved, r, rand)
	if VerifyReencryption(epoch, 1, 3, 4, 2, key, in, moved, bad) == nil {
		t.Error("re-encryption proof of a changed plaintext verifies")
	}
}

// TestClose checks that every secret-holding type erases its secrets.
func TestClose(t *testing.T) {
	rand := newDetRand("close")
	zero := group.NewScalar()
	rk, _ := NewRoundKeys(3, rand)
	rk.Close()
	for r := range 3 {
		if rk.y[r].Equal(zero) != 1 || rk.yp[r].Equal(zero) != 1 {
			t.Fatalf("round %d keys survive Close", r)
		}
	}
	_, X := testServers(t, 2, rand)
	cs, _, err := Register(testEpoch("close"), testRegKey(t, rand).Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if cs.q.Equal(zero) != 1 || cs.u[0].Equal(zero) != 1 || cs.u[1].Equal(zero) != 1 || cs.pirSeed != [32]byte{} {
		t.Fatal("client secrets survive Close")
	}
	f := newStepFixture(t, 2, 3, 0, "close step")
	r := f.sec.wit.R[1][0]
	f.sec.Close()
	if r.Equal(zero) != 1 || f.sec.forward != nil || f.sec.wit.Pi != nil {
		t.Fatal("step secrets survive Close")
	}
	k := LayerKey{Enc: [32]byte{1}, MAC: [32]byte{2}}
	keys := []LayerKey{k}
	CloseLayerKeys(keys)
	if keys[0] != (LayerKey{}) {
		t.Fatal("layer keys survive Close")
	}
}
