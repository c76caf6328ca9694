package sigcache

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

// TestVerifyRemembersOnlySuccess: a valid signature verifies and is
// remembered; a changed message, signature or key is refused every time,
// also after the valid one was remembered; a key of the wrong size is
// refused without a panic.
func TestVerifyRemembersOnlySuccess(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	msg := []byte("round 7, slot 3")
	sig := ed25519.Sign(priv, msg)
	if Seen(Key("ed25519", pub, msg, sig)) {
		t.Fatal("remembered before any verification")
	}
	for range 2 {
		if !Verify(pub, msg, sig) {
			t.Fatal("valid signature refused")
		}
	}
	if !Seen(Key("ed25519", pub, msg, sig)) {
		t.Fatal("valid signature not remembered")
	}
	bad := append([]byte(nil), sig...)
	bad[5] ^= 1
	for range 2 {
		if Verify(pub, msg, bad) {
			t.Error("changed signature accepted")
		}
		if Verify(pub, []byte("round 7, slot 4"), sig) {
			t.Error("changed message accepted")
		}
		if Verify(other, msg, sig) {
			t.Error("other key accepted")
		}
	}
	if Seen(Key("ed25519", pub, msg, bad)) {
		t.Error("a failed verification was remembered")
	}
	if Verify(pub[:31], msg, sig) {
		t.Error("short key accepted")
	}
}

// TestKeyFramesParts: parts are length-prefixed, so moving bytes from one
// part to the next gives another key.
func TestKeyFramesParts(t *testing.T) {
	if Key("d", []byte("ab"), []byte("c")) == Key("d", []byte("a"), []byte("bc")) {
		t.Error("two framings share a key")
	}
	if Key("d", []byte("a")) == Key("e", []byte("a")) {
		t.Error("two domains share a key")
	}
}

// TestBounded: the table never holds more than two generations, and the
// newest entries stay.
func TestBounded(t *testing.T) {
	var last [32]byte
	for i := range 3*genSize + 5 {
		last = Key("n", []byte{byte(i), byte(i >> 8), byte(i >> 16)})
		Add(last)
	}
	mu.Lock()
	n := len(cur) + len(old)
	mu.Unlock()
	if n > 2*genSize {
		t.Errorf("%d entries, bound %d", n, 2*genSize)
	}
	if !Seen(last) {
		t.Error("the newest entry was evicted")
	}
}
