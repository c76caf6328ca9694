package mix

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// Regression tests of the cryptographic review of package mix: each failed
// before the fix it accompanies.

// forgeUnderIdentity makes a payload whose "signature" verifies against the
// identity pseudonym without any key: R = s·G makes s·G − c·O = R hold.
func forgeUnderIdentity(t *testing.T, b, k int) []byte {
	t.Helper()
	p := &Payload{Kind: KindChunk, Length: 3, Chunk: []byte("bad")}
	raw, err := p.marshal(b, k)
	if err != nil {
		t.Fatal(err)
	}
	s := group.ScalarFromUint64(12345)
	R := group.NewElement().ScalarBaseMult(s)
	copy(raw[len(raw)-SignatureSize:], append(R.Bytes(), s.Bytes()...))
	return raw
}

// TestPayloadIdentityPseudonym: an identity (or missing) pseudonym verifies
// nothing (§2: no identity where a public key is expected). Setup
// never publishes one, but both verifiers are exported and must not accept
// a keyless forgery if a caller's list is wrong.
func TestPayloadIdentityPseudonym(t *testing.T) {
	const b, k = 32, 1
	epoch := testEpoch("identity pseudonym")
	raw := forgeUnderIdentity(t, b, k)
	if err := VerifyPayload(epoch, 0, group.NewElement(), raw, b, k); err == nil {
		t.Error("VerifyPayload accepts a forgery under the identity pseudonym")
	}
	if err := VerifyPayload(epoch, 0, nil, raw, b, k); err == nil {
		t.Error("VerifyPayload accepts a nil pseudonym")
	}
	epoch2, cs, P := testPayloadClients(t, 2)
	good, err := EncodePayload(&Payload{Kind: KindCover}, b, k, epoch2, 0, cs[0], newDetRand("idp"))
	if err != nil {
		t.Fatal(err)
	}
	raws := [][]byte{good, forgeUnderIdentity(t, b, k)}
	if bad := VerifyPayloads(epoch2, 0, []*group.Element{P[0], group.NewElement()}, raws, b, k, nil); len(bad) != 1 || bad[0] != 1 {
		t.Errorf("VerifyPayloads with an identity pseudonym at 1: bad %v, want [1]", bad)
	}
}

// TestClosedServerSecret: after Close (x_s erased, §3) the key can no
// longer prove or run a setup step; before the fix it silently used x = 0
// and published unopened shares with a proof that could not verify.
func TestClosedServerSecret(t *testing.T) {
	rand := newDetRand("closed server secret")
	epoch := testEpoch("closed server secret")
	sks, X := testServers(t, 2, rand)
	_, _, regs := testClients(t, epoch, X, 2, rand)
	sks[0].Close()
	if _, err := sks[0].ProveKey([]byte("ctx"), rand); err == nil {
		t.Error("a closed server key still proves knowledge")
	}
	if _, _, err := SetupStep(epoch, 0, X, sks[0], InitialVectors(regs), rand); err == nil {
		t.Error("a closed server key still runs a setup step")
	}
}

// TestRegistrationLowOrderPIRKey: a registration whose X25519 key is a
// low-order point (every server's X25519 with it is all-zero, which
// crypto/ecdh refuses at round time) is rejected when it is parsed, so that
// it can never reach the final descriptor (§2: no identity where a
// public key is expected).
func TestRegistrationLowOrderPIRKey(t *testing.T) {
	rand := newDetRand("low order pir key")
	epoch := testEpoch("low order pir key")
	_, X := testServers(t, 2, rand)
	_, _, regs := testClients(t, epoch, X, 1, rand)
	enc, err := regs[0].MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRegistration(enc, 2); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{
		"0000000000000000000000000000000000000000000000000000000000000000", // 0
		"0100000000000000000000000000000000000000000000000000000000000000", // 1
		"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", // order 8
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p − 1
	} {
		low, _ := hex.DecodeString(h)
		bad := append([]byte(nil), enc...)
		copy(bad[len(bad)-PIRKeySize:], low)
		if _, err := ParseRegistration(bad, 2); err == nil {
			t.Errorf("registration with low-order X25519 key %s parses", h[:8])
		}
	}
}

// TestSecretsNotFormatted: formatting or logging a secret-holding value
// never prints the secret (before the fix, %v of a StepSecret printed π_s,
// of a ClientSecret its X25519 seed, of a LayerKey both keys).
func TestSecretsNotFormatted(t *testing.T) {
	rand := newDetRand("not formatted")
	f := newStepFixture(t, 2, 5, 0, "not formatted")
	defer f.sec.Close()
	epoch := testEpoch("not formatted")
	_, X := testServers(t, 2, rand)
	cs, _, err := Register(epoch, testRegKey(t, rand).Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sk, _ := NewServerSecret(rand)
	rk, _ := NewRoundKeys(1, rand)
	lk := LayerKey{Enc: [32]byte{0xe1, 0xe2, 0xe3, 0xe4}, MAC: [32]byte{0xa1, 0xa2, 0xa3, 0xa4}}

	perm := fmt.Sprint(f.sec.forward)
	secrets := map[string][]string{
		"step secret":   {perm, fmt.Sprintf("%v", f.sec.forward), strings.Trim(perm, "[]")},
		"client secret": {fmt.Sprint(cs.pirSeed[:]), hex.EncodeToString(cs.pirSeed[:]), fmt.Sprint(cs.pirSeed[:4])},
		"layer key":     {"225 226 227", "225,226,227", "e1e2e3", "161 162 163", "161,162,163", "a1a2a3", "0xe1", "0xa1", "4eLj"},
		"server secret": {hex.EncodeToString(sk.x.Bytes())},
		"round keys":    {hex.EncodeToString(rk.y[0].Bytes()), hex.EncodeToString(rk.yp[0].Bytes())},
	}
	values := map[string][]any{
		"step secret":   {f.sec, *f.sec},
		"client secret": {cs, *cs},
		"layer key":     {lk, &lk, []LayerKey{lk}},
		"server secret": {sk, *sk},
		"round keys":    {rk, *rk},
	}
	for name, vs := range values {
		for _, v := range vs {
			var logged bytes.Buffer
			slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "v", v)
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "v", v)
			out := fmt.Sprintf("%v|%+v|%#v|%s|%x", v, v, v, v, v) + logged.String()
			for _, s := range secrets[name] {
				if s != "" && strings.Contains(out, s) {
					t.Errorf("%s (%T) formats its secret %q: %s", name, v, s, out)
				}
			}
		}
	}
	// A public value still prints: the redaction names the type.
	if !strings.Contains(fmt.Sprint(lk), "LayerKey") {
		t.Errorf("redacted layer key prints %q", fmt.Sprint(lk))
	}
}

// TestOpenLayerWrongSizeFirst: one malformed entry at position 0 fails at
// position 0 alone. Before the fix the first onion set the expected length,
// so every honest onion was named in the MACError, which would start blame
// at honest positions, where the MAC verifies and the accuser (an honest
// server) is then blamed (§8).
func TestOpenLayerWrongSizeFirst(t *testing.T) {
	const n = 4
	f := newRoundFixture(t, 2, n, 1, "wrong size first")
	onions := make([][]byte, n) // S_0's input position i holds client i's onion
	for i := range n {
		onions[i] = f.seal(t, i, 0, []byte("payload of equal size"))
	}
	onions[0] = append(onions[0], 0)
	_, err := f.open(t, 0, 0, onions)
	var me *MACError
	if !errors.As(err, &me) || len(me.Positions) != 1 || me.Positions[0] != 0 {
		t.Fatalf("got %v, want a MACError at position 0 only", err)
	}
	// A batch of equal but wrong sizes still fails everywhere.
	for i := range onions {
		onions[i] = append(f.seal(t, i, 0, []byte("payload of equal size")), 1, 2)
	}
	if _, err := f.open(t, 0, 0, onions); !errors.As(err, &me) || len(me.Positions) != n {
		t.Fatalf("got %v, want all %d positions", err, n)
	}
}

// TestBlameVerifiersMissingData: the blame verifiers run on data a node
// assembles from broadcasts; missing pieces are an error, never a panic.
func TestBlameVerifiersMissingData(t *testing.T) {
	f := newStepFixture(t, 2, 3, 0, "missing data")
	defer f.sec.Close()
	if err := VerifyRoute(f.epoch, 0, f.X, f.inputs, nil, 0, 0, make([]byte, DLEQProofSize)); err == nil {
		t.Error("route proof verifies without a setup result")
	}
	ct := f.inputs[0][1]
	if err := VerifyReencryption(f.epoch, 0, 0, 0, 1, f.X[1], ct, group.Ciphertext{}, make([]byte, DLEQProofSize)); err == nil {
		t.Error("re-encryption proof verifies without an output ciphertext")
	}
}
