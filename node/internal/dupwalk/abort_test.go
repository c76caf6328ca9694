package dupwalk

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAbortSignatures: a chain server's signature that comes before this
// server's own abort is kept and joins it only if it signs the same
// abort; after, it is checked at once; none is kept for an ended epoch;
// a waiting client gets the abort once every server signed it.
func TestAbortSignatures(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 3 {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	ab := wire.DupAbort{Epoch: [32]byte{1}, S: 1, Comp: 1, SlotA: 1, SlotB: 2, Sigs: make([][64]byte, 3)}
	other := ab
	other.SlotB = 3
	sign := func(i int, a *wire.DupAbort) [64]byte {
		sg, err := proto.Sign(privs[i], proto.DupDigest(a))
		if err != nil {
			t.Fatal(err)
		}
		return sg
	}
	var a Abort
	if err := a.Sign(0, chain[0], sign(0, &ab), true); err == nil {
		t.Fatal("a signature kept for an ended epoch")
	}
	if _, over := a.Query(false, false); over {
		t.Fatal("a client's wait over with no abort, setup running")
	}
	if err := a.Sign(0, chain[0], sign(0, &other), false); err != nil {
		t.Fatal(err) // kept unchecked until the own abort
	}
	own := ab
	own.Sigs = [][64]byte{{}, sign(1, &ab), {}}
	a.Start(own, group.Generators(1)[0], chain)
	if (*a.Dup()).Abort.Sigs[0] != [64]byte{} {
		t.Fatal("an early signature of another abort joined it")
	}
	if err := a.Sign(0, chain[0], sign(0, &other), false); err == nil {
		t.Fatal("a signature of another abort taken after the start")
	}
	if err := a.Sign(2, chain[0], sign(2, &ab), false); err == nil {
		t.Fatal("server 2's signature taken from server 0's peer")
	}
	if out, over := a.Query(false, false); out != nil || over {
		t.Fatal("the abort given before every signature")
	}
	for _, j := range []int{0, 2} {
		if err := a.Sign(j, chain[j], sign(j, &ab), false); err != nil {
			t.Fatal(err)
		}
	}
	if out, over := a.Query(false, false); out == nil || !over || !a.Signed() {
		t.Fatal("the abort signed by every server not given")
	}
}

// TestAbortAnswers: a proof is taken only for a slot the abort names,
// once a slot, and none after the verdict.
func TestAbortAnswers(t *testing.T) {
	var a Abort
	if _, _, _, err := a.Open(1); err == nil {
		t.Fatal("a proof taken with no abort")
	}
	a.Start(wire.DupAbort{SlotA: 1, SlotB: 2, Sigs: make([][64]byte, 2)}, group.Generators(1)[0], nil)
	if _, _, _, err := a.Open(3); err == nil {
		t.Fatal("a proof for a slot the abort does not name")
	}
	a.Answer(1, true, []byte("proof"))
	if _, _, answered, err := a.Open(1); err != nil || !answered {
		t.Fatalf("slot 1 answered: %v %v", answered, err)
	}
	culprits, silent, evidence := a.Verdict()
	if len(culprits) != 0 || len(silent) != 1 || silent[0] != 2 || len(evidence) != 2 {
		t.Fatalf("verdict %v %v %d", culprits, silent, len(evidence))
	}
	if _, _, _, err := a.Open(2); err == nil {
		t.Fatal("a proof taken after the verdict")
	}
}
