package group

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// rfc9496Invalid are the invalid ristretto255 encodings of RFC 9496
// Appendix A.2 (test data from the RFC).
var rfc9496Invalid = []string{
	// Non-canonical field encodings.
	"00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	// Negative field elements.
	"0100000000000000000000000000000000000000000000000000000000000000",
	"01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516ebebe0e20",
	"c34c4e1826e5d403b78e246e88aa051c36ccf0aafebffe137d148a2bf9104562",
	"c940e5a4404157cfb1628b108db051a8d439e1a421394ec4ebccb9ec92a8ac78",
	"47cfc5497c53dc8e61c91d17fd626ffb1c49e2bca94eed052281b510b1117a24",
	"f1c6165d33367351b0da8f6e4511010c68174a03b6581212c71c0e1d026c3c72",
	"87260f7a2f12495118360f02c26a470f450dadf34a413d21042b43b9d93e1309",
	// Non-square x².
	"26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
	"4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
	"de6a7b00deadc788eb6b6c8d20c0ae96c2f2019078fa604fee5b87d6e989ad7b",
	"bcab477be20861e01e4a0e295284146a510150d9817763caf1a6f4b422d67042",
	"2a292df7e32cababbd9de088d1d1abec9fc0440f637ed2fba145094dc14bea08",
	"f4a9e534fc0d216c44b218fa0c42d99635a0127ee2e53c712f70609649fdff22",
	"8268436f8c4126196cf64b3c7ddbda90746a378625f9813dd9b8457077256731",
	"2810e5cbc2cc4d4eece54f61c6f69758e289aa7ab440b3cbeaa21995c2f4232b",
	// Negative xy.
	"3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",
	"a45fdc55c76448c049a1ab33f17023edfb2be3581e9c7aade8a6125215e04220",
	"d483fe813c6ba647ebbfd3ec41adca1c6130c2beeee9d9bf065c8d151c5f396e",
	"8a2e1d30050198c65a54483123960ccc38aef6848e1ec8f5f780e8523769ba32",
	"32888462f8b486c68ad7dd9610be5192bbeaf3b443951ac1a8118419d9fa097b",
	"227142501b9d4355ccba290404bde41575b037693cef1f438c47f8fbf35d1165",
	"5c37cc491da847cfeb9281d407efc41e15144c876e0170b499a96a22ed31e01e",
	"445425117cb8c90edcbc7c1cc0e74f747f2c1efa5630a967c64f287792a48a4b",
	// s = −1, which gives y = 0.
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
}

// RFC 9496 Appendix A.1: encodings of 0·G, 1·G, 2·G.
const (
	enc0G = "0000000000000000000000000000000000000000000000000000000000000000"
	enc1G = "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76"
	enc2G = "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeElementRFC9496(t *testing.T) {
	for i, h := range rfc9496Invalid {
		b := unhex(t, h)
		if _, err := DecodeElement(b); !errors.Is(err, ErrNonCanonical) {
			t.Errorf("vector %d: DecodeElement: %v, want ErrNonCanonical", i, err)
		}
		if _, err := DecodeNonIdentity(b); !errors.Is(err, ErrNonCanonical) {
			t.Errorf("vector %d: DecodeNonIdentity: %v", i, err)
		}
		if _, err := DecodeCiphertext(append(b, unhex(t, enc1G)...), false); !errors.Is(err, ErrNonCanonical) {
			t.Errorf("vector %d: DecodeCiphertext A: %v", i, err)
		}
		if _, err := DecodeCiphertext(append(unhex(t, enc1G), b...), true); !errors.Is(err, ErrNonCanonical) {
			t.Errorf("vector %d: DecodeCiphertext B: %v", i, err)
		}
	}
	two := NewElement().Add(Base(), Base())
	for _, c := range []struct {
		h string
		e *Element
	}{{enc0G, NewElement()}, {enc1G, Base()}, {enc2G, two}} {
		e, err := DecodeElement(unhex(t, c.h))
		if err != nil || e.Equal(c.e) != 1 || hex.EncodeToString(e.Bytes()) != c.h {
			t.Errorf("valid vector %s: %v", c.h, err)
		}
	}
}

func TestDecodeIdentityAndLength(t *testing.T) {
	zero := make([]byte, 32)
	if _, err := DecodeElement(zero); err != nil {
		t.Fatalf("DecodeElement must accept the identity: %v", err)
	}
	if _, err := DecodeNonIdentity(zero); !errors.Is(err, ErrIdentity) {
		t.Fatalf("DecodeNonIdentity accepted the identity: %v", err)
	}
	g := Base().Bytes()
	if _, err := DecodeCiphertext(append(bytes.Clone(zero), g...), false); err != nil {
		t.Fatalf("ciphertext with identity A must decode without nonIdentity: %v", err)
	}
	for _, ct := range [][]byte{append(bytes.Clone(zero), g...), append(bytes.Clone(g), zero...)} {
		if _, err := DecodeCiphertext(ct, true); !errors.Is(err, ErrIdentity) {
			t.Fatalf("client ciphertext with an identity component accepted: %v", err)
		}
	}
	for _, n := range []int{0, 31, 33} {
		if _, err := DecodeElement(make([]byte, n)); !errors.Is(err, ErrLength) {
			t.Errorf("DecodeElement(%d bytes): %v", n, err)
		}
		if _, err := DecodeScalar(make([]byte, n)); !errors.Is(err, ErrLength) {
			t.Errorf("DecodeScalar(%d bytes): %v", n, err)
		}
	}
	if _, err := DecodeCiphertext(make([]byte, 63), false); !errors.Is(err, ErrLength) {
		t.Errorf("DecodeCiphertext(63 bytes): %v", err)
	}
}

// ell is ℓ = 2^252 + 27742317777372353535851937790883648493, little-endian.
const ell = "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010"

func TestDecodeScalarCanonical(t *testing.T) {
	l := unhex(t, ell)
	lMinus1 := bytes.Clone(l)
	lMinus1[0]--
	if s, err := DecodeScalar(lMinus1); err != nil || hex.EncodeToString(s.Bytes()) != hex.EncodeToString(lMinus1) {
		t.Fatalf("ℓ−1 must decode: %v", err)
	}
	lPlus1 := bytes.Clone(l)
	lPlus1[0]++
	for name, b := range map[string][]byte{"ℓ": l, "ℓ+1": lPlus1, "all 0xFF": bytes.Repeat([]byte{0xff}, 32), "2^255": append(make([]byte, 31), 0x80)} {
		if _, err := DecodeScalar(b); !errors.Is(err, ErrNonCanonical) {
			t.Errorf("DecodeScalar(%s): %v", name, err)
		}
	}
}

func TestRandomWeightIs128Bits(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte{0xff}, 16))
	w, err := RandomWeight(r)
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Repeat([]byte{0xff}, 16), make([]byte, 16)...)
	if !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("weight %x, want %x", w.Bytes(), want)
	}
	if _, err := RandomWeight(bytes.NewReader(make([]byte, 15))); err == nil {
		t.Fatal("short reader accepted")
	}
}

// The generator derivation vector of docs/proto-shuffle.md: H_i =
// FromUniformBytes(SHA-512("riffle/v2/generator" || u32 i)).
func TestGeneratorVector(t *testing.T) {
	want := []string{
		"ea5b2659230c6f79ee01c0b427767d9155d575738127b65c130235204d4b6d72",
		"c2ecbff7dc505d15f0be78362c0a2895f634f5c913cf227afe59708340099957",
	}
	gens := Generators(2)
	for i, h := range want {
		if got := hex.EncodeToString(gens[i].Bytes()); got != h {
			t.Errorf("H_%d = %s, want %s", i, got, h)
		}
	}
	// The same from first principles, byte by byte.
	d := sha512.Sum512(append([]byte("riffle/v2/generator"), 0, 0, 0, 1))
	h1 := NewElement()
	if _, err := h1.SetUniformBytes(d[:]); err != nil || h1.Equal(gens[1]) != 1 {
		t.Fatal("H_1 is not FromUniformBytes(SHA-512(tag || u32 1))")
	}
	// Prefix-stable and distinct.
	more := Generators(5)
	for i := range 2 {
		if more[i] != gens[i] {
			t.Fatal("Generators is not prefix-stable")
		}
	}
	seen := map[string]bool{hex.EncodeToString(Base().Bytes()): true}
	for _, g := range more {
		k := hex.EncodeToString(g.Bytes())
		if seen[k] || IsIdentity(g) {
			t.Fatal("generators repeat or include G or O")
		}
		seen[k] = true
	}
	if DeriveGenerator("riffle/v2/other", 1).Equal(gens[1]) == 1 {
		t.Fatal("the tag does not enter the derivation")
	}
}

// The transcript framing vector: tag and byte strings carry u32 big-endian
// length prefixes, fixed-size fields none.
func TestTranscriptFraming(t *testing.T) {
	g := Base()
	s := ScalarFromUint64(5)
	tr := NewTranscript("riffle/v2/test").Bytes([]byte("abc")).Bytes(nil).U32(7).U64(9).Element(g).Scalar(s).Fixed([]byte{0xaa})
	var manual []byte
	manual = append(manual, 0, 0, 0, 14)
	manual = append(manual, "riffle/v2/test"...)
	manual = append(manual, 0, 0, 0, 3, 'a', 'b', 'c')
	manual = append(manual, 0, 0, 0, 0)
	manual = append(manual, 0, 0, 0, 7)
	manual = append(manual, 0, 0, 0, 0, 0, 0, 0, 9)
	manual = append(manual, unhex(t, enc1G)...)
	manual = append(manual, 5)
	manual = append(manual, make([]byte, 31)...)
	manual = append(manual, 0xaa)
	want := sha512.Sum512(manual)
	if got := tr.Sum(); got != want {
		t.Fatalf("transcript digest %x, want %x", got, want)
	}
	if got := hex.EncodeToString(want[:]); got != "3779cd94bcf4257ac787d54ec16e65fa8c573240e8814ae44bc8bf53b4c6b1cf8ab56399b1327e020cab18895a5d5b2fe5eedf1da412386c876871b0d23f12a2" {
		t.Fatalf("framing vector %s changed", got)
	}
	// Challenge reduces all 64 bytes.
	c := tr.Challenge()
	ref := NewScalar()
	ref.SetUniformBytes(want[:])
	if c.Equal(ref) != 1 {
		t.Fatal("Challenge is not the 64-byte reduction of the digest")
	}
	// Moving a byte across a length boundary changes the digest.
	a := NewTranscript("riffle/v2/test").Bytes([]byte("ab")).Bytes([]byte("c")).Sum()
	b := NewTranscript("riffle/v2/test").Bytes([]byte("a")).Bytes([]byte("bc")).Sum()
	if a == b {
		t.Fatal("framing is ambiguous")
	}
}

func naiveSum(s []*Scalar, p []*Element) *Element {
	sum := NewElement()
	for i := range s {
		sum.Add(sum, NewElement().ScalarMult(s[i], p[i]))
	}
	return sum
}

func TestVarTimeMSMChunks(t *testing.T) {
	var seed [64]byte
	const n = 2*MSMChunk + 3 // above pippengerMinPoints
	s := make([]*Scalar, n)
	p := make([]*Element, n)
	for i := range n {
		seed[0], seed[1] = byte(i), byte(i>>8)
		h := sha512.Sum512(seed[:])
		s[i] = NewScalar()
		s[i].SetUniformBytes(h[:])
		h = sha512.Sum512(h[:])
		p[i] = NewElement()
		p[i].SetUniformBytes(h[:])
	}
	for _, k := range []int{0, 1, 2, 7, MSMChunk - 1, MSMChunk, MSMChunk + 1, pippengerMinPoints - 1, pippengerMinPoints, n} {
		want := naiveSum(s[:k], p[:k])
		for _, chunk := range []int{1, 7, MSMChunk, k + 1} {
			if VarTimeMSMChunked(s[:k], p[:k], chunk).Equal(want) != 1 {
				t.Fatalf("%d points, chunk %d: VarTimeMSM differs from the naive sum", k, chunk)
			}
		}
		if VarTimeMSM(s[:k], p[:k]).Equal(want) != 1 {
			t.Fatalf("%d points: VarTimeMSM differs from the naive sum", k)
		}
	}
	if !IsIdentity(VarTimeMSM(nil, nil)) {
		t.Fatal("empty MSM is not the identity")
	}
	// The receiver is initialised: a constant-time MSM of 1·G is not 2·G
	// (CVE-2026-26958 made a zero-value receiver equal every point).
	two := NewElement().Add(Base(), Base())
	if NewElement().MultiScalarMult([]*Scalar{ScalarFromUint64(1)}, []*Element{Base()}).Equal(two) == 1 {
		t.Fatal("MultiScalarMult result equals an unrelated point")
	}
}

func TestCiphertextRoundTrip(t *testing.T) {
	ct := Ciphertext{A: Base(), B: NewElement().Add(Base(), Base())}
	d, err := DecodeCiphertext(ct.Bytes(), true)
	if err != nil || !d.Equal(ct) {
		t.Fatalf("round trip: %v", err)
	}
	if fmt.Sprintf("%x", ct.Bytes()) != enc1G+enc2G {
		t.Fatal("ciphertext encoding is not ENC(A) || ENC(B)")
	}
}

func FuzzDecoders(f *testing.F) {
	f.Add(unhex(f, enc1G+enc2G))
	f.Add(unhex(f, enc0G+enc1G))
	f.Add(unhex(f, rfc9496Invalid[0]+enc1G))
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := DecodeElement(b); err == nil && !bytes.Equal(e.Bytes(), b) {
			t.Fatal("element round trip")
		}
		if s, err := DecodeScalar(b); err == nil && !bytes.Equal(s.Bytes(), b) {
			t.Fatal("scalar round trip")
		}
		if c, err := DecodeCiphertext(b, false); err == nil && !bytes.Equal(c.Bytes(), b) {
			t.Fatal("ciphertext round trip")
		}
		if c, err := DecodeCiphertext(b, true); err == nil && (IsIdentity(c.A) || IsIdentity(c.B)) {
			t.Fatal("nonIdentity ciphertext decoder accepted an identity component")
		}
		if e, err := DecodeNonIdentity(b); err == nil && IsIdentity(e) {
			t.Fatal("DecodeNonIdentity accepted the identity")
		}
	})
}

// VarTimeMSM splits Pippenger into pieces of pippengerMaxPoints: check the
// boundary against chunked Straus.
func TestVarTimeMSMLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large MSM")
	}
	s, p := msmInputs(pippengerMaxPoints + 100)
	if VarTimeMSM(s, p).Equal(VarTimeMSMChunked(s, p, MSMChunk)) != 1 {
		t.Fatal("VarTimeMSM differs from chunked Straus across the Pippenger piece boundary")
	}
}
