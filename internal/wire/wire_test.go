package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

var testLimits = Limits{Servers: 5, Clients: 16, Rounds: 4, Rows: 32, K: 2, Chunk: 64, Onion: 256, Reg: 512, Step: 4096, Index: 100, MaskSize: 4}

// TestRoundTrip: every vector's body, cut anywhere or with one byte more,
// is refused (truncated and trailing bytes).
func TestRoundTrip(t *testing.T) {
	for _, v := range vectors() {
		if v.t == TypeError {
			continue // any text up to MaxErrorText is a refusal
		}
		body := v.msg.Marshal()
		for n := 0; n < len(body); n++ {
			if _, err := v.dec(body[:n]); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes accepted", v.name, n, len(body))
			}
		}
		if _, err := v.dec(append(append([]byte(nil), body...), 0)); err == nil {
			t.Fatalf("%s: trailing byte accepted", v.name)
		}
	}
}

func TestCountBound(t *testing.T) {
	// A count that claims more elements than the body holds must fail
	// before allocating.
	var e Enc
	e.Fixed(make([]byte, 32))
	e.U32(1)
	e.U32(1 << 30)
	var m SubmitBatch
	if err := m.Unmarshal(e.B, Limits{Clients: 1 << 31, Onion: 10}); !errors.Is(err, ErrShort) {
		t.Fatalf("got %v, want ErrShort", err)
	}
	if err := m.Unmarshal(e.B, testLimits); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestFrame(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, TypeHello, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), buf.Bytes()...)
	b, err := ReadFrame(bytes.NewReader(raw), TypeHello, 3)
	if err != nil || string(b) != "abc" {
		t.Fatalf("ReadFrame = %q, %v", b, err)
	}
	if _, err := ReadFrame(bytes.NewReader(raw), TypeHello, 2); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("cap not enforced: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(raw), TypeAck, 3); err == nil {
		t.Fatal("wrong type accepted")
	}
	if _, err := ReadFrame(bytes.NewReader(raw[:6]), TypeHello, 3); err == nil {
		t.Fatal("truncated body accepted")
	}
	buf.Reset()
	_ = WriteError(&buf, errors.New("no such epoch"))
	var re *RemoteError
	if _, err := ReadFrame(&buf, TypeHello, 3); !errors.As(err, &re) || re.Text != "no such epoch" {
		t.Fatalf("error frame: %v", err)
	}
}

// TestRefusalCrossesWire: a Refusal sent as a peer's refusal is
// recognised by errors.Is on the receiving end, through wrapping, and only
// by its whole text.
func TestRefusalCrossesWire(t *testing.T) {
	const busy = Refusal("node: busy")
	var buf bytes.Buffer
	_ = WriteError(&buf, busy)
	_, err := ReadFrame(&buf, TypeHello, 3)
	if !errors.Is(fmt.Errorf("call: %w", err), busy) {
		t.Fatalf("refusal not recognised: %v", err)
	}
	for _, other := range []error{Refusal("node: busy, and more"), errors.New("node: bus")} {
		buf.Reset()
		_ = WriteError(&buf, other)
		if _, err := ReadFrame(&buf, TypeHello, 3); errors.Is(err, busy) {
			t.Fatalf("%q taken for %q", err, busy)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, TypeHello, []byte("abc"))
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := ReadFrame(bytes.NewReader(b), TypeHello, 64)
		if err != nil {
			return
		}
		var out bytes.Buffer
		_ = WriteFrame(&out, TypeHello, body)
		if !bytes.HasPrefix(b, out.Bytes()) {
			t.Fatal("frame round trip differs")
		}
	})
}

// TestBulkMarshalSized: bulk messages are encoded into one allocation of
// exactly their size (Enc.Grow with the computed length).
func TestBulkMarshalSized(t *testing.T) {
	entries := [][]byte{bytes.Repeat([]byte{1}, 1000), bytes.Repeat([]byte{2}, 1000)}
	sub := Submit{Epoch: [32]byte{1}, Round: 3, Slot: 2, Onion: entries[0]}
	for name, b := range map[string][]byte{
		"batch":  (&Batch{Round: 1, S: 1, Entries: entries, ClientSigs: make([][64]byte, 2), ClientHashes: make([][32]byte, 2)}).Marshal(),
		"rows":   (&Rows{Round: 1, Slots: []uint32{1, 2}, Rows: entries}).Marshal(),
		"submit": sub.Marshal(),
		"subs":   (&SubmitBatch{Round: 3, Subs: []Submit{sub, sub}}).Marshal(),
		"chunk":  (&Chunk{Data: entries[1]}).Marshal(),
	} {
		if len(b) != cap(b) {
			t.Errorf("%s: %d bytes in a buffer of %d", name, len(b), cap(b))
		}
	}
}

// TestSegmentsEqualMarshal: the segment encoding of every bulk message is
// byte for byte its Marshal, for fields below and above RefMin.
func TestSegmentsEqualMarshal(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, RefMin)
	small := []byte("small")
	sub := Submit{Round: 3, Slot: 2, Onion: big}
	sub2 := Submit{Round: 3, Slot: 4, Onion: small}
	cases := map[string][2][]byte{}
	add := func(name string, m []byte, segs [][]byte) { cases[name] = [2][]byte{m, bytes.Join(segs, nil)} }
	add("submit big", sub.Marshal(), sub.Segments())
	add("submit small", sub2.Marshal(), sub2.Segments())
	sb := SubmitBatch{Round: 3, Subs: []Submit{sub, sub2, sub}}
	add("submit batch", sb.Marshal(), sb.Segments())
	add("empty submit batch", (&SubmitBatch{}).Marshal(), (&SubmitBatch{}).Segments())
	b := Batch{Round: 1, S: 2, Entries: [][]byte{big, small, big, big}, ClientSigs: make([][64]byte, 4), ClientHashes: make([][32]byte, 4), Root: [32]byte{9}}
	add("batch", b.Marshal(), b.Segments())
	add("empty batch", (&Batch{}).Marshal(), (&Batch{}).Segments())
	r := Rows{Round: 7, Slots: []uint32{1, 2}, Rows: [][]byte{big, small}}
	add("rows", r.Marshal(), r.Segments())
	for name, c := range cases {
		if !bytes.Equal(c[0], c[1]) {
			t.Errorf("%s: segments differ from Marshal (%d vs %d bytes)", name, len(c[1]), len(c[0]))
		}
	}
	// The big fields are referred to, not copied.
	segs := b.Segments()
	found := false
	for _, s := range segs {
		found = found || (len(s) == len(big) && &s[0] == &big[0])
	}
	if !found {
		t.Fatal("batch segments copied the entries")
	}
	var w bytes.Buffer
	if err := WriteFrameSegments(&w, TypeBatch, segs); err != nil {
		t.Fatal(err)
	}
	var w2 bytes.Buffer
	_ = WriteFrame(&w2, TypeBatch, b.Marshal())
	if !bytes.Equal(w.Bytes(), w2.Bytes()) {
		t.Fatal("WriteFrameSegments differs from WriteFrame")
	}
}

// TestBatchZeroRuns: elided zero runs come back as zeros, the encoding
// shrinks by them, a decoded batch re-encodes to the same bytes, and runs
// that overflow the entry cap or lie outside the bytes sent are refused.
func TestBatchZeroRuns(t *testing.T) {
	full := make([]byte, 3*RefMin)
	copy(full, "head")
	copy(full[len(full)-4:], "tail")
	other := []byte("no zeros here")
	b := Batch{Round: 2, S: 3, Entries: [][]byte{full, other}, Zeros: []ZeroRun{{At: 4, N: uint32(len(full) - 8)}, {}},
		ClientSigs: make([][64]byte, 2), ClientHashes: make([][32]byte, 2)}
	enc := b.Marshal()
	if !bytes.Equal(bytes.Join(b.Segments(), nil), enc) {
		t.Fatal("segments differ from Marshal")
	}
	if len(enc) > 400 {
		t.Fatalf("elided batch of %d bytes: the run was sent", len(enc))
	}
	l := Limits{Clients: 4, Onion: len(full)}
	var got Batch
	if err := got.Unmarshal(enc, l); err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 2 || !bytes.Equal(got.Entries[0], full) || !bytes.Equal(got.Entries[1], other) {
		t.Fatal("entries not restored")
	}
	if !bytes.Equal(got.Marshal(), enc) {
		t.Fatal("decode → encode differs")
	}
	// Rebuilt in recycled buffers full of old bytes: the same entries.
	var dirty Batch
	err := dirty.UnmarshalAlloc(enc, l, func(n int) []byte { return bytes.Repeat([]byte{0xee}, n) })
	if err != nil || !bytes.Equal(dirty.Entries[0], full) || !bytes.Equal(dirty.Entries[1], other) {
		t.Fatalf("entries rebuilt in used buffers differ: %v", err)
	}
	// A run the caller's entry cannot hold is sent whole.
	b2 := Batch{Entries: [][]byte{other}, Zeros: []ZeroRun{{At: 5, N: 100}}}
	var g2 Batch
	if err := g2.Unmarshal(b2.Marshal(), l); err != nil || !bytes.Equal(g2.Entries[0], other) {
		t.Fatalf("overlong run: %v", err)
	}
	bad := func(at, n uint32, rest []byte, onion int) error {
		var e Enc
		e.Fixed(make([]byte, 32))
		e.U32(0)
		e.U16(1)
		e.U32(1)
		e.U32(at)
		e.U32(n)
		e.Bytes(rest)
		encSigs(&e, nil)
		e.U32(0)
		e.Fixed(make([]byte, 96))
		var g Batch
		return g.Unmarshal(e.B, Limits{Clients: 4, Onion: onion})
	}
	if err := bad(0, 0, []byte("ok"), 10); err != nil {
		t.Fatalf("plain entry refused: %v", err)
	}
	for name, err := range map[string]error{
		"empty run with an offset": bad(3, 0, []byte("abc"), 10),
		"run past the bytes sent":  bad(4, 2, []byte("abc"), 10),
		"run beyond the cap":       bad(1, 8, []byte("abc"), 10),
		"huge run":                 bad(0, 1<<31, []byte("abc"), 1<<20),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRoundListFlags: a request list's flags are signed with it; a flag
// other than ListVoid, or a void list with entries or published ids, is
// refused.
func TestRoundListFlags(t *testing.T) {
	l := Limits{Rows: 4, Clients: 4}
	ok := RoundList{Round: 1, Flags: ListVoid}
	var m RoundList
	if err := m.Unmarshal(ok.Marshal(), l); err != nil || !m.Void() {
		t.Fatalf("void list: %v, void %v", err, m.Void())
	}
	plain := RoundList{Round: 1}
	if string(plain.MarshalBody()) == string(ok.MarshalBody()) {
		t.Fatal("the void flag is not in the signed body")
	}
	for name, bad := range map[string]RoundList{
		"unknown flag":    {Flags: 2},
		"void with entry": {Flags: ListVoid, Entries: []ListEntry{{}}},
		"void, published": {Flags: ListVoid, Published: make([][32]byte, 1)},
	} {
		if err := m.Unmarshal(bad.Marshal(), l); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
}

// TestRoundListPairs (§6.3 v3): a request list's (position, entry) pairs
// are signed with it and come back as sent; a pair naming no entry or a
// position past the clients' cap, a pair out of order or twice, and a
// void list with a pair are refused.
func TestRoundListPairs(t *testing.T) {
	l := Limits{Rows: 4, Clients: 4, K: 2}
	ok := RoundList{Round: 1, Entries: []ListEntry{{ID: [32]byte{1}}, {ID: [32]byte{2}}}, Pairs: []ListPair{{0, 1}, {3, 0}, {3, 1}}}
	var m RoundList
	if err := m.Unmarshal(ok.Marshal(), l); err != nil || len(m.Pairs) != 3 || m.Pairs[1] != (ListPair{3, 0}) || m.PairID(2) != [32]byte{2} {
		t.Fatalf("pairs: %v, %v", err, m.Pairs)
	}
	bare := ok
	bare.Pairs = nil
	if string(bare.MarshalBody()) == string(ok.MarshalBody()) {
		t.Fatal("the pairs are not in the signed body")
	}
	ents := ok.Entries
	for name, bad := range map[string]RoundList{
		"no such entry":   {Entries: ents, Pairs: []ListPair{{0, 2}}},
		"position beyond": {Entries: ents, Pairs: []ListPair{{4, 0}}},
		"out of order":    {Entries: ents, Pairs: []ListPair{{1, 0}, {0, 0}}},
		"twice":           {Entries: ents, Pairs: []ListPair{{1, 0}, {1, 0}}},
		"void with pair":  {Flags: ListVoid, Pairs: []ListPair{{0, 0}}},
		"too many":        {Entries: ents, Pairs: make([]ListPair, l.Clients*l.K+1)},
	} {
		if err := m.Unmarshal(bad.Marshal(), l); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
}

// TestBatchCap: the fullest batch the limits let a receiver take (every
// entry of Limits.Onion bytes, a signature and a hash each) is BatchCap
// bytes, not one more.
func TestBatchCap(t *testing.T) {
	l := Limits{Clients: 5, Onion: 300}
	b := Batch{ClientSigs: make([][64]byte, l.Clients), ClientHashes: make([][32]byte, l.Clients)}
	for range l.Clients {
		b.Entries = append(b.Entries, make([]byte, l.Onion))
	}
	enc := b.Marshal()
	if len(enc) != BatchCap(l) {
		t.Fatalf("full batch of %d bytes, cap %d", len(enc), BatchCap(l))
	}
	if err := new(Batch).Unmarshal(enc, l); err != nil {
		t.Fatal(err)
	}
	if BatchCap(Limits{Clients: 1 << 20, Onion: 1 << 20}) != MaxFrame {
		t.Fatal("cap above MaxFrame")
	}
}
