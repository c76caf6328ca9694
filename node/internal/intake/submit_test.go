package intake

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCheckSubmission (§5.1): a client's onion is taken only for a slot
// of this primary, a round of the epoch, at the epoch's size and signed
// by the slot's registration key; at S_0, a forwarded one only from its
// slot's primary and for the batch's round.
func TestCheckSubmission(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := &wire.Descriptor{Params: wire.Params{ChunkSize: 64, K: 2, Rounds: 10}}
	var rk [32]byte
	copy(rk[:], pub)
	d.Clients = []wire.ClientEntry{{RegKey: rk, Primary: 1}, {Primary: 0}}
	const m = 3
	epoch := [32]byte{4}
	sub := func(slot, round uint32, size int) wire.Submit {
		s := wire.Submit{Epoch: epoch, Round: round, Slot: slot, Onion: make([]byte, size)}
		copy(s.Sig[:], mix.SignSubmission(priv, mix.EpochID(epoch), uint64(round), slot, s.Onion))
		return s
	}
	size := mix.OnionSize(64, 2, m)
	good := sub(0, 3, size)
	if digest, err := CheckSubmission(&good, d, 1, m, "submission"); err != nil || digest != mix.SubmissionDigest(good.Onion) {
		t.Fatalf("a good onion: %v", err)
	}
	bad := map[string]wire.Submit{"not served by": sub(1, 3, size), "beyond the epoch": sub(0, 10, size), "bytes, want": sub(0, 3, size-1)}
	forged := good
	forged.Round = 4
	bad["submission: "] = forged
	for want, x := range bad {
		if _, err := CheckSubmission(&x, d, 1, m, "submission"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q: %v", want, err)
		}
	}
	chain := []peer.ID{"s0", "s1", "s2"}
	batch := &wire.SubmitBatch{Epoch: epoch, Round: 3, Subs: []wire.Submit{good}}
	if _, err := CheckBatch(batch, d, chain, "s1"); err != nil {
		t.Fatalf("a batch from the slot's primary: %v", err)
	}
	if _, err := CheckBatch(batch, d, chain, "s2"); err == nil {
		t.Fatal("a batch from another primary taken")
	}
	batch.Round = 4
	if _, err := CheckBatch(batch, d, chain, "s1"); err == nil {
		t.Fatal("a batch of another round taken")
	}
	batch.Round, batch.Subs = 4, []wire.Submit{forged}
	if _, err := CheckBatch(batch, d, chain, "s1"); err == nil || !strings.Contains(err.Error(), "submission of slot 0") {
		t.Fatalf("a batch's forged onion: %v", err)
	}
}

// TestCheckForwarded (§3 v3): a forwarded registration is taken only
// from a chain server at the place it names, at the chain's registration
// size and signed by that primary.
func TestCheckForwarded(t *testing.T) {
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	chain := []peer.ID{"s0", p1, "s2"}
	f := wire.Forwarded{Primary: 1, Reg: wire.Register{Epoch: [32]byte{1}, Reg: make([]byte, mix.RegistrationSize(len(chain)))}}
	if f.Sig, err = proto.Sign(priv, proto.ForwardDigest(&f)); err != nil {
		t.Fatal(err)
	}
	if err := CheckForwarded(&f, chain, p1); err != nil {
		t.Fatalf("a signed forward from its primary: %v", err)
	}
	if err := CheckForwarded(&f, chain, "outsider"); err == nil || !strings.Contains(err.Error(), "outside the chain") {
		t.Errorf("from outside the chain: %v", err)
	}
	if err := CheckForwarded(&f, chain, "s2"); err == nil || !strings.Contains(err.Error(), "not from the primary it names") {
		t.Errorf("from another place: %v", err)
	}
	short := f
	short.Reg.Reg = short.Reg.Reg[1:]
	if err := CheckForwarded(&short, chain, p1); err == nil || !strings.Contains(err.Error(), "bytes, want") {
		t.Errorf("a short registration: %v", err)
	}
	other := f
	other.Reg.Epoch = [32]byte{2}
	if err := CheckForwarded(&other, chain, p1); err == nil || !strings.Contains(err.Error(), "forwarded registration: ") {
		t.Errorf("a registration its primary did not sign: %v", err)
	}
}
