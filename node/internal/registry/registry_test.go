package registry

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
)

func key(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8), 1} }

// TestForwardedBounds: a chain server receipts a primary's forwarded
// registrations up to the client cap, the same one again, never another
// under a key already taken, and none after the close.
func TestForwardedBounds(t *testing.T) {
	var r Epoch
	const n = 3
	for i := range n {
		f := wire.Forwarded{Primary: 1, Reg: wire.Register{RegKey: key(i)}}
		if err := r.TakeForwarded(&f, n); err != nil {
			t.Fatalf("registration %d of the cap: %v", i, err)
		}
	}
	again := wire.Forwarded{Primary: 1, Reg: wire.Register{RegKey: key(0)}}
	if err := r.TakeForwarded(&again, n); err != nil {
		t.Fatalf("the same registration again: %v", err)
	}
	other := wire.Forwarded{Primary: 2, Reg: wire.Register{RegKey: key(0)}}
	if err := r.TakeForwarded(&other, n); err == nil || !strings.Contains(err.Error(), "another registration") {
		t.Fatalf("another primary's registration under a taken key: %v", err)
	}
	over := wire.Forwarded{Primary: 1, Reg: wire.Register{RegKey: key(9)}}
	if err := r.TakeForwarded(&over, n); err == nil || !strings.Contains(err.Error(), "client cap") {
		t.Fatalf("one past the client cap: %v", err)
	}
	if got := r.ForwardedCount(); got != n {
		t.Fatalf("%d receipted, want %d", got, n)
	}
	r.SetPhase(true, false, false)
	late := wire.Forwarded{Primary: 2, Reg: wire.Register{RegKey: key(7)}}
	if err := r.TakeForwarded(&late, n); err == nil {
		t.Fatal("a registration after the close was receipted")
	}
}

// TestListPhases: the leader's list is taken only after the close, once,
// never after the final descriptor nor for an ended epoch; the close
// waits for the deadline.
func TestListPhases(t *testing.T) {
	var r Epoch
	now := time.Unix(1000, 0)
	if err := r.Close(now); err == nil {
		t.Fatal("a close before any open descriptor")
	}
	r.Opened([]byte("open"), [][64]byte{{1}}, time.Minute, now)
	r.Opened([]byte("open"), [][64]byte{{1}}, time.Minute, now.Add(time.Hour)) // the first sets the deadline
	if !r.Deadline().Equal(now.Add(time.Minute)) {
		t.Fatalf("deadline %v", r.Deadline())
	}
	if r.Offer() == nil {
		t.Fatal("no open descriptor offered while open")
	}
	if err := r.TakeList(false, nil, nil, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "before the close") {
		t.Fatalf("a list before the close: %v", err)
	}
	if err := r.Close(now.Add(time.Second)); err == nil {
		t.Fatal("a close before the deadline was taken")
	}
	if err := r.Close(now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r.Offer() != nil {
		t.Fatal("the open descriptor offered after the close")
	}
	if err := r.ListRefusal(true); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("a list for an ended epoch: %v", err)
	}
	regs := []wire.Register{{RegKey: key(1)}}
	if err := r.TakeList(false, regs, []uint16{0}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.TakeList(false, regs, []uint16{0}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "second") {
		t.Fatalf("a second list: %v", err)
	}
	r.SetPhase(true, false, false)
	r.Finalled([]byte("final"))
	if err := r.ListRefusal(false); err == nil || !strings.Contains(err.Error(), "after the final") {
		t.Fatalf("a list after the final descriptor: %v", err)
	}
}

// TestPrimaryIntake: a primary holds registrations until its order is
// fixed, keeps the first n, then takes none past a full order; its list
// is in that order, signed as it signed each; receipts go only to the
// peer that registered.
func TestPrimaryIntake(t *testing.T) {
	var r Epoch
	const n = 2
	for i := range 3 {
		if err := r.Take(n, wire.Register{RegKey: key(i)}, peer.ID("c"+string(rune('0'+i))), [64]byte{byte(i)}, intake.LT{Key: key(100 + i)}, "r", true); err != nil {
			t.Fatalf("registration %d before the order: %v", i, err)
		}
	}
	if r.Registered() != 3 || r.Ordered(key(0)) {
		t.Fatalf("%d held, or ordered before the order", r.Registered())
	}
	all := func([32]byte) (bool, bool) { return false, true }
	if err := r.FixOrder(n, n, all, rand.Reader); err != nil {
		t.Fatal(err)
	}
	var order [][32]byte
	for i := range 3 {
		if r.Ordered(key(i)) {
			order = append(order, key(i))
		}
	}
	if len(order) != n || r.Registered() != n {
		t.Fatalf("%d in the fixed order, %d held; want n = %d", len(order), r.Registered(), n)
	}
	if err := r.Room(n, "r", true); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("room past a full order: %v", err)
	}
	if err := r.Take(n, wire.Register{RegKey: key(5)}, "c5", [64]byte{}, intake.LT{Key: key(105)}, "r", true); err == nil {
		t.Fatal("a registration taken past a full order")
	}
	priv, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	rl, err := r.List(priv, [32]byte{9}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Regs) != n || !r.Ordered(rl.Regs[0].Reg.RegKey) || !r.Ordered(rl.Regs[1].Reg.RegKey) || rl.Regs[0].Primary != 1 || len(rl.Orders) != 1 || len(rl.Orders[0].Keys) != n || rl.Orders[0].Keys[0] != rl.Regs[0].Reg.RegKey {
		t.Fatalf("list %+v", rl)
	}
	from, _ := r.From(order[0])
	r.KeepReceipts(order[0], []wire.Receipt{{Server: 1}})
	if got, ok := r.Receipts(order[0], from); !ok || len(got) != 1 {
		t.Fatal("the registering peer gets no receipts")
	}
	if _, ok := r.Receipts(order[0], "someone else"); ok {
		t.Fatal("another peer gets a client's receipts")
	}
	if !r.RegisteredBy(from) || r.RegisteredBy("someone else") {
		t.Fatal("RegisteredBy")
	}
}

// TestCheckOpenAndFinal: an open descriptor must carry the Prepare's
// entry, certificate, window and gap; a final one this server's reveal,
// the list's slots as their primaries signed them, and no client of this
// primary it never registered.
func TestCheckOpenAndFinal(t *testing.T) {
	var r Epoch
	entry := wire.GroupEntry{PeerID: []byte("me"), Nick: []byte("n")}
	win := []wire.WindowRef{{Number: 3}}
	r.Prepared(entry, []byte("prev"), win, []byte("gap"), nil, [wire.CommitSize]byte{7})
	d := wire.Descriptor{Group: []wire.GroupEntry{{}, entry}, Window: win}
	if err := r.CheckOpen(&d, 1, []byte("gap")); err == nil || !strings.Contains(err.Error(), "previous") {
		t.Fatalf("another previous certificate: %v", err)
	}
	r.Prepared(entry, d.Previous.Marshal(), win, []byte("gap"), [][]byte{[]byte("cand")}, [wire.CommitSize]byte{7})
	if err := r.CheckOpen(&d, 1, []byte("gap")); err == nil || !strings.Contains(err.Error(), "candidates") {
		t.Fatalf("the candidates left out: %v", err)
	}
	d.Cands = [][]byte{[]byte("cand")}
	if err := r.CheckOpen(&d, 1, []byte("gap")); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckOpen(&d, 1, []byte("other gap")); err == nil {
		t.Fatal("another gap")
	}
	d.Group[1].Nick = []byte("x")
	if err := r.CheckOpen(&d, 1, []byte("gap")); err == nil || !strings.Contains(err.Error(), "entry") {
		t.Fatalf("an altered entry: %v", err)
	}
	d.Group[1].Nick = entry.Nick
	d.Window = nil
	if err := r.CheckOpen(&d, 1, []byte("gap")); err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("another window: %v", err)
	}

	reg := wire.Register{RegKey: key(1), XKey: key(2), Reg: []byte("proofs")}
	r.SetPhase(true, false, false)
	if err := r.TakeList(false, []wire.Register{reg}, []uint16{1}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	fd := wire.Descriptor{Reveals: [][wire.CommitSize]byte{{}, {7}}, Clients: []wire.ClientEntry{{RegKey: reg.RegKey, XKey: reg.XKey, RegHash: sha256.Sum256(reg.Reg), Primary: 1}}}
	if err := r.CheckFinalList(&fd, 1); err != nil {
		t.Fatal(err)
	}
	fd.Reveals[1][0] = 8
	if err := r.CheckFinalList(&fd, 1); err == nil || !strings.Contains(err.Error(), "reveal") {
		t.Fatalf("another reveal: %v", err)
	}
	// Slot 0 names this server (1) as primary of a client not registered here.
	if err := r.CheckSlots(&fd, 1, 2, false); err == nil || !strings.Contains(err.Error(), "never registered") {
		t.Fatalf("a client this primary never registered: %v", err)
	}
	if err := r.Take(4, reg, "c", [64]byte{}, intake.LT{Key: key(3)}, "r", true); err == nil {
		t.Fatal("a registration taken after the close")
	}
	r.SetPhase(false, true, false)
	if err := r.Take(4, reg, "c", [64]byte{}, intake.LT{Key: key(3)}, "r", true); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckSlots(&fd, 1, 2, false); err != nil {
		t.Fatal(err)
	}
	fd.Clients[0].XKey[0]++
	if err := r.CheckSlots(&fd, 1, 2, false); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("a slot unlike its registration: %v", err)
	}
}

// TestDraw: the entry a Prepare's answer offers carries the public parts
// of the keys drawn, a proof of knowledge of the server key bound to the
// number, the nonce and the peer id, the commitment of the r_j returned,
// at most wire.MaxAddrs addresses; two draws share nothing.
func TestDraw(t *testing.T) {
	addrs := make([][]byte, wire.MaxAddrs+3)
	for i := range addrs {
		addrs[i] = []byte{byte(i)}
	}
	nonce := [32]byte{5}
	k, g, r, err := Draw(rand.Reader, 7, nonce, 4, []byte("peer"), []byte("nick"), addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if len(g.Addrs) != wire.MaxAddrs || len(g.Y) != 4 || len(g.Yp) != 4 {
		t.Fatalf("%d addresses, %d round keys", len(g.Addrs), len(g.Y))
	}
	if g.Commit != proto.Commitment(r) {
		t.Fatal("the entry does not commit to the r_j drawn")
	}
	X, err := group.DecodeNonIdentity(g.X[:])
	if err != nil {
		t.Fatal(err)
	}
	if err := mix.VerifyKey(X, mix.KeyContext(7, nonce, []byte("peer")), g.PoK); err != nil {
		t.Fatalf("the proof of knowledge: %v", err)
	}
	if mix.VerifyKey(X, mix.KeyContext(8, nonce, []byte("peer")), g.PoK) == nil {
		t.Fatal("the proof of knowledge holds for another number")
	}
	if !bytes.Equal(g.D[:], k.DKey.PublicKey().Bytes()) {
		t.Fatal("the entry's exchange key is not the one drawn")
	}
	k2, g2, r2, err := Draw(rand.Reader, 7, nonce, 4, []byte("peer"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if r2 == r || g2.X == g.X || g2.D == g.D || g2.Y[0] == g.Y[0] {
		t.Fatal("two draws share a value")
	}
}

// TestFixOrderAndReceipt: FixOrder keeps the first n of the admission
// order, returning clients first, once; a receipt verifies for its
// registration and chain position only.
func TestFixOrderAndReceipt(t *testing.T) {
	var r Epoch
	for i := range 4 {
		if err := r.Take(8, wire.Register{RegKey: key(i)}, "c", [64]byte{}, intake.LT{Key: key(100 + i)}, "r", false); err != nil {
			t.Fatal(err)
		}
	}
	returning := func(k [32]byte) (bool, bool) { return false, k == key(102) || k == key(103) }
	if err := r.FixOrder(2, 8, returning, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if !r.Ordered(key(2)) || !r.Ordered(key(3)) || r.Ordered(key(0)) || r.Registered() != 2 {
		t.Fatal("the returning clients are not the order's first two")
	}
	if err := r.FixOrder(4, 8, func([32]byte) (bool, bool) { return false, false }, rand.Reader); err != nil || r.Registered() != 2 {
		t.Fatal("the order fixed twice")
	}
	priv, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	id, _ := peer.IDFromPrivateKey(priv)
	f := wire.Forwarded{Primary: 0, Reg: wire.Register{Epoch: [32]byte{4}, RegKey: key(1), Reg: []byte("r")}}
	rc, err := Receipt(priv, [32]byte{4}, 1, &f)
	if err != nil {
		t.Fatal(err)
	}
	chain := []peer.ID{"other", id}
	if err := proto.CheckReceipt(&rc, [32]byte{4}, &f.Reg, chain); err != nil {
		t.Fatal(err)
	}
	if proto.CheckReceipt(&rc, [32]byte{4}, &f.Reg, []peer.ID{id, "other"}) == nil {
		t.Fatal("a receipt verifies for another chain position")
	}
}
