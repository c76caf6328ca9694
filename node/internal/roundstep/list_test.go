package roundstep

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The request list's steps (§5.3): S_0's proposal, a signer's checks and
// its censorship check, the chunks it fetches, the chain's signatures.

func id(b byte) [32]byte { return [32]byte{b} }

func listFacts(maxRows uint32) Facts {
	return Facts{ID: [32]byte{9}, Params: wire.Params{Rounds: 8, MaxRows: maxRows}}
}

// TestProposeList: S_0 lists the requested ids it holds with their
// lengths, never one it lacks; cut to L_max, positions take turns from
// the public start q_0 of the epoch and round; the pairs name each
// position's listed ids.
func TestProposeList(t *testing.T) {
	t.Parallel()
	pub := Published{
		IDs:      [][32]byte{id(0xf0)},
		Requests: map[[32]byte]bool{id(1): true, id(2): true, id(3): true, id(4): true},
		ReqByPos: [][][32]byte{{id(1)}, {id(2)}, {id(3), id(4)}},
	}
	lens := map[[32]byte]uint32{id(1): 10, id(2): 20, id(3): 30}
	rl := ProposeList(listFacts(100), 5, pub, [][32]byte{id(0xe0)}, lens)
	want := []wire.ListEntry{{ID: id(1), Len: 10}, {ID: id(2), Len: 20}, {ID: id(3), Len: 30}}
	if !slices.Equal(rl.Entries, want) {
		t.Errorf("entries %v, want %v (id 4 is not held)", rl.Entries, want)
	}
	if rl.Epoch != ([32]byte{9}) || rl.Round != 5 || !slices.Equal(rl.Published, pub.IDs) || !slices.Equal(rl.Manifests, [][32]byte{id(0xe0)}) {
		t.Errorf("list head %x %d %v %v", rl.Epoch[:2], rl.Round, rl.Published, rl.Manifests)
	}
	if want := []wire.ListPair{{Pos: 0, Entry: 0}, {Pos: 1, Entry: 1}, {Pos: 2, Entry: 2}}; !slices.Equal(rl.Pairs, want) {
		t.Errorf("pairs %v, want %v", rl.Pairs, want)
	}
	// Two rows: the positions at q_0 and after it, whatever the others.
	for r := uint32(0); r < 6; r++ {
		q0 := proto.ListStart([32]byte{9}, r, 3)
		rl := ProposeList(listFacts(2), r, pub, nil, lens)
		first := []byte{1, 2, 3}
		want := [][32]byte{id(first[q0]), id(first[(q0+1)%3])}
		slices.SortFunc(want, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		if len(rl.Entries) != 2 || rl.Entries[0].ID != want[0] || rl.Entries[1].ID != want[1] {
			t.Errorf("round %d (q_0 = %d): entries %v, want %x", r, q0, rl.Entries, want)
		}
	}
}

// TestCheckList: a signer refuses a proposal whose published or manifest
// ids differ from its own, that lists an id nobody requested or is not
// sorted; pairs that differ from the requests published here are
// refused apart, after the censorship check.
func TestCheckList(t *testing.T) {
	t.Parallel()
	pub := Published{
		IDs:      [][32]byte{id(0xf0)},
		Requests: map[[32]byte]bool{id(1): true, id(2): true},
		ReqByPos: [][][32]byte{{id(1)}, {id(2), id(1)}},
	}
	mans := [][32]byte{id(0xe0)}
	lens := map[[32]byte]uint32{id(1): 1, id(2): 2}
	good := ProposeList(listFacts(100), 1, pub, mans, lens)
	if refuse, pairs := CheckList(pub, mans, &good); refuse != nil || pairs != nil {
		t.Fatalf("honest proposal refused: %v, %v", refuse, pairs)
	}
	for _, tc := range []struct {
		name  string
		edit  func(rl *wire.RoundList)
		pairs bool // refused for its pairs alone
	}{
		{"published ids differ", func(rl *wire.RoundList) { rl.Published = nil }, false},
		{"manifest ids differ", func(rl *wire.RoundList) { rl.Manifests = [][32]byte{id(0xe1)} }, false},
		{"an id nobody requested", func(rl *wire.RoundList) { rl.Entries = append(rl.Entries, wire.ListEntry{ID: id(3)}) }, false},
		{"not sorted", func(rl *wire.RoundList) { rl.Entries[0], rl.Entries[1] = rl.Entries[1], rl.Entries[0] }, false},
		{"a pair left out", func(rl *wire.RoundList) { rl.Pairs = rl.Pairs[1:] }, true},
	} {
		rl := good
		rl.Entries, rl.Pairs = slices.Clone(good.Entries), slices.Clone(good.Pairs)
		tc.edit(&rl)
		refuse, pairs := CheckList(pub, mans, &rl)
		if tc.pairs && (refuse != nil || pairs == nil) || !tc.pairs && refuse == nil {
			t.Errorf("%s: refused %v, pairs %v", tc.name, refuse, pairs)
		}
	}
}

// TestOmitted (v3, no censorship): a requested id held here that the
// proposal leaves out, although the cut takes it, is named; one the cut
// to L_max leaves out is not, nor one held nowhere here.
func TestOmitted(t *testing.T) {
	t.Parallel()
	pub := Published{
		Requests: map[[32]byte]bool{id(1): true, id(2): true, id(3): true},
		ReqByPos: [][][32]byte{{id(1), id(3)}, {id(2)}},
	}
	ep := listFacts(100)
	all := ProposeList(ep, 0, pub, nil, map[[32]byte]uint32{id(1): 1, id(2): 1, id(3): 1})
	if got := Unlisted(pub, &all); len(got) != 0 {
		t.Errorf("a full list leaves %x out", got)
	}
	censored := all
	censored.Entries = slices.DeleteFunc(slices.Clone(all.Entries), func(le wire.ListEntry) bool { return le.ID == id(2) })
	if got := Unlisted(pub, &censored); !slices.Equal(got, [][32]byte{id(2)}) {
		t.Fatalf("unlisted %x", got)
	}
	if got := Omitted(ep, 0, pub, &censored, map[[32]byte]bool{id(2): true}, 100); !slices.Equal(got, [][32]byte{id(2)}) {
		t.Errorf("censored id held here: omitted %x", got)
	}
	if got := Omitted(ep, 0, pub, &censored, nil, 100); got != nil {
		t.Errorf("censored id held nowhere here: omitted %x", got)
	}
	// Cut to one row, an honest proposal leaves the others out.
	one := ProposeList(listFacts(1), 0, pub, nil, map[[32]byte]uint32{id(1): 1, id(2): 1, id(3): 1})
	if len(one.Entries) != 1 {
		t.Fatalf("cut to one row: %v", one.Entries)
	}
	held := map[[32]byte]bool{id(1): true, id(2): true, id(3): true}
	if got := Omitted(ep, 0, pub, &one, held, 1); got != nil {
		t.Errorf("honest cut list: omitted %x", got)
	}
}

// TestToFetch: the entries not held here are fetched; a held chunk of
// another length refuses the proposal.
func TestToFetch(t *testing.T) {
	t.Parallel()
	rl := &wire.RoundList{Entries: []wire.ListEntry{{ID: id(1), Len: 1}, {ID: id(2), Len: 2}}}
	got, err := ToFetch(rl, map[[32]byte]uint32{id(1): 1})
	if err != nil || len(got) != 1 || got[0].ID != id(2) {
		t.Errorf("to fetch %v, %v", got, err)
	}
	if _, err := ToFetch(rl, map[[32]byte]uint32{id(1): 5}); err == nil {
		t.Error("a held chunk of another length taken")
	}
}

// TestFetched: a fetched chunk is taken only with the listed id and
// length and data that hash to the id.
func TestFetched(t *testing.T) {
	t.Parallel()
	data := []byte("chunk")
	cid := sha256.Sum256(data)
	le := wire.ListEntry{ID: cid, Len: uint32(len(data))}
	c, err := Fetched((&wire.Chunk{ID: cid, Data: data}).Marshal(), le, 64)
	if err != nil || !bytes.Equal(c.Data, data) {
		t.Fatalf("good chunk: %v", err)
	}
	for name, rep := range map[string][]byte{
		"another id": (&wire.Chunk{ID: id(1), Data: data}).Marshal(),
		"other data": (&wire.Chunk{ID: cid, Data: []byte("chunK")}).Marshal(),
		"truncated":  (&wire.Chunk{ID: cid, Data: data}).Marshal()[:10],
	} {
		if _, err := Fetched(rep, le, 64); err == nil {
			t.Errorf("%s taken", name)
		}
	}
	if _, err := Fetched((&wire.Chunk{ID: cid, Data: data}).Marshal(), le, len(data)-1); err == nil {
		t.Error("a chunk over the cap taken")
	}
	short := le
	short.Len--
	if _, err := Fetched((&wire.Chunk{ID: cid, Data: data}).Marshal(), short, 64); err == nil {
		t.Error("a chunk of another length than listed taken")
	}
}

// TestChainSigs: the chain's signatures are taken in position order;
// one from another position, or not a signature, fails them all.
func TestChainSigs(t *testing.T) {
	t.Parallel()
	reps := [][]byte{(&wire.Sig{Index: 0, Sig: [64]byte{1}}).Marshal(), (&wire.Sig{Index: 1, Sig: [64]byte{2}}).Marshal()}
	sigs, err := ChainSigs(reps)
	if err != nil || len(sigs) != 2 || sigs[0] != ([64]byte{1}) || sigs[1] != ([64]byte{2}) {
		t.Fatalf("signatures %v, %v", sigs, err)
	}
	if _, err := ChainSigs([][]byte{reps[1], reps[0]}); err == nil || !strings.Contains(err.Error(), "position 0") {
		t.Errorf("signatures out of order: %v", err)
	}
	if _, err := ChainSigs([][]byte{reps[0], {1}}); err == nil {
		t.Error("a reply that is no signature taken")
	}
}

// TestListRecords: a final list is stored as its entries with their
// lengths and its pairs, each pair by its entry's id.
func TestListRecords(t *testing.T) {
	t.Parallel()
	pub := Published{
		Requests: map[[32]byte]bool{id(1): true, id(2): true},
		ReqByPos: [][][32]byte{{id(2)}, {id(1), id(2)}},
	}
	rl := ProposeList(listFacts(100), 0, pub, nil, map[[32]byte]uint32{id(1): 10, id(2): 20})
	reqs, ps := ListRecords(&rl)
	if len(reqs) != 2 || reqs[0].ID != id(1) || reqs[0].Length != 10 || reqs[1].ID != id(2) || reqs[1].Length != 20 {
		t.Errorf("requests %v", reqs)
	}
	want := []struct {
		pos uint32
		id  [32]byte
	}{{0, id(2)}, {1, id(1)}, {1, id(2)}}
	if len(ps) != len(want) {
		t.Fatalf("pairs %v", ps)
	}
	for i, w := range want {
		if ps[i].Pos != w.pos || ps[i].ID != w.id {
			t.Errorf("pair %d: %d %x, want %d %x", i, ps[i].Pos, ps[i].ID[:1], w.pos, w.id[:1])
		}
	}
}
