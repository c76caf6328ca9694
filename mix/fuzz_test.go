package mix

import (
	"bytes"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// Fuzz targets for every decoder of untrusted bytes in this package. Each is
// seeded with valid encodings; each checks that decoding never panics and
// that whatever decodes encodes back to the same bytes.

func FuzzParseRegistration(f *testing.F) {
	rand := newDetRand("fuzz registration")
	epoch := testEpoch("fuzz")
	for m := 1; m <= 3; m++ {
		_, X := testServers(f, m, rand)
		_, _, regs := testClients(f, epoch, X, 1, rand)
		enc, err := regs[0].MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc, uint8(m))
	}
	f.Fuzz(func(t *testing.T, b []byte, m uint8) {
		reg, err := ParseRegistration(b, int(m))
		if err != nil {
			return
		}
		enc, err := reg.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatal("decode → encode changed the registration")
		}
	})
}

func FuzzParseStepResult(f *testing.F) {
	for _, tc := range []struct{ m, n, s int }{{1, 1, 0}, {2, 2, 0}, {2, 2, 1}, {3, 2, 1}} {
		fx := newStepFixture(f, tc.m, tc.n, tc.s, "fuzz step")
		enc, err := fx.res.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc, uint8(tc.n), uint8(tc.m), uint8(tc.s))
	}
	f.Fuzz(func(t *testing.T, b []byte, n, m, s uint8) {
		res, err := ParseStepResult(b, int(n), int(m), int(s))
		if err != nil {
			return
		}
		enc, err := res.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatal("decode → encode changed the step result")
		}
		_ = res.Next()
		_ = res.Pseudonyms()
	})
}

func FuzzDecodePayload(f *testing.F) {
	epoch, cs, _ := testPayloadClients(f, 1)
	rand := newDetRand("fuzz payload")
	for _, p := range []*Payload{
		{Kind: KindCover},
		{Kind: KindChunk, Length: 3, Chunk: []byte("abc"), Requests: [][RequestSize]byte{{9}}},
	} {
		for _, bk := range [][2]int{{16, 0}, {40, 2}} {
			if len(p.Requests) > bk[1] {
				continue
			}
			raw, err := EncodePayload(p, bk[0], bk[1], epoch, 1, cs[0], rand)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, uint16(bk[0]), uint8(bk[1]))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, b uint16, k uint8) {
		p, err := DecodePayload(raw, int(b), int(k))
		if err != nil {
			return
		}
		enc, err := p.marshal(int(b), int(k))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, raw) {
			t.Fatal("decode → encode changed the payload")
		}
	})
}

// FuzzOpenLayer feeds arbitrary onions to a server: never a panic, and a
// failure names exactly the positions that fail.
func FuzzOpenLayer(f *testing.F) {
	fx := newRoundFixture(f, 2, 2, 1, "fuzz open")
	keys, err := ServerLayerKeys(fx.epoch, 0, 0, fx.rks[0], fx.U[0])
	if err != nil {
		f.Fatal(err)
	}
	good := fx.seal(f, 1, 0, []byte("payload bytes"))
	f.Add(fx.seal(f, 0, 0, []byte("payload bytes")), good)
	f.Add([]byte{}, good)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		out, err := OpenLayer(fx.epoch, 0, 0, keys, [][]byte{a, b})
		if err != nil {
			if out != nil {
				t.Fatal("outputs with an error")
			}
			me, ok := err.(*MACError)
			if !ok || len(me.Positions) == 0 {
				t.Fatalf("error %v", err)
			}
			if bytes.Equal(b, good) && len(a) == len(good) && slices.Contains(me.Positions, 1) {
				t.Fatal("the honest onion at position 1 was blamed")
			}
			return
		}
		for i, o := range out {
			if len(o) != len([][]byte{a, b}[i])-TagSize {
				t.Fatal("output size")
			}
		}
	})
}

// FuzzProofDecoders runs the proof decoders and verifiers on arbitrary
// bytes.
func FuzzProofDecoders(f *testing.F) {
	rand := newDetRand("fuzz proofs")
	sk, _ := NewServerSecret(rand)
	ctx := []byte("ctx")
	kp, _ := sk.ProveKey(ctx, rand)
	f.Add(kp)
	rk, _ := NewRoundKeys(1, rand)
	U := group.Base()
	Z, rp, _ := ProveRoundKey(testEpoch("f"), 0, 0, 0, MACKey, rk, U, rand)
	f.Add(rp)
	f.Fuzz(func(t *testing.T, b []byte) {
		if R, s, err := parseSchnorr(b); err == nil {
			if !bytes.Equal(append(R.Bytes(), s.Bytes()...), b) {
				t.Fatal("decode → encode changed the Schnorr proof")
			}
		}
		valid := VerifyKey(sk.Public(), ctx, b) == nil
		if valid != bytes.Equal(b, kp) {
			t.Fatal("key proof verdict")
		}
		valid = VerifyRoundKey(testEpoch("f"), 0, 0, 0, MACKey, rk.Yp[0], U, Z, b) == nil
		if valid != bytes.Equal(b, rp) {
			t.Fatal("round key proof verdict")
		}
	})
}
