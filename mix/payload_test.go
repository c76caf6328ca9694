package mix

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

func testPayloadClients(t testing.TB, n int) (EpochID, []*ClientSecret, []*group.Element) {
	t.Helper()
	rand := newDetRand("payload clients")
	epoch := testEpoch("payload")
	_, X := testServers(t, 2, rand)
	cs, _, _ := testClients(t, epoch, X, n, rand)
	P := make([]*group.Element, n)
	for i, c := range cs {
		P[i] = c.Pseudonym()
	}
	return epoch, cs, P
}

func TestPayloadEncoding(t *testing.T) {
	const b, k = 100, 3
	epoch, cs, P := testPayloadClients(t, 1)
	rand := newDetRand("payload")
	p := &Payload{Kind: KindChunk, Length: 5, Chunk: []byte("hello"), Requests: [][RequestSize]byte{{1}, {2}}}
	raw, err := EncodePayload(p, b, k, epoch, 9, cs[0], rand)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != PayloadSize(b, k) || PayloadSize(b, k) != 8+32*k+b+64 {
		t.Fatalf("payload of %d bytes, want %d", len(raw), 8+32*k+b+64)
	}
	if raw[0] != KindChunk || raw[1] != PayloadVersion || raw[2] != 0 || raw[3] != 0 || binary.BigEndian.Uint32(raw[4:8]) != 5 {
		t.Fatalf("header % x", raw[:8])
	}
	got, err := DecodePayload(raw, b, k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindChunk || got.Length != 5 || string(got.Chunk) != "hello" || len(got.Requests) != k || got.Requests[1][0] != 2 || got.Requests[2] != [32]byte{} {
		t.Fatalf("decoded %+v", got)
	}
	again, err := got.marshal(b, k)
	if err != nil || !bytes.Equal(again, raw) {
		t.Fatal("decode → encode changed the payload")
	}
	if err := VerifyPayload(epoch, 9, P[0], raw, b, k); err != nil {
		t.Fatal(err)
	}
	if VerifyPayload(epoch, 8, P[0], raw, b, k) == nil {
		t.Fatal("signature verifies for another round")
	}
	if VerifyPayload(testEpoch("x"), 9, P[0], raw, b, k) == nil {
		t.Fatal("signature verifies for another epoch")
	}
	cover, err := EncodePayload(&Payload{Kind: KindCover}, b, k, epoch, 9, cs[0], rand)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodePayload(cover, b, k); err != nil {
		t.Fatal(err)
	}

	mod := func(f func(r []byte)) []byte { r := slices.Clone(raw); f(r); return r }
	for name, r := range map[string][]byte{
		"short":               raw[:len(raw)-1],
		"long":                append(slices.Clone(raw), 0),
		"version 1":           mod(func(r []byte) { r[1] = 1 }),
		"kind 2":              mod(func(r []byte) { r[0] = 2 }),
		"reserved set":        mod(func(r []byte) { r[3] = 1 }),
		"length past chunk":   mod(func(r []byte) { binary.BigEndian.PutUint32(r[4:], b+1) }),
		"length huge":         mod(func(r []byte) { binary.BigEndian.PutUint32(r[4:], 0xffffffff) }),
		"nonzero padding":     mod(func(r []byte) { r[8+32*k+50] = 1 }),
		"cover with length":   mod(func(r []byte) { r[0] = KindCover }),
		"non-canonical sig s": mod(func(r []byte) { copy(r[len(r)-32:], bytes.Repeat([]byte{0xff}, 32)) }),
		"non-canonical sig R": mod(func(r []byte) { copy(r[len(r)-64:], bytes.Repeat([]byte{0xff}, 32)) }),
	} {
		if _, err := DecodePayload(r, b, k); err == nil {
			t.Errorf("%s: payload decodes", name)
		}
	}
	for name, bad := range map[string]*Payload{
		"chunk too long":    {Kind: KindChunk, Length: b + 1, Chunk: make([]byte, b+1)},
		"length mismatch":   {Kind: KindChunk, Length: 3, Chunk: []byte("ab")},
		"too many requests": {Kind: KindCover, Requests: make([][32]byte, k+1)},
		"cover with chunk":  {Kind: KindCover, Length: 1, Chunk: []byte("x")},
		"unknown kind":      {Kind: 7},
	} {
		if _, err := EncodePayload(bad, b, k, epoch, 0, cs[0], rand); err == nil {
			t.Errorf("%s: payload encodes", name)
		}
	}
}

func TestVerifyPayloads(t *testing.T) {
	const b, k, n = 64, 1, 8
	epoch, cs, P := testPayloadClients(t, n)
	rand := newDetRand("verify payloads")
	raws := make([][]byte, n)
	for i := range n {
		var err error
		raws[i], err = EncodePayload(&Payload{Kind: KindChunk, Length: 1, Chunk: []byte{byte(i)}}, b, k, epoch, 4, cs[i], rand)
		if err != nil {
			t.Fatal(err)
		}
	}
	if bad := VerifyPayloads(epoch, 4, P, raws, b, k, rand); len(bad) != 0 {
		t.Fatalf("honest payloads fail at %v", bad)
	}
	if bad := VerifyPayloads(epoch, 5, P, raws, b, k, rand); len(bad) != n {
		t.Fatalf("another round: %v fail, want all", bad)
	}
	tampered := slices.Clone(raws)
	tampered[2] = slices.Clone(raws[2])
	tampered[2][8+32] ^= 1 // the chunk
	tampered[5], tampered[6] = raws[6], raws[5]
	tampered[7] = nil
	if bad := VerifyPayloads(epoch, 4, P, tampered, b, k, rand); !slices.Equal(bad, []int{2, 5, 6, 7}) {
		t.Fatalf("bad positions %v, want [2 5 6 7]", bad)
	}
	if bad := VerifyPayloads(epoch, 4, P, raws[:6], b, k, rand); !slices.Equal(bad, []int{6, 7}) {
		t.Fatalf("missing payloads: %v, want [6 7]", bad)
	}
	// A signature by another client's pseudonym key fails at that position.
	forged, _ := EncodePayload(&Payload{Kind: KindChunk, Length: 1, Chunk: []byte{3}}, b, k, epoch, 4, cs[0], rand)
	tampered = slices.Clone(raws)
	tampered[3] = forged
	if bad := VerifyPayloads(epoch, 4, P, tampered, b, k, rand); !slices.Equal(bad, []int{3}) {
		t.Fatalf("forged payload: %v, want [3]", bad)
	}
}

func TestNonZero(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 10000} {
		b := make([]byte, n)
		if i := nonZero(b); i != -1 {
			t.Fatalf("zero buffer of %d: %d", n, i)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if at < 0 || at >= n {
				continue
			}
			c := make([]byte, n)
			c[at] = 1
			if i := nonZero(c); i != at {
				t.Fatalf("non-zero at %d of %d found at %d", at, n, i)
			}
		}
	}
}

func TestPaddingRun(t *testing.T) {
	const b, k = 1024, 2
	epoch, cs, _ := testPayloadClients(t, 1)
	rng := newDetRand("padding run")
	for _, length := range []int{0, 1, 500, b} {
		pl := &Payload{Kind: KindChunk, Length: uint32(length), Chunk: bytes.Repeat([]byte{7}, length), Requests: make([][RequestSize]byte, k)}
		if length == 0 {
			pl.Kind = KindCover
		}
		raw, err := EncodePayload(pl, b, k, epoch, 3, cs[0], rng)
		if err != nil {
			t.Fatal(err)
		}
		at, n := PaddingRun(raw, b, k)
		if n != b-length || (n > 0 && at != PayloadHeaderSize+k*RequestSize+length) {
			t.Fatalf("length %d: run of %d at %d", length, n, at)
		}
		if n > 0 {
			raw[at+n-1] = 1 // not a zero run any more
			if _, m := PaddingRun(raw, b, k); m != 0 {
				t.Fatalf("length %d: a run with a non-zero byte", length)
			}
		}
	}
	if _, n := PaddingRun(make([]byte, 10), b, k); n != 0 {
		t.Fatal("a run in a short buffer")
	}
}

// TestHashPayload: one pass gives the chunk id (SHA-256 of the chunk's
// Length bytes) and D = SHA-256(u32 17 ‖ "riffle/v3/payload" ‖ header ‖
// requests ‖ chunk id), which changes with every byte that a well-formed
// payload can vary; a payload with non-zero padding has no digest and
// fails VerifyPayloads at its position.
func TestHashPayload(t *testing.T) {
	const b, k = 32, 2
	epoch, cs, P := testPayloadClients(t, 3)
	rand := newDetRand("hash payload")
	raw, err := EncodePayload(&Payload{Kind: KindChunk, Length: 5, Chunk: []byte("hello"), Requests: [][32]byte{{7}}}, b, k, epoch, 1, cs[0], rand)
	if err != nil {
		t.Fatal(err)
	}
	h, err := HashPayload(raw, b, k)
	if err != nil {
		t.Fatal(err)
	}
	if h.ChunkID != sha256.Sum256([]byte("hello")) {
		t.Fatal("chunk id is not the SHA-256 of the chunk")
	}
	want := sha256.Sum256(slices.Concat([]byte{0, 0, 0, 17}, []byte("riffle/v3/payload"), raw[:8+32*k], h.ChunkID[:]))
	if h.Digest != want {
		t.Fatalf("digest %x, want %x", h.Digest, want)
	}
	for _, at := range []int{4 + 3, 8 + 3, 8 + 32 + 1, 8 + 32*k + 2} { // length, request 0, request 1, chunk
		x := slices.Clone(raw)
		x[at] ^= 1
		if g, err := HashPayload(x, b, k); err == nil && g.Digest == h.Digest {
			t.Fatalf("byte %d changed, digest did not", at)
		}
	}
	cover, err := EncodePayload(&Payload{Kind: KindCover}, b, k, epoch, 1, cs[1], rand)
	if err != nil {
		t.Fatal(err)
	}
	padded := slices.Clone(cover)
	padded[8+32*k+b-1] = 1 // the last padding byte
	if _, err := HashPayload(padded, b, k); err == nil {
		t.Fatal("a payload with non-zero padding has a digest")
	}
	cover2, err := EncodePayload(&Payload{Kind: KindCover}, b, k, epoch, 1, cs[2], rand)
	if err != nil {
		t.Fatal(err)
	}
	raws := [][]byte{raw, padded, cover2}
	if bad := VerifyPayloads(epoch, 1, P, raws, b, k, rand); !slices.Equal(bad, []int{1}) {
		t.Fatalf("bad %v, want [1]", bad)
	}
	hs, ok := HashPayloads(raws, b, k)
	if !ok[0] || ok[1] || !ok[2] || hs[0] != h {
		t.Fatalf("HashPayloads: ok %v", ok)
	}
	if bad := VerifyPayloadsHashed(epoch, 1, P, raws, hs, ok, rand); !slices.Equal(bad, []int{1}) {
		t.Fatalf("hashed: bad %v, want [1]", bad)
	}
}
