package setupstep

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
)

// chain is an epoch of m servers and n registered clients, in memory.
func chain(t *testing.T, m, n int) (Epoch, []crypto.PrivKey, []*mix.ServerSecret, [][]group.Ciphertext) {
	t.Helper()
	ep := Epoch{ID: [32]byte{7}, N: n}
	var privs []crypto.PrivKey
	var sks []*mix.ServerSecret
	for range m {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		sk, err := mix.NewServerSecret(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		privs, sks = append(privs, priv), append(sks, sk)
		ep.Chain, ep.ServerKeys = append(ep.Chain, id), append(ep.ServerKeys, sk.Public())
	}
	var regs []*mix.Registration
	for range n {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		_, reg, err := mix.Register(mix.EpochID(ep.ID), pub, ep.ServerKeys, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	return ep, privs, sks, mix.InitialVectors(regs)
}

// TestCheckNamesOnlyTheSigner: server 0's own step, signed, passes
// server 1's check; a step whose signature fails names nobody; a signed
// step that does not parse, or signed by its server over another
// server's position, is that server's fault.
func TestCheckNamesOnlyTheSigner(t *testing.T) {
	ep, privs, sks, inputs := chain(t, 2, 2)
	r, sec, shareErr, err := Own(ep, 0, sks[0], inputs, rand.Reader)
	if err != nil || sec == nil || shareErr != nil {
		t.Fatalf("own step: %v (secret %v, share fault %v)", err, sec != nil, shareErr)
	}
	raw, err := r.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	st, err := Sign(privs[0], ep.ID, 0, raw)
	if err != nil {
		t.Fatal(err)
	}
	got, shareErr, fault, err := Check(ep, 0, inputs, st, rand.Reader)
	if err != nil || fault != nil || shareErr != nil || got == nil {
		t.Fatalf("a good step: %v, fault %v", err, fault)
	}

	// Signed by another: an error, nobody's fault.
	forged, _ := Sign(privs[1], ep.ID, 0, raw)
	if _, _, fault, err := Check(ep, 0, inputs, forged, rand.Reader); err == nil || fault != nil {
		t.Fatalf("another's signature: %v, fault %v; want an error naming nobody", err, fault)
	}
	// Signed by its server, but cut: the server's fault.
	cut, _ := Sign(privs[0], ep.ID, 0, raw[:len(raw)-1])
	if _, _, fault, err := Check(ep, 0, inputs, cut, rand.Reader); err == nil || fault == nil {
		t.Fatalf("a signed step that does not parse: %v, fault %v; want its server's fault", err, fault)
	}
	// Signed by its server, a byte of the proof changed: the server's fault.
	bent := append([]byte(nil), raw...)
	bent[len(bent)-1] ^= 1
	bad, _ := Sign(privs[0], ep.ID, 0, bent)
	if _, _, fault, err := Check(ep, 0, inputs, bad, rand.Reader); err == nil || fault == nil {
		t.Fatalf("a signed step that does not verify: %v, fault %v; want its server's fault", err, fault)
	}
}
