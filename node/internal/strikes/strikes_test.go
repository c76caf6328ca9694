package strikes

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/store"
)

// newID is a peer id that decodes (as a stored record's key must).
func newID(t *testing.T) peer.ID {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestClientAndAddress (§8 "After a blame"): a struck peer is refused for
// 1, then 2 epochs, and so is another peer from its address; a peer from
// another address is not; the records returned are the table's.
func TestClientAndAddress(t *testing.T) {
	var tb Table
	bad, other := newID(t), newID(t)
	until, recs := tb.Client(bad, []string{"192.0.2.1"}, 10)
	if until != 11 || len(recs) != 2 || recs[0].Key != "peer "+bad.String() || recs[1].X.Until != 11 {
		t.Fatalf("first strike: until %d, records %+v", until, recs)
	}
	if tb.Refusal(bad, nil, 11) == nil || tb.Refusal(bad, nil, 12) != nil {
		t.Fatal("the struck peer is not refused for exactly one epoch")
	}
	if tb.Refusal(other, []string{"192.0.2.1"}, 11) == nil {
		t.Fatal("another peer from the struck address is not refused")
	}
	if tb.Refusal(other, []string{"198.51.100.8"}, 11) != nil {
		t.Fatal("a peer from another address is refused")
	}
	if until, _ := tb.Client(bad, nil, 20); until != 22 {
		t.Fatalf("second strike: until %d, want 22", until)
	}
}

// TestTableBounded: the table holds at most store.MaxClientStrikes
// records; a new one drops the record whose exclusion ended first, and
// its peer is no longer refused.
func TestTableBounded(t *testing.T) {
	var tb Table
	first := newID(t)
	tb.Client(first, nil, 1)
	for i := 1; i < store.MaxClientStrikes; i++ {
		tb.Strike(fmt.Sprintf("ip 10.%d.%d.%d", i>>16, i>>8&255, i&255), 100)
	}
	tb.Strike("ip 192.0.2.9", 100)
	if len(tb.Clients) != store.MaxClientStrikes {
		t.Fatalf("%d records, want %d", len(tb.Clients), store.MaxClientStrikes)
	}
	if _, ok := tb.Banned[first]; ok || tb.Refusal(first, nil, 2) != nil {
		t.Fatal("the record that ended first was kept")
	}
}

// TestLoad: stored records refuse their peer again and the doubling goes
// on from them.
func TestLoad(t *testing.T) {
	var tb Table
	p := newID(t)
	tb.Load(map[string]store.ClientStrike{"peer " + p.String(): {Strikes: 2, Until: 12}})
	if tb.Refusal(p, nil, 12) == nil {
		t.Fatal("a loaded strike does not refuse its peer")
	}
	if until, _ := tb.Client(p, nil, 20); until != 24 {
		t.Fatalf("third strike: until %d, want 24", until)
	}
}
