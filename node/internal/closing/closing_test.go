package closing

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

var (
	pub  = wire.ClosingRound{State: wire.ClosedPublished, List: [32]byte{1}}
	void = wire.ClosingRound{State: wire.ClosedVoid, List: [32]byte{2}}
	none = wire.ClosingRound{}
)

// TestFinal: a round's state is that of its final list here, with the
// list's digest; no list, no state.
func TestFinal(t *testing.T) {
	t.Parallel()
	l := &wire.RoundList{Round: 3, Entries: []wire.ListEntry{{ID: [32]byte{9}, Len: 1}}}
	if got := Final(l); got.State != wire.ClosedPublished || got.List != proto.ListDigest(l) {
		t.Errorf("published list stated %+v", got)
	}
	v := &wire.RoundList{Round: 3, Flags: wire.ListVoid}
	if !v.Void() {
		t.Fatal("a void list is not void")
	}
	if got := Final(v); got.State != wire.ClosedVoid || got.List != proto.ListDigest(v) {
		t.Errorf("void list stated %+v", got)
	}
	if got := Final(nil); got != none {
		t.Errorf("no list stated %+v", got)
	}
}

// TestOf: the record states each round's final list here, nothing of
// what this server only signed.
func TestOf(t *testing.T) {
	t.Parallel()
	c := Of([32]byte{7}, []Round{{Final: pub}, {Final: void}, {Signed: pub}})
	if c.Epoch != ([32]byte{7}) || len(c.Rounds) != 3 || c.Rounds[0] != pub || c.Rounds[1] != void || c.Rounds[2] != none {
		t.Errorf("record %+v", c)
	}
}

// TestCheck: S_0's proposal is signed only where every round agrees with
// what this server holds: its final list, or (none delivered here) the
// list it signed.
func TestCheck(t *testing.T) {
	t.Parallel()
	here := []Round{{Final: pub}, {Final: void}, {Signed: pub}, {}}
	for _, tc := range []struct {
		name string
		p    []wire.ClosingRound
		ok   bool
	}{
		{"agrees", []wire.ClosingRound{pub, void, none, none}, true},
		{"signed here, not delivered", []wire.ClosingRound{pub, void, pub, none}, true},
		{"published stated never came", []wire.ClosingRound{none, void, none, none}, false},
		{"void stated published", []wire.ClosingRound{pub, pub, none, none}, false},
		{"another digest", []wire.ClosingRound{{State: wire.ClosedPublished, List: [32]byte{3}}, void, none, none}, false},
		{"signed list, another state", []wire.ClosingRound{pub, void, {State: wire.ClosedVoid, List: pub.List}, none}, false},
		{"nothing here stated published", []wire.ClosingRound{pub, void, none, pub}, false},
		{"short", []wire.ClosingRound{pub, void, none}, false},
	} {
		if err := Check(here, tc.p); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestWhole: a record is whole here only if every round it states
// published has that final list here; void rounds and rounds without a
// list need none.
func TestWhole(t *testing.T) {
	t.Parallel()
	here := []Round{{Final: pub}, {Signed: pub}, {Final: void}}
	for _, tc := range []struct {
		name   string
		rounds []wire.ClosingRound
		whole  bool
	}{
		{"every list here", []wire.ClosingRound{pub, none, void}, true},
		{"a published round only signed here", []wire.ClosingRound{pub, pub, void}, false},
		{"another digest", []wire.ClosingRound{{State: wire.ClosedPublished, List: [32]byte{4}}, none, void}, false},
		{"beyond the rounds here", []wire.ClosingRound{pub, none, void, pub}, false},
	} {
		if got := Whole(here, &wire.Closing{Rounds: tc.rounds}); got != tc.whole {
			t.Errorf("%s: whole %v", tc.name, got)
		}
	}
}

// TestAssemble: the record this server signed is assembled once, when
// every position signed that record; a signature of another record, or a
// missing one, holds it back.
func TestAssemble(t *testing.T) {
	t.Parallel()
	var c Epoch
	if _, ok := c.Assemble(0); ok {
		t.Fatal("assembled with no record chosen")
	}
	rec := wire.Closing{Epoch: [32]byte{5}, Rounds: []wire.ClosingRound{pub}, Sigs: [][64]byte{{1}}}
	mine := c.Choose(rec)
	if mine.Sigs != nil {
		t.Error("the chosen record keeps signatures")
	}
	other := rec
	other.Rounds = []wire.ClosingRound{none}
	if got := c.Choose(other); proto.ClosingDigest(got) != proto.ClosingDigest(mine) {
		t.Error("a second record chosen")
	}
	dg, odg := proto.ClosingDigest(mine), proto.ClosingDigest(&other)
	c.NoteOwn(wire.ClosingSig{Index: 0, Digest: dg, Sig: [64]byte{10}})
	c.Note(wire.ClosingSig{Index: 1, Digest: odg, Sig: [64]byte{11}})
	if _, ok := c.Assemble(2); ok {
		t.Fatal("assembled with a signature of another record")
	}
	c.Note(wire.ClosingSig{Index: 1, Digest: dg, Sig: [64]byte{12}})
	if _, ok := c.Assemble(3); ok {
		t.Fatal("assembled without every position")
	}
	// Its own signature, made again, replaces none of the same digest.
	c.NoteOwn(wire.ClosingSig{Index: 0, Digest: dg, Sig: [64]byte{13}})
	got, ok := c.Assemble(2)
	if !ok || len(got.Sigs) != 2 || got.Sigs[0] != ([64]byte{10}) || got.Sigs[1] != ([64]byte{12}) {
		t.Fatalf("assembled %v %+v", ok, got.Sigs)
	}
	if proto.ClosingDigest(&got) != dg {
		t.Error("the assembled record is not the one signed")
	}
	if _, ok := c.Assemble(2); ok {
		t.Error("assembled twice")
	}
	if c.Closed() {
		t.Error("closed before a record is stored")
	}
	c.SetClosed()
	if !c.Closed() {
		t.Error("not closed once stored")
	}
}

// TestSigned: a server's choice of an epoch's record is on disk before
// it signs: another digest for the epoch is refused, here and after a
// restart; the newest Keep numbers stay; an unreadable file refuses
// every signature.
func TestSigned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var s Signed
	if err := s.Take(dir, 1, [32]byte{1}, [32]byte{0xa}); err != nil {
		t.Fatal(err)
	}
	if err := s.Take(dir, 1, [32]byte{1}, [32]byte{0xa}); err != nil {
		t.Errorf("the same record refused: %v", err)
	}
	if err := s.Take(dir, 1, [32]byte{1}, [32]byte{0xb}); err == nil {
		t.Error("a second record of an epoch taken")
	}
	var again Signed
	if err := again.Take(dir, 1, [32]byte{1}, [32]byte{0xb}); err == nil {
		t.Error("a second record of an epoch taken after a restart")
	}
	for n := range Keep + 5 {
		if err := again.Take(dir, uint64(n+2), [32]byte{byte(n + 2), 1}, [32]byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != Keep || recs[0].Number != 7 || recs[Keep-1].Number != Keep+6 {
		t.Errorf("kept %d choices, numbers %d to %d", len(recs), recs[0].Number, recs[len(recs)-1].Number)
	}
	if err := os.WriteFile(filepath.Join(dir, File), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("an unreadable file loaded")
	}
	var broken Signed
	if err := broken.Take(dir, 100, [32]byte{100}, [32]byte{1}); err == nil {
		t.Error("a choice taken over an unreadable file")
	}
}
