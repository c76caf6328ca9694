package wire

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.txt from the vector table")

// vectorFile holds one frame per message type; docs/ cite it.
const vectorFile = "testdata/vectors.txt"

// message is what every wire message has in common.
type message interface{ Marshal() []byte }

// raw is a body with no fields of its own (TypeAck) or a
// refusal's text (TypeError).
type raw []byte

func (r raw) Marshal() []byte { return append([]byte{}, r...) }

// vector is one message type with a deterministic instance and the decoder
// a receiver runs on it.
type vector struct {
	name string
	t    Type
	msg  message
	dec  func(body []byte) (message, error)
}

// k32 and k64 are arrays whose bytes count up from x, so that a field
// written in the wrong place shows in the vector.
func k32(x byte) (a [32]byte) {
	for i := range a {
		a[i] = x + byte(i)
	}
	return a
}

func k64(x byte) (a [64]byte) {
	for i := range a {
		a[i] = x + byte(i)
	}
	return a
}

func vectorParams() Params {
	return Params{ChunkSize: 64, K: 2, W: 2, Rounds: 2, MaxClients: 16, MaxRows: 32, RegWindowMs: 1000, RoundLimitMs: 5000}
}

func vectorEntry(x byte) GroupEntry {
	return GroupEntry{PeerID: []byte{0, 0x24, x}, Nick: []byte("s"), Addrs: [][]byte{{4, 127, 0, 0, 1, 6, 0x10, x}},
		X: k32(x), PoK: []byte{x, x + 1, x + 2}, D: k32(x + 0x40), Y: [][32]byte{k32(x + 1), k32(x + 2)}, Yp: [][32]byte{k32(x + 3), k32(x + 4)}, Commit: k32(x + 5)}
}

// vectorCert is a certificate of number 6 of each kind (signatures are
// arbitrary bytes: the codec does not verify them).
func vectorCert(kind uint8) Cert {
	c := Cert{Kind: kind, Number: 6, Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}, {0, 0x24, 0x30}},
		Sigs: []CertSig{{0, k64(0x40)}, {1, k64(0x41)}, {2, k64(0x42)}}, Abort: []byte{}}
	switch kind {
	case CertFinal:
		c.Epoch, c.Digest = k32(0x50), k32(0x60)
	case CertAbort:
		c.Epoch = k32(0x50)
		a := Abort{Epoch: k32(0x50), Number: 6, Kind: AbortCoord, Signer: []byte{0, 0x24, 0x20}, Reason: []byte("open failed"), Sig: k64(0x70)}
		c.Abort = a.Marshal()
	case CertTimeout:
		c.Sigs = []CertSig{{0, k64(0x40)}, {2, k64(0x42)}}
	case CertNone:
		c = Cert{Chain: [][]byte{}, Sigs: []CertSig{}, Abort: []byte{}}
	}
	return c
}

func vectorDesc(final bool) Descriptor {
	d := Descriptor{Number: 7, Nonce: k32(0x90), Params: vectorParams(), Group: []GroupEntry{vectorEntry(0x10), vectorEntry(0x20)}, Previous: vectorCert(CertAbort), Clients: []ClientEntry{}, Reveals: [][32]byte{}}
	if final {
		d.Clients = []ClientEntry{{RegKey: k32(0xa0), Primary: 1, XKey: k32(0xb0), RegHash: k32(0xc0)}}
		d.Reveals = [][32]byte{k32(0xd0), k32(0xd1)}
	}
	return d
}

func vectorSubmit(slot uint32) Submit {
	return Submit{Epoch: k32(1), Round: 1, Slot: slot, Onion: []byte{0xee, byte(slot)}, Sig: k64(0x50 + byte(slot))}
}

// with returns a decoder that fills a new message with f.
func with[M any, P interface {
	*M
	message
}](f func(P, []byte) error) func([]byte) (message, error) {
	return func(b []byte) (message, error) {
		m := P(new(M))
		err := f(m, b)
		return m, err
	}
}

// vectors lists every message type of the protocol (and the Batch in each
// of its shapes), in type order.
func vectors() []vector {
	l := testLimits
	empty := func(b []byte) (message, error) {
		if len(b) != 0 {
			return nil, fmt.Errorf("wire: %d bytes in an empty body", len(b))
		}
		return raw{}, nil
	}
	rows := func(maxSlots, k, rowMax int) func([]byte) (message, error) {
		return with(func(m *Rows, b []byte) error { return m.Unmarshal(b, maxSlots, k, rowMax) })
	}
	return []vector{
		{"hello", TypeHello, &Hello{Version: 1, Role: 1, Nick: []byte("alpha"), Addrs: [][]byte{{4, 127, 0, 0, 1}}, Peers: [][]byte{{4, 10, 0, 0, 2}, {4, 10, 0, 0, 3}}},
			with(func(m *Hello, b []byte) error { return m.Unmarshal(b) })},
		{"prepare", TypePrepare, &Prepare{Number: 7, Nonce: k32(0x90), Params: vectorParams(), Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}}, Previous: vectorCert(CertTimeout)},
			with(func(m *Prepare, b []byte) error { return m.Unmarshal(b) })},
		{"entry", TypeEntry, func() *GroupEntry { g := vectorEntry(0x10); return &g }(),
			with(func(m *GroupEntry, b []byte) error { return m.Unmarshal(b, l) })},
		{"signreq", TypeSignReq, &Signed{Final: false, Desc: vectorDesc(false), Sigs: [][64]byte{}},
			with(func(m *Signed, b []byte) error { return m.Unmarshal(b, l) })},
		{"sig", TypeSig, &Sig{Index: 1, Sig: k64(0x30)},
			with(func(m *Sig, b []byte) error { return m.Unmarshal(b) })},
		{"signed", TypeSigned, &Signed{Final: true, Desc: vectorDesc(true), Sigs: [][64]byte{k64(0x30), k64(0x31)}},
			with(func(m *Signed, b []byte) error { return m.Unmarshal(b, l) })},
		{"closereq", TypeCloseReq, &EpochRef{Epoch: k32(1), Reason: []byte{}},
			with(func(m *EpochRef, b []byte) error { return m.Unmarshal(b) })},
		{"reglist", TypeRegList, &RegList{Epoch: k32(1), Reveal: k32(0xd0), Regs: []Forwarded{
			{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)}, Sig: k64(0x68)},
			{Primary: 1, Reg: Register{Epoch: k32(1), RegKey: k32(0xa1), XKey: k32(0xb1), Reg: []byte("reg1"), Sig: k64(0x61)}, Sig: k64(0x69)}},
			Orders: []Order{{Epoch: k32(1), Primary: 0, Keys: [][32]byte{k32(0xa0), k32(0xa2)}, Sig: k64(0x6a)}, {Epoch: k32(1), Primary: 1, Keys: [][32]byte{k32(0xa1)}, Sig: k64(0x6b)}},
			Rest:   []Forwarded{{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa2), XKey: k32(0xb2), Reg: []byte("reg2"), Sig: k64(0x62)}, Sig: k64(0x6c)}}},
			with(func(m *RegList, b []byte) error { return m.Unmarshal(b, l) })},
		{"route", TypeRoute, &Route{Epoch: k32(1), S: 1, Out: 2, In: 3, Proof: []byte{9, 9}},
			with(func(m *Route, b []byte) error { return m.Unmarshal(b) })},
		{"step", TypeStep, &Step{Epoch: k32(1), S: 1, Result: []byte("step result"), Sig: k64(0x70)},
			with(func(m *Step, b []byte) error { return m.Unmarshal(b, l) })},
		{"abort", TypeAbort, &Abort{Epoch: k32(1), Number: 9, Round: 3, Kind: AbortFault, Signer: []byte{0, 0x24, 0x10}, Reason: []byte("round 3 void"), Sig: k64(0x31)},
			with(func(m *Abort, b []byte) error { return m.Unmarshal(b) })},
		{"timeoutvote", TypeTimeoutVote, &Cert{Kind: CertTimeout, Number: 6, Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}, {0, 0x24, 0x30}},
			Sigs: []CertSig{{2, k64(0x42)}}, Abort: []byte{}},
			with(func(m *Cert, b []byte) error { return m.Unmarshal(b) })},
		{"certreq", TypeCertReq, &CertReq{From: 6},
			with(func(m *CertReq, b []byte) error { return m.Unmarshal(b) })},
		{"certs", TypeCerts, &Certs{Certs: []Cert{vectorCert(CertFinal)}},
			with(func(m *Certs, b []byte) error { return m.Unmarshal(b) })},
		{"waitopen", TypeWaitOpen, &EpochRef{Epoch: k32(2), Reason: []byte{}},
			with(func(m *EpochRef, b []byte) error { return m.Unmarshal(b) })},
		{"register", TypeRegister, &ClientRegister{Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)},
			LTKey: k32(0xd0), LTSig: k64(0xe0)},
			with(func(m *ClientRegister, b []byte) error { return m.Unmarshal(b, l) })},
		{"forward", TypeForward, &Forwarded{Primary: 1, Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)},
			Sig: k64(0x68)},
			with(func(m *Forwarded, b []byte) error { return m.Unmarshal(b, l) })},
		{"badforward", TypeBadForward, &Forwarded{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa1), XKey: k32(0xb1), Reg: []byte("bad"), Sig: k64(0x61)},
			Sig: k64(0x69)},
			with(func(m *Forwarded, b []byte) error { return m.Unmarshal(b, l) })},
		{"submit", TypeSubmit, func() *Submit { s := vectorSubmit(3); return &s }(),
			with(func(m *Submit, b []byte) error { return m.Unmarshal(b, l) })},
		{"handover", TypeHandover, func() *Submit { s := vectorSubmit(5); s.Round = 40; return &s }(),
			with(func(m *Submit, b []byte) error { return m.Unmarshal(b, l) })},
		{"submitbatch", TypeSubmitBatch, &SubmitBatch{Epoch: k32(1), Round: 1, Subs: []Submit{vectorSubmit(0), vectorSubmit(2)}},
			with(func(m *SubmitBatch, b []byte) error { return m.Unmarshal(b, l) })},
		{"batch", TypeBatch, &Batch{Epoch: k32(1), Round: 2, S: 1, Entries: [][]byte{{0xaa, 0xab}, {0xba, 0xbb}},
			ClientSigs: [][64]byte{k64(5), k64(6)}, ClientHashes: [][32]byte{k32(7), k32(8)}, Root: k32(9), Sig: k64(10)},
			with(func(m *Batch, b []byte) error { return m.Unmarshal(b, l) })},
		{"batch-zero-runs", TypeBatch, &Batch{Epoch: k32(1), Round: 2, S: 3, Entries: [][]byte{{0xaa, 0, 0, 0, 0xbb}, {0xcc}},
			Zeros: []ZeroRun{{At: 1, N: 3}, {}}, ClientSigs: [][64]byte{k64(5), k64(6)}, ClientHashes: [][32]byte{k32(7), k32(8)}, Root: k32(9), Sig: k64(10)},
			with(func(m *Batch, b []byte) error { return m.Unmarshal(b, l) })},
		{"proposal", TypeProposal, &RoundList{Epoch: k32(1), Round: 2, Entries: []ListEntry{{ID: k32(0xd0), Len: 64}, {ID: k32(0xd1), Len: 5}}, Published: [][32]byte{k32(0xd1)}, Manifests: [][32]byte{}, Sigs: [][64]byte{}},
			with(func(m *RoundList, b []byte) error { return m.Unmarshal(b, l) })},
		{"roundlist", TypeRoundList, &RoundList{Epoch: k32(1), Round: 2, Entries: []ListEntry{{ID: k32(0xd0), Len: 64}, {ID: k32(0xd1), Len: 5}}, Published: [][32]byte{k32(0xd1)}, Manifests: [][32]byte{k32(0xd1)}, Pairs: []ListPair{{Pos: 0, Entry: 1}, {Pos: 2, Entry: 0}, {Pos: 2, Entry: 1}}, Sigs: [][64]byte{k64(0x30), k64(0x31)}},
			with(func(m *RoundList, b []byte) error { return m.Unmarshal(b, l) })},
		{"roundlist-void", TypeRoundList, &RoundList{Epoch: k32(1), Round: 3, Entries: []ListEntry{}, Published: [][32]byte{}, Manifests: [][32]byte{}, Flags: ListVoid, Sigs: [][64]byte{k64(0x30), k64(0x31)}},
			with(func(m *RoundList, b []byte) error { return m.Unmarshal(b, l) })},
		{"padanswers", TypePadAnswers, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{0, 5}, Rows: [][]byte{{1, 2}, {3, 4}, {5, 6}, {7, 8}}}, rows(16, 2, 8)},
		{"query", TypeQuery, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{5}, Rows: [][]byte{{0xf0}, {0x0f}}}, rows(1, 2, 4)},
		{"answer", TypeAnswer, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{5}, Rows: [][]byte{{1, 2, 3}, {4, 5, 6}}}, rows(1, 2, 8)},
		{"getchunk", TypeGetChunk, &Chunk{ID: k32(0xd0), Data: []byte{}},
			with(func(m *Chunk, b []byte) error { return m.Unmarshal(b, 0) })},
		{"chunk", TypeChunk, &Chunk{ID: k32(0xd0), Data: []byte("chunk data")},
			with(func(m *Chunk, b []byte) error { return m.Unmarshal(b, 64) })},
		{"waitlist", TypeWaitList, &EpochRef{Epoch: k32(1), Round: 4, Reason: []byte{}},
			with(func(m *EpochRef, b []byte) error { return m.Unmarshal(b) })},
		{"getbatch", TypeGetBatch, &BatchRef{Epoch: k32(1), Round: 2, S: 1},
			with(func(m *BatchRef, b []byte) error { return m.Unmarshal(b) })},
		{"lack", TypeLack, &BatchRef{Epoch: k32(1), Round: 2, S: 1},
			with(func(m *BatchRef, b []byte) error { return m.Unmarshal(b) })},
		{"closingproposal", TypeClosingProposal, &ClosingProposal{Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}, {ClosedVoid, k32(0xa1)}, {}}, Pairs: 7, Pool: k32(0xa2)}},
			with(func(m *ClosingProposal, b []byte) error { return m.Unmarshal(b, 8) })},
		{"closing", TypeClosing, &Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}, {ClosedVoid, k32(0xa1)}, {}}, Pairs: 7, Pool: k32(0xa2), Sigs: [][64]byte{k64(0x30), k64(0x31)}},
			with(func(m *Closing, b []byte) error { return m.Unmarshal(b, 8) })},
		{"windowreq", TypeWindowReq, &WindowReq{Epoch: k32(1), Number: 9, Held: [][32]byte{k32(0xb0)}},
			with(func(m *WindowReq, b []byte) error { return m.Unmarshal(b) })},
		{"window", TypeWindow, &Window{Items: []WindowItem{{Number: 8, Epoch: k32(0xb1), Group: []byte("descriptor"), Closing: []byte("record"), Pool: []byte("pool")}, {Number: 7, Epoch: k32(0xb0), Group: []byte{}, Closing: []byte{}, Pool: []byte{}}}},
			with(func(m *Window, b []byte) error { return m.Unmarshal(b) })},
		{"decoypool", TypeWindow, &DecoyPool{Epoch: k32(0xb1), Total: 9, Sample: []PoolPair{{Pos: 3, ID: k32(0xc1)}, {Pos: 0, ID: k32(0xc2)}}},
			with(func(m *DecoyPool, b []byte) error { return m.Unmarshal(b) })},
		{"root", TypeRoot, &Root{Epoch: k32(1), Round: 2, S: 1, Root: k32(9), Sig: k64(10)},
			with(func(m *Root, b []byte) error { return m.Unmarshal(b) })},
		{"receipt", TypeReceipt, &Receipt{Epoch: k32(1), Server: 2, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6d)},
			with(func(m *Receipt, b []byte) error { return m.Unmarshal(b) })},
		{"receiptset", TypeReceiptSet, &ReceiptSet{Epoch: k32(1), RegKey: k32(0xa0), Receipts: []Receipt{
			{Epoch: k32(1), Server: 0, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6e)}, {Epoch: k32(1), Server: 1, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6f)}}},
			with(func(m *ReceiptSet, b []byte) error { return m.Unmarshal(b) })},
		{"keyevidence", TypeKeyEvidence, &KeyEvidence{Epoch: k32(1), Slot: 3, LTKey: k32(0xd0), LTSig: k64(0xe0)},
			with(func(m *KeyEvidence, b []byte) error { return m.Unmarshal(b) })},
		{"dropreq", TypeDropReq, &DropReq{Epoch: k32(1), Round: 1, T: 2, In: 5},
			with(func(m *DropReq, b []byte) error { return m.Unmarshal(b) })},
		{"dropstep", TypeDropStep, &DropStep{Epoch: k32(1), Round: 1, T: 2, In: 5, Out: 3, Route: k64(0x40), Sig: k64(0x80)},
			with(func(m *DropStep, b []byte) error { return m.Unmarshal(b) })},
		{"indexreq", TypeIndexReq, &IndexReq{Cursor: 0x0102030405060708},
			with(func(m *IndexReq, b []byte) error { return m.Unmarshal(b) })},
		{"index", TypeIndex, &Index{Next: 7, More: true, Entries: []IndexEntry{{FileID: k32(0xe0), Name: []byte("f.txt"), Size: 9, Chunks: 1, Round: 2, Time: 1700000000}}, Manifests: [][]byte{[]byte("\x89RIFFLEM\x01\x02\x01\x00\x00\x04\x00\x00\x00\x00\x00")}, Removed: [][32]byte{k32(0xf0)}, Closings: [][]byte{(&Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}}, Sigs: [][64]byte{k64(0x30)}}).Marshal()}},
			with(func(m *Index, b []byte) error { return m.Unmarshal(b, 100) })},
		{"ack", TypeAck, raw{}, empty},
		{"error", TypeError, raw("no such epoch"), func(b []byte) (message, error) {
			if len(b) > MaxErrorText {
				return nil, ErrTooLarge
			}
			return raw(b), nil
		}},
	}
}

// frame is a vector's full frame: header and body.
func (v vector) frame() []byte {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, v.t, v.msg.Marshal()); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// vectorLines is the vector file's content, one line per vector:
// name, type number, SHA-256 of the frame, the frame in hex.
func vectorLines(vs []vector) string {
	var b strings.Builder
	b.WriteString("# riffle wire test vectors (protocol version 1), written by the tests of internal/wire.\n")
	b.WriteString("# One frame per line: name, message type, SHA-256 of the frame, frame (u8 type, u32 body length, body) in hex.\n")
	for _, v := range vs {
		f := v.frame()
		fmt.Fprintf(&b, "%s %d %x %x\n", v.name, v.t, sha256.Sum256(f), f)
	}
	return b.String()
}

// TestVectors pins every message type's encoding in testdata/vectors.txt
// and checks, for each, decode(encode(x)) == x and encode(decode(b)) == b
// from the file's bytes.
func TestVectors(t *testing.T) {
	vs := vectors()
	seen := map[Type]bool{}
	for _, v := range vs {
		seen[v.t] = true
	}
	for ty := Type(0); ty < 255; ty++ {
		if name := typeName(ty); name != "" && !seen[ty] {
			t.Errorf("message type %d (%s) has no vector", ty, name)
		}
	}
	want := vectorLines(vs)
	if *update {
		if err := os.WriteFile(vectorFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(vectorFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from the encodings (run go test -run TestVectors -update ./internal/wire/ after a deliberate change):\n%s", vectorFile, diffLines(string(got), want))
	}

	byName := map[string]vector{}
	for _, v := range vs {
		byName[v.name] = v
		// decode(encode(x)) == x.
		m, err := v.dec(v.msg.Marshal())
		if err != nil {
			t.Errorf("%s: decode: %v", v.name, err)
			continue
		}
		if !reflect.DeepEqual(m, v.msg) {
			t.Errorf("%s: decoded %+v, want %+v", v.name, m, v.msg)
		}
	}
	// encode(decode(b)) == b, from the file's bytes through ReadFrame.
	sc := bufio.NewScanner(bytes.NewReader(got))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("bad vector line %q", line)
		}
		v, ok := byName[f[0]]
		ty, err := strconv.Atoi(f[1])
		if !ok || err != nil || Type(ty) != v.t {
			t.Fatalf("vector %s: unknown name or type %s", f[0], f[1])
		}
		frame, err := hex.DecodeString(f[3])
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(frame); hex.EncodeToString(h[:]) != f[2] {
			t.Fatalf("vector %s: SHA-256 does not match the frame", f[0])
		}
		n++
		var body []byte
		if v.t == TypeError {
			_, err = ReadFrame(bytes.NewReader(frame), TypeAck, MaxErrorText)
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("error vector read as %v", err)
			}
			body = []byte(re.Text)
		} else if body, err = ReadFrame(bytes.NewReader(frame), v.t, len(frame)); err != nil {
			t.Fatalf("vector %s: %v", f[0], err)
		}
		m, err := v.dec(body)
		if err != nil {
			t.Fatalf("vector %s: decode: %v", f[0], err)
		}
		if !bytes.Equal(m.Marshal(), body) {
			t.Fatalf("vector %s: decode→encode differs", f[0])
		}
	}
	if n != len(vs) {
		t.Fatalf("%s holds %d vectors, want %d", vectorFile, n, len(vs))
	}
}

// typeName names every Type constant (for the coverage check above).
func typeName(t Type) string {
	names := map[Type]string{
		TypeHello: "hello", TypePrepare: "prepare", TypeEntry: "entry", TypeSignReq: "signreq", TypeSig: "sig",
		TypeSigned: "signed", TypeCloseReq: "closereq", TypeRegList: "reglist", TypeStep: "step", TypeRoute: "route",
		TypeAbort: "abort", TypeTimeoutVote: "timeoutvote", TypeCertReq: "certreq", TypeCerts: "certs", TypeWaitOpen: "waitopen", TypeRegister: "register", TypeSubmit: "submit", TypeHandover: "handover",
		TypeSubmitBatch: "submitbatch", TypeBatch: "batch", TypeProposal: "proposal", TypeRoundList: "roundlist",
		TypePadAnswers: "padanswers", TypeQuery: "query", TypeAnswer: "answer", TypeGetChunk: "getchunk",
		TypeChunk: "chunk", TypeWaitList: "waitlist", TypeIndexReq: "indexreq", TypeIndex: "index", TypeAck: "ack",
		TypeRoot: "root", TypeError: "error", TypeForward: "forward", TypeKeyEvidence: "keyevidence", TypeBadForward: "badforward",
		TypeGetBatch: "getbatch", TypeLack: "lack", TypeDropReq: "dropreq", TypeDropStep: "dropstep",
		TypeReceipt: "receipt", TypeReceiptSet: "receiptset",
		TypeClosingProposal: "closingproposal", TypeClosing: "closing",
		TypeWindowReq: "windowreq", TypeWindow: "window",
	}
	return names[t]
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "file: %.120s\nwant: %.120s\n", x, y)
		}
	}
	return out.String()
}
