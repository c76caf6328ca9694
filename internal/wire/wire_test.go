package wire

import (
	"bytes"
	"errors"
	"testing"
)

var testLimits = Limits{Servers: 5, Clients: 16, Rounds: 4, Rows: 32, K: 2, Chunk: 64, Onion: 256, Reg: 512, Step: 4096, Index: 100, MaskSize: 4}

func sampleDesc() Descriptor {
	g := GroupEntry{PeerID: []byte("peer"), Nick: []byte("alpha"), Addrs: [][]byte{{4, 127, 0, 0, 1}}, PoK: bytes.Repeat([]byte{7}, 64), Y: make([][32]byte, 4), Yp: make([][32]byte, 4)}
	g.X[0], g.D[1], g.Y[2][3] = 1, 2, 3
	return Descriptor{Number: 7, Nonce: [32]byte{9}, Params: Params{ChunkSize: 64, K: 2, W: 2, Rounds: 4, MaxClients: 16, MaxRows: 32, RegWindowMs: 1000, RoundLimitMs: 5000},
		Group: []GroupEntry{g, g}, Clients: []ClientEntry{{RegKey: [32]byte{1}, Primary: 1}}}
}

// codecs lists every decoder with a valid sample encoding, for the round
// trip test and the fuzz target.
func codecs() []struct {
	name   string
	sample []byte
	rt     func([]byte) ([]byte, error)
} {
	d := sampleDesc()
	sub := Submit{Epoch: [32]byte{1}, Round: 3, Slot: 2, Onion: []byte("onion"), Sig: [64]byte{5}}
	type c = struct {
		name   string
		sample []byte
		rt     func([]byte) ([]byte, error)
	}
	return []c{
		{"hello", (&Hello{Version: 1, Role: 1, Nick: []byte("n"), Addrs: [][]byte{{1, 2}}, Peers: [][]byte{{3}, {4, 5}}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Hello
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"prepare", (&Prepare{Number: 1, Params: d.Params, Chain: [][]byte{[]byte("a"), []byte("b")}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Prepare
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"entry", d.Group[0].Marshal(), func(b []byte) ([]byte, error) {
			var m GroupEntry
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"descriptor", d.Marshal(), func(b []byte) ([]byte, error) {
			var m Descriptor
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"signed", (&Signed{Final: true, Desc: d, Sigs: make([][64]byte, 2)}).Marshal(), func(b []byte) ([]byte, error) {
			var m Signed
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"route", (&Route{Epoch: [32]byte{3}, S: 1, Out: 4, In: 2, Proof: bytes.Repeat([]byte{8}, 64)}).Marshal(), func(b []byte) ([]byte, error) {
			var m Route
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"sig", (&Sig{Index: 2, Sig: [64]byte{1}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Sig
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"register", (&Register{Reg: []byte("reg")}).Marshal(), func(b []byte) ([]byte, error) {
			var m Register
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"reglist", (&RegList{Regs: []Register{{Reg: []byte("a")}, {Reg: []byte("b")}}}).Marshal(), func(b []byte) ([]byte, error) {
			var m RegList
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"epochref", (&EpochRef{Round: 3, Reason: []byte("why")}).Marshal(), func(b []byte) ([]byte, error) {
			var m EpochRef
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"step", (&Step{S: 1, Result: []byte("res")}).Marshal(), func(b []byte) ([]byte, error) {
			var m Step
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"submit", sub.Marshal(), func(b []byte) ([]byte, error) {
			var m Submit
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"submitbatch", (&SubmitBatch{Round: 1, Subs: []Submit{sub, sub}}).Marshal(), func(b []byte) ([]byte, error) {
			var m SubmitBatch
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"batch", (&Batch{Round: 1, S: 2, Entries: [][]byte{[]byte("x"), []byte("y")}, ClientSigs: make([][64]byte, 2), ClientHashes: make([][32]byte, 2)}).Marshal(), func(b []byte) ([]byte, error) {
			var m Batch
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"batch with zero runs", (&Batch{Round: 1, S: 3, Entries: [][]byte{[]byte("ab\x00\x00\x00cd"), []byte("y")}, Zeros: []ZeroRun{{At: 2, N: 3}, {}}, ClientSigs: make([][64]byte, 2), ClientHashes: make([][32]byte, 2)}).Marshal(), func(b []byte) ([]byte, error) {
			var m Batch
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"roundlist", (&RoundList{Round: 1, Entries: []ListEntry{{ID: [32]byte{1}, Len: 5}}, Published: [][32]byte{{2}}, Sigs: make([][64]byte, 3)}).Marshal(), func(b []byte) ([]byte, error) {
			var m RoundList
			err := m.Unmarshal(b, testLimits)
			return m.Marshal(), err
		}},
		{"rows", (&Rows{Round: 1, Slots: []uint32{4}, Rows: [][]byte{{1}, {2}}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Rows
			err := m.Unmarshal(b, 4, 2, 64)
			return m.Marshal(), err
		}},
		{"root", (&Root{Round: 2, S: 1, Root: [32]byte{7}, Sig: [64]byte{8}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Root
			err := m.Unmarshal(b)
			return m.Marshal(), err
		}},
		{"chunk", (&Chunk{ID: [32]byte{3}, Data: []byte("data")}).Marshal(), func(b []byte) ([]byte, error) {
			var m Chunk
			err := m.Unmarshal(b, 64)
			return m.Marshal(), err
		}},
		{"index", (&Index{Entries: []IndexEntry{{Name: []byte("f.txt"), Size: 9, Chunks: 1, Time: 1700000000}}}).Marshal(), func(b []byte) ([]byte, error) {
			var m Index
			err := m.Unmarshal(b, 100)
			return m.Marshal(), err
		}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range codecs() {
		out, err := c.rt(c.sample)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(out, c.sample) {
			t.Fatalf("%s: re-encoding differs", c.name)
		}
		// Every strict prefix and one trailing byte must be rejected.
		for n := 0; n < len(c.sample); n++ {
			if _, err := c.rt(c.sample[:n]); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes accepted", c.name, n, len(c.sample))
			}
		}
		if _, err := c.rt(append(append([]byte(nil), c.sample...), 0)); err == nil {
			t.Fatalf("%s: trailing byte accepted", c.name)
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

func FuzzDecoders(f *testing.F) {
	cs := codecs()
	for i, c := range cs {
		f.Add(uint8(i), c.sample)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := cs[int(which)%len(cs)]
		out, err := c.rt(b)
		if err != nil {
			return
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("%s: decode→encode changed the bytes", c.name)
		}
	})
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
