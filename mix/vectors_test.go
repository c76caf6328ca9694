package mix

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

var updateVectors = flag.Bool("update", false, "rewrite testdata/vectors.json")

// vectors computes the known-answer values from fixed inputs and the
// deterministic reader, so that any change to an encoding, a tag or a
// derivation shows up as a diff of testdata/vectors.json. docs/proto-mix.md
// describes every field.
func vectors(t *testing.T) map[string]string {
	out := make(map[string]string)
	h := hex.EncodeToString
	epoch := testEpoch("vectors")
	out["epoch_id"] = h(epoch[:])

	// Layer keys from a fixed share Z = 7·G, for server 2, round 5.
	Z := group.NewElement().ScalarBaseMult(group.ScalarFromUint64(7))
	out["layer_share_Z"] = h(Z.Bytes())
	ek := ShareKey(epoch, 2, 5, EncKey, Z)
	mk := ShareKey(epoch, 2, 5, MACKey, Z)
	out["layer_key_enc_s2_r5"] = h(ek[:])
	out["layer_key_mac_s2_r5"] = h(mk[:])

	// A sealed onion of two layers with fixed keys, round 3.
	var keys [2]LayerKey
	for j := range keys {
		for i := range LayerKeySize {
			keys[j].Enc[i] = byte(0x10*j + i)
			keys[j].MAC[i] = byte(0x80 + 0x10*j + i)
		}
	}
	onion, err := Seal(epoch, 3, keys[:], []byte("riffle test vector payload"))
	if err != nil {
		t.Fatal(err)
	}
	out["onion_round3_payload"] = h([]byte("riffle test vector payload"))
	out["onion_round3_layer0_enc"] = h(keys[0].Enc[:])
	out["onion_round3_layer0_mac"] = h(keys[0].MAC[:])
	out["onion_round3_layer1_enc"] = h(keys[1].Enc[:])
	out["onion_round3_layer1_mac"] = h(keys[1].MAC[:])
	out["onion_round3"] = h(onion)

	// A registration for two servers, everything from the seeded reader.
	rand := newDetRand("vectors registration")
	sks, X := testServers(t, 2, rand)
	out["server0_key"] = h(X[0].Bytes())
	out["server1_key"] = h(X[1].Bytes())
	reg := testRegKey(t, rand)
	out["registration_key"] = h(reg.Public().(ed25519.PublicKey))
	cs, r, err := Register(epoch, reg.Public().(ed25519.PublicKey), X, rand)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := r.MarshalBinary()
	out["registration"] = h(enc)
	kp, err := sks[0].ProveKey(KeyContext(1, [32]byte{2}, []byte("peer")), rand)
	if err != nil {
		t.Fatal(err)
	}
	out["server0_key_proof_number1_nonce02_peer"] = h(kp)

	// A payload (b = 16, k = 1) signed by the pseudonym key, round 4.
	raw, err := EncodePayload(&Payload{Kind: KindChunk, Length: 3, Chunk: []byte("abc"), Requests: [][32]byte{{0xaa}}}, 16, 1, epoch, 4, cs, rand)
	if err != nil {
		t.Fatal(err)
	}
	out["pseudonym"] = h(cs.P.Bytes())
	out["payload_b16_k1_round4"] = h(raw)
	ph, err := HashPayload(raw, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	out["payload_b16_k1_round4_chunk_id"] = h(ph.ChunkID[:])
	out["payload_b16_k1_round4_digest"] = h(ph.Digest[:])

	// A single DLEQ of blame: MAC round key share at position 6.
	rk, err := NewRoundKeys(1, rand)
	if err != nil {
		t.Fatal(err)
	}
	U := group.NewElement().ScalarBaseMult(group.ScalarFromUint64(11))
	Zp, proof, err := ProveRoundKey(epoch, 1, 0, 6, MACKey, rk, U, rand)
	if err != nil {
		t.Fatal(err)
	}
	out["dleq_Yp"] = h(rk.Yp[0].Bytes())
	out["dleq_U"] = h(U.Bytes())
	out["dleq_Z"] = h(Zp.Bytes())
	out["dleq_proof_s1_r0_p6_mac"] = h(proof)

	// The submission message signed by the registration key.
	out["submission_message_round4_slot9"] = h(submissionMessage(epoch, 4, 9, []byte("onion")))
	return out
}

func TestVectors(t *testing.T) {
	got := vectors(t)
	path := filepath.Join("testdata", "vectors.json")
	if *updateVectors {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("%d vectors on file, %d computed", len(want), len(got))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], v)
		}
	}
	// The vectors verify, so they are not merely self-consistent bytes.
	epoch := testEpoch("vectors")
	dec := func(k string) []byte { x, _ := hex.DecodeString(want[k]); return x }
	el := func(k string) *group.Element {
		e, err := group.DecodeElement(dec(k))
		if err != nil {
			t.Fatal(k, err)
		}
		return e
	}
	if err := VerifyRoundKey(epoch, 1, 0, 6, MACKey, el("dleq_Yp"), el("dleq_U"), el("dleq_Z"), dec("dleq_proof_s1_r0_p6_mac")); err != nil {
		t.Error(err)
	}
	reg, err := ParseRegistration(dec("registration"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyRegistration(epoch, dec("registration_key"), []*group.Element{el("server0_key"), el("server1_key")}, reg); err != nil {
		t.Error(err)
	}
	if err := VerifyPayload(epoch, 4, el("pseudonym"), dec("payload_b16_k1_round4"), 16, 1); err != nil {
		t.Error(err)
	}
	// Peel the onion vector layer by layer with the listed keys.
	onion := dec("onion_round3")
	for j := range 2 {
		var ek, mk [LayerKeySize]byte
		copy(ek[:], dec(fmt.Sprintf("onion_round3_layer%d_enc", j)))
		copy(mk[:], dec(fmt.Sprintf("onion_round3_layer%d_mac", j)))
		if !CheckMAC(epoch, 3, j, mk, onion) {
			t.Fatalf("onion vector: MAC of layer %d", j)
		}
		if onion, err = DecryptLayer(3, j, ek, onion); err != nil {
			t.Fatal(err)
		}
	}
	if string(onion) != "riffle test vector payload" {
		t.Errorf("onion vector peels to %q", onion)
	}
}
