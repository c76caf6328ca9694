package pirround

import (
	"bytes"
	"testing"
)

// rowsOf returns k rows of b bytes for each slot, filled with fill(slot, t).
func rowsOf(slots []uint32, k, b int, fill func(sl uint32, t int) byte) [][]byte {
	var out [][]byte
	for _, sl := range slots {
		for t := 0; t < k; t++ {
			out = append(out, bytes.Repeat([]byte{fill(sl, t)}, b))
		}
	}
	return out
}

// TestCombine (§6.3): with m = 3, a slot's answer is its own part XOR the
// two other servers' padded parts, combined only once all three are in;
// the first server's frame is kept (the parts alias it) and given back at
// the combination, the second's at once; a repeat of a server's parts, or
// parts after the combination, change nothing.
func TestCombine(t *testing.T) {
	const m, k, b = 3, 2, 4
	slots := []uint32{5, 9}
	p := New()
	own := map[uint32][][]byte{}
	for i, r := range rowsOf(slots, k, b, func(sl uint32, t int) byte { return byte(sl) + byte(t) }) {
		sl := slots[i/k]
		own[sl] = append(own[sl], r)
	}
	body1 := []byte("frame of server 1")
	free, added := p.AddPads(1, slots, rowsOf(slots, k, b, func(uint32, int) byte { return 0x10 }), k, body1)
	if free != nil || !added || len(p.PadBodies) != 1 {
		t.Fatalf("first parts: free %q added %v kept %d, want kept", free, added, len(p.PadBodies))
	}
	if free, added := p.AddPads(1, slots, rowsOf(slots, k, b, func(uint32, int) byte { return 0xff }), k, []byte("again")); string(free) != "again" || added {
		t.Fatalf("repeat of server 1: free %q added %v", free, added)
	}
	if _, _, ok := p.Combine(m); ok {
		t.Fatal("combined without the own part")
	}
	p.Own = own
	if _, _, ok := p.Combine(m); ok {
		t.Fatal("combined with one padded part of two")
	}
	body2 := []byte("frame of server 2")
	free, added = p.AddPads(2, slots, rowsOf(slots, k, b, func(uint32, int) byte { return 0x03 }), k, body2)
	if !bytes.Equal(free, body2) || !added {
		t.Fatalf("second parts: free %q added %v, want the frame back", free, added)
	}
	fresh, frames, ok := p.Combine(m)
	if !ok || !p.Done || len(fresh) != 2 || len(frames) != 1 || !bytes.Equal(frames[0], body1) || len(p.Pads) != 0 || p.PadBodies != nil {
		t.Fatalf("combine: ok %v done %v fresh %d frames %q pads %d", ok, p.Done, len(fresh), frames, len(p.Pads))
	}
	for _, sl := range slots {
		for tt := 0; tt < k; tt++ {
			want := bytes.Repeat([]byte{(byte(sl) + byte(tt)) ^ 0x10 ^ 0x03}, b)
			if got := p.Answers[sl][tt]; !bytes.Equal(got, want) {
				t.Fatalf("slot %d row %d: %x, want %x", sl, tt, got, want)
			}
		}
	}
	if free, added := p.AddPads(0, slots, rowsOf(slots, k, b, func(uint32, int) byte { return 0xff }), k, []byte("late")); string(free) != "late" || added {
		t.Fatalf("parts after the combination: free %q added %v", free, added)
	}
	if fresh, _, _ := p.Combine(m); len(fresh) != 0 {
		t.Fatalf("combined again: %d answers", len(fresh))
	}
}

// TestQuery (§6.3): a slot's masks are taken once; a resend of the same is
// no news, other masks for the slot are refused and change nothing.
func TestQuery(t *testing.T) {
	p := New()
	masks := [][]byte{{1, 2}, {3, 4}}
	if fresh, err := p.Query(7, masks); !fresh || err != nil {
		t.Fatalf("first query: fresh %v err %v", fresh, err)
	}
	if fresh, err := p.Query(7, [][]byte{{1, 2}, {3, 4}}); fresh || err != nil {
		t.Fatalf("resend: fresh %v err %v", fresh, err)
	}
	if fresh, err := p.Query(7, [][]byte{{1, 2}, {3, 5}}); fresh || err == nil {
		t.Fatalf("other masks: fresh %v err %v, want refused", fresh, err)
	}
	if got := p.Queries[7]; !bytes.Equal(got[1], []byte{3, 4}) {
		t.Fatalf("masks now %v", got)
	}
}

// TestDrop: a pruned round keeps nothing; an ended epoch's round drops its
// padded parts and keeps masks and answers for the requests in flight.
func TestDrop(t *testing.T) {
	fill := func() Round {
		p := New()
		p.Query(1, [][]byte{{1}})
		p.AddPads(1, []uint32{1}, [][]byte{{2}}, 1, []byte("f"))
		p.Own = map[uint32][][]byte{1: {{3}}}
		p.Answers[1] = [][]byte{{4}}
		return p
	}
	p := fill()
	p.DropPads()
	if len(p.Pads) != 0 || p.PadBodies != nil || len(p.Queries) != 1 || len(p.Answers) != 1 {
		t.Fatalf("after DropPads: %+v", p)
	}
	p = fill()
	p.Drop()
	if len(p.Pads)+len(p.Queries)+len(p.Answers)+len(p.PadFrom) != 0 || p.Own != nil || p.PadBodies != nil {
		t.Fatalf("after Drop: %+v", p)
	}
}

// TestCheckPads: padded answers are taken only for this primary's own
// slots, all of them in order, each row of the round's chunk size.
func TestCheckPads(t *testing.T) {
	mine := []uint32{2, 5}
	row := func(n int) []byte { return make([]byte, n) }
	for _, c := range []struct {
		name  string
		slots []uint32
		rows  [][]byte
		ok    bool
	}{
		{"own slots", []uint32{2, 5}, [][]byte{row(8), row(8)}, true},
		{"one missing", []uint32{2}, [][]byte{row(8)}, false},
		{"another primary's", []uint32{2, 6}, [][]byte{row(8), row(8)}, false},
		{"out of order", []uint32{5, 2}, [][]byte{row(8), row(8)}, false},
		{"short row", []uint32{2, 5}, [][]byte{row(8), row(7)}, false},
	} {
		if err := CheckPads(c.slots, c.rows, mine, 8); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
