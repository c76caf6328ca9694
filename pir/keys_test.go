package pir

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// Test vector of docs/proto-pir.md: shared = 00..1f, epoch = 20..3f,
// clientPub = 40..5f, serverPub = 60..7f.
func vectorInputs() (shared []byte, epoch [32]byte, cpub, spub []byte) {
	seq := func(from byte) []byte {
		b := make([]byte, 32)
		for i := range b {
			b[i] = from + byte(i)
		}
		return b
	}
	copy(epoch[:], seq(0x20))
	return seq(0), epoch, seq(0x40), seq(0x60)
}

func TestKeysVector(t *testing.T) {
	shared, epoch, cpub, spub := vectorInputs()
	k, err := DeriveKeys(shared, epoch, cpub, spub)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	const (
		wantMaskKey = "04372ea5e1750a1551e945b507401bd868a728814c62fe234aa0726aaa200276"
		wantPadKey  = "5e7c6d34cab111222dff0a71ef539d59e11c9f1b26b3cac3e3ae85c2fba768f7"
		wantMask    = "065e0f"                                                           // Mask(round 1, slot 2, L 20)
		wantPad     = "6580d99477a9e17643608ca24dc659ea9bc8688de9544ab4b97e34eb2876d781" // Pad(1, 2, 32)
	)
	for _, c := range []struct{ name, got, want string }{
		{"mask key", hex.EncodeToString(k.mask), wantMaskKey},
		{"pad key", hex.EncodeToString(k.pad), wantPadKey},
		{"mask", hex.EncodeToString(k.Mask(1, 2, 20)), wantMask},
		{"pad", hex.EncodeToString(k.Pad(1, 2, 32)), wantPad},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestKeysLayout recomputes §6.2 from the standard library, step by step, as
// docs/proto-pir.md writes it.
func TestKeysLayout(t *testing.T) {
	shared, epoch, cpub, spub := vectorInputs()
	info := append(append([]byte("riffle/v2/pir"), cpub...), spub...)
	seed, _ := hkdf.Key(sha256.New, shared, epoch[:], string(info), 32)
	if got := hex.EncodeToString(seed); got != "67cf52f9bf85e3e605d6ebdef5f88baa176202ba5d92a7e688ccc98b81823e6f" {
		t.Errorf("seed %s differs from docs/proto-pir.md", got)
	}
	mk, _ := hkdf.Key(sha256.New, seed, nil, "riffle/v2/pir-mask", 32)
	pk, _ := hkdf.Key(sha256.New, seed, nil, "riffle/v2/pir-pad", 32)
	stream := func(key []byte, round uint64, slot uint32, n int) []byte {
		blk, _ := aes.NewCipher(key)
		iv := []byte{byte(round >> 56), byte(round >> 48), byte(round >> 40), byte(round >> 32),
			byte(round >> 24), byte(round >> 16), byte(round >> 8), byte(round),
			byte(slot >> 24), byte(slot >> 16), byte(slot >> 8), byte(slot), 0, 0, 0, 0}
		out := make([]byte, n)
		cipher.NewCTR(blk, iv).XORKeyStream(out, out)
		return out
	}
	k, err := DeriveKeys(shared, epoch, cpub, spub)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, c := range []struct {
		round uint64
		slot  uint32
		L     int
	}{{0, 0, 1}, {1, 2, 20}, {1<<40 + 3, 7, 8}, {255, 1 << 31, 1001}} {
		want := stream(mk, c.round, c.slot, MaskBytes(c.L))
		clearUnused(want, c.L)
		if got := k.Mask(c.round, c.slot, c.L); !bytes.Equal(got, want) {
			t.Errorf("mask %+v: %x, want %x", c, got, want)
		}
		if got, want := k.Pad(c.round, c.slot, 100), stream(pk, c.round, c.slot, 100); !bytes.Equal(got, want) {
			t.Errorf("pad %+v: %x, want %x", c, got, want)
		}
	}
}

func TestKeysAgreeAndDiffer(t *testing.T) {
	var epoch [32]byte
	epoch[0] = 1
	cpriv, _ := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{1}, 32))
	spriv, _ := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{2}, 32))
	ck, err := ClientKeys(cpriv, epoch, spriv.PublicKey().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ServerKeys(spriv, epoch, cpriv.PublicKey().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ck.Mask(3, 4, 77), sk.Mask(3, 4, 77)) || !bytes.Equal(ck.Pad(3, 4, 77), sk.Pad(3, 4, 77)) {
		t.Fatal("client and server derive different keys")
	}
	epoch[0] = 2 // another epoch: other keys
	ek, _ := ClientKeys(cpriv, epoch, spriv.PublicKey().Bytes())
	if bytes.Equal(ck.Mask(3, 4, 256), ek.Mask(3, 4, 256)) {
		t.Error("same mask in two epochs")
	}
	// The all-zero public key is of low order: X25519 gives zero, refused.
	if _, err := ClientKeys(cpriv, epoch, make([]byte, 32)); err == nil {
		t.Error("low-order server key accepted")
	}
	if _, err := DeriveKeys(make([]byte, 31), epoch, make([]byte, 32), make([]byte, 32)); err == nil {
		t.Error("short shared secret accepted")
	}
	if _, err := DeriveKeys(make([]byte, 32), epoch, make([]byte, 32), make([]byte, 33)); err == nil {
		t.Error("long public key accepted")
	}
}

// TestMasksNeverRepeat derives masks and pads for many rounds and slots and
// checks that no two (nor a mask and a pad) collide: the nonces are
// computed from (round, slot), never a ratchet, never a repeat.
func TestMasksNeverRepeat(t *testing.T) {
	shared, epoch, cpub, spub := vectorInputs()
	k, _ := DeriveKeys(shared, epoch, cpub, spub)
	defer k.Close()
	seen := map[string]string{}
	add := func(kind string, round uint64, slot uint32, v []byte) {
		id := fmt.Sprintf("%s (round %d, slot %d)", kind, round, slot)
		if prev, ok := seen[string(v)]; ok {
			t.Fatalf("%s repeats %s", id, prev)
		}
		seen[string(v)] = id
	}
	for round := uint64(0); round < 300; round++ {
		for slot := uint32(0); slot < 12; slot++ {
			add("mask", round, slot, k.Mask(round, slot, 128))
			add("pad", round, slot, k.Pad(round, slot, 16))
			// A slot's stream must not continue into the next slot's: the
			// second block of (r, t) differs from the first of (r, t+1).
			p := k.Pad(round, slot, 32)
			add("pad block 2", round, slot, p[16:])
		}
		add("far slot", round, 1<<32-1, k.Mask(round, 1<<32-1, 128))
	}
}

func TestMaskShape(t *testing.T) {
	shared, epoch, cpub, spub := vectorInputs()
	k, _ := DeriveKeys(shared, epoch, cpub, spub)
	long := k.Mask(5, 6, 800)
	for _, L := range []int{1, 2, 7, 8, 9, 15, 16, 17, 799, 800} {
		m := k.Mask(5, 6, L)
		if err := CheckMask(m, L); err != nil {
			t.Errorf("L = %d: %v", L, err)
		}
		// A mask is a prefix of the same keystream, cut at L bits.
		want := append([]byte(nil), long[:MaskBytes(L)]...)
		clearUnused(want, L)
		if !bytes.Equal(m, want) {
			t.Errorf("L = %d: not the keystream's prefix", L)
		}
	}
	buf := make([]byte, 50)
	k.XORPad(5, 6, buf)
	if !bytes.Equal(buf, k.Pad(5, 6, 50)) {
		t.Error("XORPad on zeros differs from Pad")
	}
	k.Close()
	if !bytes.Equal(k.mask, make([]byte, KeySize)) || !bytes.Equal(k.pad, make([]byte, KeySize)) {
		t.Error("Close left key bytes")
	}
	defer func() {
		if recover() == nil {
			t.Error("Mask after Close did not panic")
		}
	}()
	k.Mask(0, 0, 8)
}
