package mix

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// roundFixture is an epoch after setup, without the setup proofs: m servers
// with round keys, n clients, their shares U_{p,s} at every server and π_s.
type roundFixture struct {
	epoch   EpochID
	rks     []*RoundKeys
	Y, Yp   [][]*group.Element
	clients []*ClientSecret
	U       [][]*group.Element
	forward [][]int
	final   []int // client i → output position
}

func newRoundFixture(t testing.TB, m, n, R int, seed string) *roundFixture {
	t.Helper()
	rand := newDetRand(seed)
	f := &roundFixture{epoch: testEpoch(seed)}
	sks, X := testServers(t, m, rand)
	for range m {
		rk, err := NewRoundKeys(R, rand)
		if err != nil {
			t.Fatal(err)
		}
		y, yp := rk.Public()
		f.rks, f.Y, f.Yp = append(f.rks, rk), append(f.Y, y), append(f.Yp, yp)
	}
	var regs []*Registration
	f.clients, _, regs = testClients(t, f.epoch, X, n, rand)
	in := InitialVectors(regs)
	for s := range m {
		res, sec, err := SetupStep(f.epoch, s, X, sks[s], in, rand)
		if err != nil {
			t.Fatal(err)
		}
		f.U = append(f.U, res.U)
		f.forward = append(f.forward, sec.Forward())
		sec.Close()
		in = res.Next()
	}
	f.final = make([]int, n)
	for i := range n {
		q := i
		for s := range m {
			q = f.forward[s][q]
		}
		f.final[i] = q
	}
	return f
}

// seal makes client i's onion for round r around payload.
func (f *roundFixture) seal(t testing.TB, i int, r uint64, payload []byte) []byte {
	t.Helper()
	lk, err := f.clients[i].LayerKeys(f.epoch, r, f.Y, f.Yp)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Seal(f.epoch, r, lk, payload)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (f *roundFixture) open(t testing.TB, s int, r uint64, onions [][]byte) ([][]byte, error) {
	t.Helper()
	keys, err := ServerLayerKeys(f.epoch, s, r, f.rks[s], f.U[s])
	if err != nil {
		t.Fatal(err)
	}
	return OpenLayer(f.epoch, r, s, keys, onions)
}

func TestOnionRoundTrip(t *testing.T) {
	const m, n = 3, 5
	f := newRoundFixture(t, m, n, 3, "onion")
	r := uint64(2)
	payloads := make([][]byte, n)
	onions := make([][]byte, n)
	for i := range n {
		payloads[i] = bytes.Repeat([]byte{byte(i + 1)}, 100)
		onions[i] = f.seal(t, i, r, payloads[i])
		if len(onions[i]) != 100+TagSize*m {
			t.Fatalf("onion of %d bytes, want %d", len(onions[i]), 100+TagSize*m)
		}
	}
	for s := range m {
		out, err := f.open(t, s, r, onions)
		if err != nil {
			t.Fatal(err)
		}
		onions = Permute(f.forward[s], out)
	}
	for i := range n {
		if !bytes.Equal(onions[f.final[i]], payloads[i]) {
			t.Fatalf("client %d's payload is not at output %d", i, f.final[i])
		}
	}
}

func TestOpenLayerInto(t *testing.T) {
	const m, n = 2, 4
	f := newRoundFixture(t, m, n, 1, "open into")
	onions := make([][]byte, n)
	for i := range n {
		onions[i] = f.seal(t, i, 0, bytes.Repeat([]byte{byte(i)}, 50))
	}
	keys, err := ServerLayerKeys(f.epoch, 0, 0, f.rks[0], f.U[0])
	if err != nil {
		t.Fatal(err)
	}
	want, err := OpenLayer(f.epoch, 0, 0, keys, onions)
	if err != nil {
		t.Fatal(err)
	}
	// Reused buffers, larger than needed.
	dst := make([][]byte, n)
	for i := range dst {
		dst[i] = make([]byte, 200)
	}
	got, err := OpenLayerInto(dst, f.epoch, 0, 0, keys, onions)
	if err != nil {
		t.Fatal(err)
	}
	// In place: each output aliases its own input.
	inPlace := make([][]byte, n)
	for i := range onions {
		inPlace[i] = slices.Clone(onions[i])
	}
	got2, err := OpenLayerInto(inPlace, f.epoch, 0, 0, keys, inPlace)
	if err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if !bytes.Equal(got[p], want[p]) || !bytes.Equal(got2[p], want[p]) {
			t.Fatalf("position %d differs between OpenLayer and OpenLayerInto", p)
		}
	}
	small := [][]byte{make([]byte, 10), nil, make([]byte, 200), make([]byte, 200)}
	_, err = OpenLayerInto(small, f.epoch, 0, 0, keys, onions)
	var me *MACError
	if !errors.As(err, &me) || !slices.Equal(me.Positions, []int{0, 1}) {
		t.Fatalf("short buffers: got %v", err)
	}
	if _, err := OpenLayerInto(small[:2], f.epoch, 0, 0, keys, onions); err == nil {
		t.Fatal("wrong number of buffers accepted")
	}
}

func TestOnionTamper(t *testing.T) {
	const m, n = 2, 6
	f := newRoundFixture(t, m, n, 2, "onion tamper")
	onions := make([][]byte, n)
	for i := range n {
		onions[i] = f.seal(t, i, 1, make([]byte, 64))
	}
	check := func(t *testing.T, err error, want []int) {
		t.Helper()
		var me *MACError
		if !errors.As(err, &me) {
			t.Fatalf("got %v, want a MACError", err)
		}
		if !slices.Equal(me.Positions, want) {
			t.Fatalf("MACError names %v, want %v", me.Positions, want)
		}
	}
	for _, pos := range []int{0, 5 + 16, 64 + 16 + 3} { // first byte, inside, in the outer tag
		t.Run(fmt.Sprintf("byte %d", pos), func(t *testing.T) {
			in := slices.Clone(onions)
			in[2] = slices.Clone(in[2])
			in[2][pos] ^= 0x40
			in[4] = slices.Clone(in[4])
			in[4][pos] ^= 0x01
			out, err := f.open(t, 0, 1, in)
			if out != nil {
				t.Fatal("outputs returned despite a failure")
			}
			check(t, err, []int{2, 4})
		})
	}
	t.Run("wrong round", func(t *testing.T) {
		_, err := f.open(t, 0, 0, onions)
		check(t, err, []int{0, 1, 2, 3, 4, 5})
	})
	t.Run("wrong epoch", func(t *testing.T) {
		keys, _ := ServerLayerKeys(f.epoch, 0, 1, f.rks[0], f.U[0])
		_, err := OpenLayer(testEpoch("other"), 1, 0, keys, onions)
		check(t, err, []int{0, 1, 2, 3, 4, 5})
	})
	t.Run("wrong layer", func(t *testing.T) {
		_, err := f.open(t, 1, 1, onions)
		check(t, err, []int{0, 1, 2, 3, 4, 5})
	})
	t.Run("swapped onions", func(t *testing.T) {
		in := slices.Clone(onions)
		in[0], in[3] = in[3], in[0]
		_, err := f.open(t, 0, 1, in)
		check(t, err, []int{0, 3})
	})
	t.Run("wrong size", func(t *testing.T) {
		in := slices.Clone(onions)
		in[1] = in[1][:len(in[1])-1]
		in[5] = nil
		_, err := f.open(t, 0, 1, in)
		check(t, err, []int{1, 5})
	})
	t.Run("error text names positions", func(t *testing.T) {
		e := &MACError{Server: 1, Round: 3, Positions: []int{4, 9}}
		if got := e.Error(); got != "layer 1, round 3: 2 onions fail to open, at positions 4 9" {
			t.Fatalf("error text %q", got)
		}
	})
	t.Run("blame view", func(t *testing.T) {
		// A revealed MAC share lets everyone check the MAC of one entry, and
		// the encryption share lets them remove the layer.
		rand := newDetRand("blame view")
		Z, proof, err := ProveRoundKey(f.epoch, 0, 1, 3, MACKey, f.rks[0], f.U[0][3], rand)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyRoundKey(f.epoch, 0, 1, 3, MACKey, f.Yp[0][1], f.U[0][3], Z, proof); err != nil {
			t.Fatal(err)
		}
		mk := ShareKey(f.epoch, 0, 1, MACKey, Z)
		if !CheckMAC(f.epoch, 1, 0, mk, onions[3]) {
			t.Fatal("MAC of an honest onion does not check with the revealed key")
		}
		bad := slices.Clone(onions[3])
		bad[7] ^= 1
		if CheckMAC(f.epoch, 1, 0, mk, bad) || CheckMAC(f.epoch, 1, 0, mk, onions[2]) {
			t.Fatal("MAC checks on a changed onion")
		}
		Ze, _, _ := ProveRoundKey(f.epoch, 0, 1, 3, EncKey, f.rks[0], f.U[0][3], rand)
		dec, err := DecryptLayer(1, 0, ShareKey(f.epoch, 0, 1, EncKey, Ze), onions[3])
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.open(t, 0, 1, onions)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dec, out[3]) {
			t.Fatal("blame decryption differs from the server's")
		}
	})
}

// TestKeyNonceUnique derives the keys of many rounds, layers and positions
// and checks that no AES key is used twice with one nonce, in either role,
// and that no key serves both roles.
func TestKeyNonceUnique(t *testing.T) {
	const m, n, R = 3, 8, 16
	f := newRoundFixture(t, m, n, R, "unique")
	type use struct {
		key   [32]byte
		nonce [16]byte
	}
	seen := make(map[use]string)
	role := make(map[[32]byte]string)
	add := func(k [32]byte, nonce []byte, what string) {
		var u use
		u.key = k
		copy(u.nonce[:], nonce)
		if prev, ok := seen[u]; ok {
			t.Fatalf("%s reuses the key and nonce of %s", what, prev)
		}
		seen[u] = what
		r := what[:3]
		if prev, ok := role[k]; ok && prev != r {
			t.Fatalf("%s: one key in two roles", what)
		}
		role[k] = r
	}
	for r := range uint64(R) {
		for s := range m {
			keys, err := ServerLayerKeys(f.epoch, s, r, f.rks[s], f.U[s])
			if err != nil {
				t.Fatal(err)
			}
			for p, k := range keys {
				iv := layerIV(r, s)
				nc := macNonce(r, s)
				add(k.Enc, iv[:], fmt.Sprintf("ctr r=%d s=%d p=%d", r, s, p))
				add(k.MAC, nc[:], fmt.Sprintf("mac r=%d s=%d p=%d", r, s, p))
			}
		}
		// The clients derive exactly the servers' keys.
		for i := range n {
			lk, err := f.clients[i].LayerKeys(f.epoch, r, f.Y, f.Yp)
			if err != nil {
				t.Fatal(err)
			}
			p := i
			for s := range m {
				sk, _ := ServerLayerKeys(f.epoch, s, r, f.rks[s], f.U[s][p:p+1])
				if !equalKeys(lk[s].Enc, sk[0].Enc) || !equalKeys(lk[s].MAC, sk[0].MAC) {
					t.Fatalf("client %d and server %d disagree on round %d's keys", i, s, r)
				}
				p = f.forward[s][p]
			}
		}
	}
	if len(seen) != 2*R*m*n {
		t.Fatalf("%d distinct uses, want %d", len(seen), 2*R*m*n)
	}
}

func TestPermuteThreeCycle(t *testing.T) {
	// π: 0 → 1, 1 → 2, 2 → 0 (input p goes to output π(p)).
	fw := []int{1, 2, 0}
	in := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	out := Permute(fw, in)
	if string(out[1]) != "a" || string(out[2]) != "b" || string(out[0]) != "c" {
		t.Fatalf("Permute gave %q", out)
	}
	// The inverse takes the entries back.
	inv := make([]int, 3)
	for p, q := range fw {
		inv[q] = p
	}
	back := Permute(inv, out)
	for i := range in {
		if !bytes.Equal(back[i], in[i]) {
			t.Fatalf("round trip gave %q", back)
		}
	}
	for _, bad := range [][]int{{0, 0, 1}, {0, 1}, {0, 1, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Permute(%v) did not panic", bad)
				}
			}()
			Permute(bad, in)
		}()
	}
}

func TestSubmissionSig(t *testing.T) {
	rand := newDetRand("submission")
	key := testRegKey(t, rand)
	pub := key.Public().(ed25519.PublicKey)
	epoch := testEpoch("sub")
	onion := []byte("onion bytes")
	sig := SignSubmission(key, epoch, 3, 7, onion)
	if err := VerifySubmission(pub, epoch, 3, 7, onion, sig); err != nil {
		t.Fatal(err)
	}
	// Signed from the digest (a client that checks its receipt with it):
	// the same signature, byte for byte.
	if d := SignSubmissionDigest(key, epoch, 3, 7, SubmissionDigest(onion)); !bytes.Equal(d, sig) {
		t.Fatal("a submission signed from its digest differs")
	}
	other := testRegKey(t, rand).Public().(ed25519.PublicKey)
	for name, err := range map[string]error{
		"other round": VerifySubmission(pub, epoch, 4, 7, onion, sig),
		"other slot":  VerifySubmission(pub, epoch, 3, 8, onion, sig),
		"other epoch": VerifySubmission(pub, testEpoch("x"), 3, 7, onion, sig),
		"other onion": VerifySubmission(pub, epoch, 3, 7, []byte("onion bytez"), sig),
		"other key":   VerifySubmission(other, epoch, 3, 7, onion, sig),
		"short key":   VerifySubmission(pub[:31], epoch, 3, 7, onion, sig),
	} {
		if err == nil {
			t.Errorf("%s: submission signature verifies", name)
		}
	}
}

// TestSealIntoRecycled: an onion sealed in a recycled buffer full of old
// bytes is byte for byte the onion Seal makes, and a payload encoded into
// a used buffer is the one EncodePayload makes.
func TestSealIntoRecycled(t *testing.T) {
	f := newRoundFixture(t, 3, 2, 1, "seal into")
	lk, err := f.clients[0].LayerKeys(f.epoch, 0, f.Y, f.Yp)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("riffle"), 300)
	want, err := Seal(f.epoch, 0, lk, payload)
	if err != nil {
		t.Fatal(err)
	}
	scratch := bytes.Repeat([]byte{0xee}, 4096)
	got, buf, err := SealInto(scratch, f.epoch, 0, lk, payload)
	if err != nil || !bytes.Equal(got, want) || &buf[0] != &scratch[0] {
		t.Fatalf("sealed in a recycled buffer: equal %v, reused %v, %v", bytes.Equal(got, want), &buf[0] == &scratch[0], err)
	}
	if small, buf, err := SealInto(make([]byte, 10), f.epoch, 0, lk, payload); err != nil || !bytes.Equal(small, want) || len(buf) < len(want) {
		t.Fatalf("a scratch too small: %v", err)
	}

	const b, k = 100, 2
	epoch, cs, _ := testPayloadClients(t, 1)
	p := &Payload{Kind: KindChunk, Length: 3, Chunk: []byte("abc"), Requests: [][RequestSize]byte{{9}}}
	wantP, err := EncodePayload(p, b, k, epoch, 4, cs[0], newDetRand("into"))
	if err != nil {
		t.Fatal(err)
	}
	gotP, err := EncodePayloadInto(bytes.Repeat([]byte{0xee}, 1000), p, b, k, epoch, 4, cs[0], newDetRand("into"))
	if err != nil || !bytes.Equal(gotP, wantP) {
		t.Fatalf("payload encoded into a used buffer differs: %v", err)
	}
}

// TestOpenLayerSkip: a dead slot's route, skipped at every layer, carries
// the zero filler to the final output whatever the slot's onion holds (a
// bad MAC, garbage, a previous filler), while every live payload comes out
// as with OpenLayer; a dead position that is not skipped still fails, and
// one out of range is refused.
func TestOpenLayerSkip(t *testing.T) {
	const m, n, dead = 3, 5, 2
	f := newRoundFixture(t, m, n, 3, "skip")
	r := uint64(1)
	payloads := make([][]byte, n)
	onions := make([][]byte, n)
	for i := range n {
		payloads[i] = bytes.Repeat([]byte{byte(i + 1)}, 100)
		onions[i] = f.seal(t, i, r, payloads[i])
	}
	onions[dead] = bytes.Repeat([]byte{0xee}, len(onions[dead])) // fails its MAC
	if _, err := f.open(t, 0, r, onions); err == nil {
		t.Fatal("a bad onion opened without a skip")
	}
	pos := dead
	for s := range m {
		keys, err := ServerLayerKeys(f.epoch, s, r, f.rks[s], f.U[s])
		if err != nil {
			t.Fatal(err)
		}
		out, err := OpenLayerSkip(f.epoch, r, s, keys, onions, []int{pos})
		if err != nil {
			t.Fatalf("layer %d: %v", s, err)
		}
		if !bytes.Equal(out[pos], make([]byte, len(onions[pos])-TagSize)) {
			t.Fatalf("layer %d: the dead position's output is not the zero filler", s)
		}
		onions = Permute(f.forward[s], out)
		pos = f.forward[s][pos]
	}
	for i := range n {
		if i == dead {
			if pos != f.final[i] || !bytes.Equal(onions[pos], make([]byte, 100)) {
				t.Fatal("the filler is not at the dead slot's final output")
			}
			continue
		}
		if !bytes.Equal(onions[f.final[i]], payloads[i]) {
			t.Fatalf("client %d's payload is not at output %d", i, f.final[i])
		}
	}
	keys, _ := ServerLayerKeys(f.epoch, 0, r, f.rks[0], f.U[0])
	if _, err := OpenLayerSkip(f.epoch, r, 0, keys, onions, []int{n}); err == nil {
		t.Fatal("a dead position out of range was taken")
	}
	// Into caller buffers that held something: the filler is zeros still.
	in := make([][]byte, n)
	for i := range n {
		in[i] = f.seal(t, i, r, payloads[i])
	}
	dst := make([][]byte, n)
	for i := range dst {
		dst[i] = bytes.Repeat([]byte{0x5a}, len(in[i])-TagSize)
	}
	out, err := OpenLayerSkipInto(dst, f.epoch, r, 0, keys, in, []int{1})
	if err != nil || !bytes.Equal(out[1], make([]byte, len(in[1])-TagSize)) {
		t.Fatalf("into reused buffers: %v", err)
	}
}
