package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// wideLimits let counts and lengths reach what the body itself allows, so
// that only the decoders' own checks against the bytes present bound what
// they allocate. Frame bounds what a Batch may rebuild.
var wideLimits = Limits{Servers: MaxServers, Clients: 1 << 24, Rounds: 1 << 24, Rows: 1 << 24, K: 16, Chunk: 1 << 24,
	Onion: 1 << 24, Reg: 1 << 24, Step: 1 << 24, Index: 1 << 24, MaskSize: 1 << 24, Frame: 1 << 16}

// wideDecoders decode every message type under wideLimits.
func wideDecoders() map[string]func([]byte) error {
	l := wideLimits
	return map[string]func([]byte) error{
		"hello":           func(b []byte) error { var m Hello; return m.Unmarshal(b) },
		"prepare":         func(b []byte) error { var m Prepare; return m.Unmarshal(b) },
		"entry":           func(b []byte) error { var m GroupEntry; return m.Unmarshal(b, l) },
		"descriptor":      func(b []byte) error { var m Descriptor; return m.Unmarshal(b, l) },
		"signed":          func(b []byte) error { var m Signed; return m.Unmarshal(b, l) },
		"sig":             func(b []byte) error { var m Sig; return m.Unmarshal(b) },
		"register":        func(b []byte) error { var m ClientRegister; return m.Unmarshal(b, l) },
		"forward":         func(b []byte) error { var m Forwarded; return m.Unmarshal(b, l) },
		"keyevidence":     func(b []byte) error { var m KeyEvidence; return m.Unmarshal(b) },
		"dropreq":         func(b []byte) error { var m DropReq; return m.Unmarshal(b) },
		"dropstep":        func(b []byte) error { var m DropStep; return m.Unmarshal(b) },
		"reglist":         func(b []byte) error { var m RegList; return m.Unmarshal(b, l) },
		"epochref":        func(b []byte) error { var m EpochRef; return m.Unmarshal(b) },
		"abort":           func(b []byte) error { var m Abort; return m.Unmarshal(b) },
		"timeoutvote":     func(b []byte) error { var m Cert; return m.Unmarshal(b) },
		"certreq":         func(b []byte) error { var m CertReq; return m.Unmarshal(b) },
		"certs":           func(b []byte) error { var m Certs; return m.Unmarshal(b) },
		"route":           func(b []byte) error { var m Route; return m.Unmarshal(b) },
		"step":            func(b []byte) error { var m Step; return m.Unmarshal(b, l) },
		"submit":          func(b []byte) error { var m Submit; return m.Unmarshal(b, l) },
		"submitbatch":     func(b []byte) error { var m SubmitBatch; return m.Unmarshal(b, l) },
		"batch":           func(b []byte) error { var m Batch; return m.Unmarshal(b, l) },
		"roundlist":       func(b []byte) error { var m RoundList; return m.Unmarshal(b, l) },
		"rows":            func(b []byte) error { var m Rows; return m.Unmarshal(b, 1<<24, 16, 1<<24) },
		"chunk":           func(b []byte) error { var m Chunk; return m.Unmarshal(b, 1<<24) },
		"index":           func(b []byte) error { var m Index; return m.Unmarshal(b, 1<<24) },
		"indexreq":        func(b []byte) error { var m IndexReq; return m.Unmarshal(b) },
		"root":            func(b []byte) error { var m Root; return m.Unmarshal(b) },
		"rootrelay":       func(b []byte) error { var m RootRelay; return m.Unmarshal(b) },
		"getbatch":        func(b []byte) error { var m BatchRef; return m.Unmarshal(b) },
		"lack":            func(b []byte) error { var m BatchRef; return m.Unmarshal(b) },
		"attestreq":       func(b []byte) error { var m AttestReq; return m.Unmarshal(b) },
		"attest":          func(b []byte) error { var m Attest; return m.Unmarshal(b) },
		"charge":          func(b []byte) error { var m Charge; return m.Unmarshal(b) },
		"receipt":         func(b []byte) error { var m Receipt; return m.Unmarshal(b) },
		"receiptset":      func(b []byte) error { var m ReceiptSet; return m.Unmarshal(b) },
		"closing":         func(b []byte) error { var m Closing; return m.Unmarshal(b, 1<<20) },
		"closingproposal": func(b []byte) error { var m ClosingProposal; return m.Unmarshal(b, 1<<20) },
		"closingsig":      func(b []byte) error { var m ClosingSig; return m.Unmarshal(b) },
		"listsig":         func(b []byte) error { var m ListSig; return m.Unmarshal(b) },
		"accuse":          func(b []byte) error { var m Accuse; return m.Unmarshal(b, 1<<24) },
		"blamereq":        func(b []byte) error { var m BlameReq; return m.Unmarshal(b) },
		"blamestep":       func(b []byte) error { var m BlameStep; return m.Unmarshal(b, 1<<24) },
		"equivocation":    func(b []byte) error { var m Equivocation; return m.Unmarshal(b) },
		"doublesubmit":    func(b []byte) error { var m DoubleSubmit; return m.Unmarshal(b) },
		"dupabort":        func(b []byte) error { var m DupAbort; return m.Unmarshal(b) },
		"dupproof":        func(b []byte) error { var m DupProof; return m.Unmarshal(b) },
		"windowreq":       func(b []byte) error { var m WindowReq; return m.Unmarshal(b) },
		"window":          func(b []byte) error { var m Window; return m.Unmarshal(b) },
		"state":           func(b []byte) error { var m State; return m.Unmarshal(b) },
		"onionreceipt":    func(b []byte) error { var m OnionReceipt; return m.Unmarshal(b) },
		"dryset":          func(b []byte) error { var m DrySet; return m.Unmarshal(b, wideLimits) },
		"account":         func(b []byte) error { var m Account; return m.Unmarshal(b, wideLimits) },
		"forwardroot":     func(b []byte) error { var m ForwardRoot; return m.Unmarshal(b, wideLimits) },
	}
}

// TestDecodeAllocationBounded: no decoder allocates more than a small
// multiple of the body it is given (plus, for a Batch, the Frame its zero
// runs may rebuild), whatever its counts and lengths say. Every u32 of
// every vector body is set in turn to counts that the body, padded with
// zeros, could or could not hold; the bytes allocated are measured.
func TestDecodeAllocationBounded(t *testing.T) {
	const pad = 16 << 10
	// The worst case: a [][]byte of 24-byte headers whose elements are
	// 4-byte length prefixes (Rows, addresses).
	const factor = 8
	decs := wideDecoders()
	bodies := map[string][][]byte{}
	for _, v := range vectors() {
		name := v.name
		switch v.t {
		case TypeSignReq, TypeSigned:
			name = "signed"
			bodies["descriptor"] = append(bodies["descriptor"], v.msg.(*Signed).Desc.Marshal())
		case TypeHandover:
			name = "submit"
		case TypeBadForward:
			name = "forward"
		case TypeCertPush:
			name = "timeoutvote"
		case TypeWouldServe:
			name = "prepare"
		case TypeAbort:
			name = "abort"
		case TypeCharge:
			name = "charge"
		case TypeAttestReq:
			name = "attestreq"
		case TypeShowReceipt:
			name = "onionreceipt"
		case TypeAccount:
			name = "account"
		case TypeCloseReq, TypeWaitOpen, TypeWaitList, TypeListReq, TypeDupQuery, TypeDryReq, TypeAccountReq:
			name = "epochref"
		case TypeBatch, TypeBadBatch:
			name = "batch"
		case TypeProposal, TypeRoundList:
			name = "roundlist"
		case TypePadAnswers, TypeQuery, TypeAnswer:
			name = "rows"
		case TypeGetChunk, TypeChunk:
			name = "chunk"
		case TypeAck, TypeError:
			continue
		}
		bodies[name] = append(bodies[name], v.msg.Marshal())
	}
	for name := range decs {
		if len(bodies[name]) == 0 {
			t.Fatalf("%s: no vector body", name)
		}
	}
	var worst float64
	var worstName string
	for name, bs := range bodies {
		dec := decs[name]
		for _, body := range bs {
			b := make([]byte, len(body)+pad)
			for off := 0; off+4 <= len(body); off++ {
				for _, v := range []uint32{pad / 4, pad / 12, pad / 32, pad / 64, pad, 1 << 20, 1<<32 - 1} {
					copy(b, body)
					clear(b[len(body):])
					binary.BigEndian.PutUint32(b[off:], v)
					var a, c runtime.MemStats
					runtime.ReadMemStats(&a)
					_ = dec(b)
					runtime.ReadMemStats(&c)
					got := c.TotalAlloc - a.TotalAlloc
					limit := uint64(factor*len(b)) + 4096
					if name == "batch" {
						limit += uint64(wideLimits.Frame)
					}
					if got > limit {
						t.Errorf("%s: u32 at %d set to %d: %d bytes allocated for a %d-byte body (> %d)", name, off, v, got, len(b), limit)
					}
					if r := float64(got) / float64(len(b)); r > worst {
						worst, worstName = r, name
					}
				}
			}
		}
	}
	t.Logf("most allocated: %.2f bytes per body byte (%s)", worst, worstName)
}

// TestOversized: one element or byte more than each cap is refused with
// ErrTooLarge, for every count and length field of every decoder.
func TestOversized(t *testing.T) {
	l := testLimits
	n := func(k int) [][]byte { return make([][]byte, k) }
	big := func(k int) []byte { return make([]byte, k) }
	desc := vectorDesc(true)
	manyGroup := desc
	manyGroup.Group = make([]GroupEntry, MaxServers+1)
	manyClients := desc
	manyClients.Clients = make([]ClientEntry, l.Clients+1)
	entry := vectorEntry(1)
	manyY := entry
	manyY.Y = make([][32]byte, l.Rounds+1)
	manyYp := entry
	manyYp.Yp = make([][32]byte, l.Rounds+1)
	bigPoK := entry
	bigPoK.PoK = big(MaxPoK + 1)
	sub := vectorSubmit(1)
	bigOnion := sub
	bigOnion.Onion = big(l.Onion + 1)
	batch := func(f func(*Batch)) []byte {
		b := Batch{Entries: [][]byte{{1}}, ClientSigs: make([][64]byte, 1), ClientHashes: make([][32]byte, 1)}
		f(&b)
		return b.Marshal()
	}
	list := func(f func(*RoundList)) []byte {
		r := RoundList{Entries: []ListEntry{{}}, Published: make([][32]byte, 1)}
		f(&r)
		return r.Marshal()
	}
	cases := []struct {
		name string
		body []byte
		dec  func([]byte) error
	}{
		{"hello nick", (&Hello{Nick: big(MaxNick + 1)}).Marshal(), func(b []byte) error { var m Hello; return m.Unmarshal(b) }},
		{"hello addresses", (&Hello{Addrs: n(MaxAddrs + 1)}).Marshal(), func(b []byte) error { var m Hello; return m.Unmarshal(b) }},
		{"hello address", (&Hello{Addrs: [][]byte{big(MaxAddr + 1)}}).Marshal(), func(b []byte) error { var m Hello; return m.Unmarshal(b) }},
		{"hello gossip", (&Hello{Peers: n(MaxGossip + 1)}).Marshal(), func(b []byte) error { var m Hello; return m.Unmarshal(b) }},
		{"prepare chain", (&Prepare{Chain: n(MaxServers + 1)}).Marshal(), func(b []byte) error { var m Prepare; return m.Unmarshal(b) }},
		{"prepare peer id", (&Prepare{Chain: [][]byte{big(MaxPeerID + 1)}}).Marshal(), func(b []byte) error { var m Prepare; return m.Unmarshal(b) }},
		{"prepare window", (&Prepare{Window: make([]WindowRef, MaxWindowRefs+1)}).Marshal(), func(b []byte) error { var m Prepare; return m.Unmarshal(b) }},
		{"prepare gap", (&Prepare{Gap: make([]Cert, MaxGapCerts+1)}).Marshal(), func(b []byte) error { var m Prepare; return m.Unmarshal(b) }},
		{"entry round keys", manyY.Marshal(), func(b []byte) error { var m GroupEntry; return m.Unmarshal(b, l) }},
		{"entry mac keys", manyYp.Marshal(), func(b []byte) error { var m GroupEntry; return m.Unmarshal(b, l) }},
		{"entry key proof", bigPoK.Marshal(), func(b []byte) error { var m GroupEntry; return m.Unmarshal(b, l) }},
		{"descriptor group", manyGroup.Marshal(), func(b []byte) error { var m Descriptor; return m.Unmarshal(b, l) }},
		{"descriptor clients", manyClients.Marshal(), func(b []byte) error { var m Descriptor; return m.Unmarshal(b, l) }},
		{"signed signatures", (&Signed{Desc: desc, Sigs: make([][64]byte, MaxServers+1)}).Marshal(), func(b []byte) error { var m Signed; return m.Unmarshal(b, l) }},
		{"register", (&Register{Reg: big(l.Reg + 1)}).Marshal(), func(b []byte) error { var m Register; return m.Unmarshal(b, l) }},
		{"clientreg", (&ClientRegister{Reg: Register{Reg: big(l.Reg + 1)}}).Marshal(), func(b []byte) error { var m ClientRegister; return m.Unmarshal(b, l) }},
		{"reglist", (&RegList{Regs: make([]Forwarded, l.Clients+1)}).Marshal(), func(b []byte) error { var m RegList; return m.Unmarshal(b, l) }},
		{"epochref reason", (&EpochRef{Reason: big(MaxReason + 1)}).Marshal(), func(b []byte) error { var m EpochRef; return m.Unmarshal(b) }},
		{"route proof", (&Route{Proof: big(MaxRouteProof + 1)}).Marshal(), func(b []byte) error { var m Route; return m.Unmarshal(b) }},
		{"step result", (&Step{Result: big(l.Step + 1)}).Marshal(), func(b []byte) error { var m Step; return m.Unmarshal(b, l) }},
		{"submit onion", bigOnion.Marshal(), func(b []byte) error { var m Submit; return m.Unmarshal(b, l) }},
		{"submit batch", (&SubmitBatch{Subs: make([]Submit, l.Clients+1)}).Marshal(), func(b []byte) error { var m SubmitBatch; return m.Unmarshal(b, l) }},
		{"batch entries", batch(func(b *Batch) { b.Entries = n(l.Clients + 1) }), func(b []byte) error { var m Batch; return m.Unmarshal(b, l) }},
		{"batch entry", batch(func(b *Batch) { b.Entries = [][]byte{big(l.Onion + 1)} }), func(b []byte) error { var m Batch; return m.Unmarshal(b, l) }},
		{"batch signatures", batch(func(b *Batch) { b.ClientSigs = make([][64]byte, l.Clients+1) }), func(b []byte) error { var m Batch; return m.Unmarshal(b, l) }},
		{"batch hashes", batch(func(b *Batch) { b.ClientHashes = make([][32]byte, l.Clients+1) }), func(b []byte) error { var m Batch; return m.Unmarshal(b, l) }},
		{"batch rebuilt", batch(func(b *Batch) { b.Entries = [][]byte{big(100), big(100)}; b.Zeros = []ZeroRun{{N: 100}, {N: 100}} }),
			func(b []byte) error { var m Batch; c := l; c.Frame = 199; return m.Unmarshal(b, c) }},
		{"list entries", list(func(r *RoundList) { r.Entries = make([]ListEntry, l.Rows+1) }), func(b []byte) error { var m RoundList; return m.Unmarshal(b, l) }},
		{"list published", list(func(r *RoundList) { r.Published = make([][32]byte, l.Clients+1) }), func(b []byte) error { var m RoundList; return m.Unmarshal(b, l) }},
		{"list manifests", list(func(r *RoundList) { r.Manifests = make([][32]byte, l.Clients+1) }), func(b []byte) error { var m RoundList; return m.Unmarshal(b, l) }},
		{"list signatures", list(func(r *RoundList) { r.Sigs = make([][64]byte, MaxServers+1) }), func(b []byte) error { var m RoundList; return m.Unmarshal(b, l) }},
		{"rows slots", (&Rows{Slots: make([]uint32, 3), Rows: n(6)}).Marshal(), func(b []byte) error { var m Rows; return m.Unmarshal(b, 2, 2, 8) }},
		{"rows rows", (&Rows{Slots: make([]uint32, 1), Rows: n(3)}).Marshal(), func(b []byte) error { var m Rows; return m.Unmarshal(b, 2, 2, 8) }},
		{"rows row", (&Rows{Slots: make([]uint32, 1), Rows: [][]byte{big(9), {}}}).Marshal(), func(b []byte) error { var m Rows; return m.Unmarshal(b, 2, 2, 8) }},
		{"chunk data", (&Chunk{Data: big(65)}).Marshal(), func(b []byte) error { var m Chunk; return m.Unmarshal(b, 64) }},
		{"index entries", (&Index{Entries: make([]IndexEntry, 3)}).Marshal(), func(b []byte) error { var m Index; return m.Unmarshal(b, 2) }},
		{"index manifests", (&Index{Manifests: [][]byte{big(MinManifest), big(MinManifest), big(MinManifest)}}).Marshal(), func(b []byte) error { var m Index; return m.Unmarshal(b, 2) }},
		{"index manifest", (&Index{Manifests: [][]byte{big(MaxManifest + 1)}}).Marshal(), func(b []byte) error { var m Index; return m.Unmarshal(b, 2) }},
		{"index removed", (&Index{Removed: make([][32]byte, 3)}).Marshal(), func(b []byte) error { var m Index; return m.Unmarshal(b, 2) }},
		{"index name", (&Index{Entries: []IndexEntry{{Name: big(MaxName + 1)}}}).Marshal(), func(b []byte) error { var m Index; return m.Unmarshal(b, 2) }},
	}
	for _, c := range cases {
		if err := c.dec(c.body); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", c.name, err)
		}
	}
}

// TestCountBeyondBody: a count within its cap that claims more elements
// than the bytes left can hold is refused as truncated, before the
// decoder allocates for it (one case per counted field).
func TestCountBeyondBody(t *testing.T) {
	// Each body is a valid vector with one count raised to what fits the
	// cap but not the body.
	for _, c := range []struct {
		name string
		body []byte
		dec  func([]byte) error
	}{
		{"batch entries", func() []byte {
			var e Enc
			e.Fixed(make([]byte, 38))
			e.U32(1000)
			return e.B
		}(), func(b []byte) error { var m Batch; return m.Unmarshal(b, wideLimits) }},
		{"index entries", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, func(b []byte) error { var m Index; return m.Unmarshal(b, 1<<20) }},
		{"list entries", append(make([]byte, 36), 0, 0, 1, 0), func(b []byte) error { var m RoundList; return m.Unmarshal(b, wideLimits) }},
		{"reglist", append(make([]byte, 32), 0, 0, 1, 0), func(b []byte) error { var m RegList; return m.Unmarshal(b, wideLimits) }},
		{"rows slots", append(make([]byte, 36), 0, 0, 1, 0), func(b []byte) error { var m Rows; return m.Unmarshal(b, 1<<20, 2, 8) }},
	} {
		if err := c.dec(c.body); !errors.Is(err, ErrShort) {
			t.Errorf("%s: %v, want ErrShort", c.name, err)
		}
	}
}

// TestMinimalGroupEntry: a descriptor whose group entry has every list and
// byte string empty (88 bytes, the smallest entry) decodes; the count
// check must not ask for more bytes per entry than an entry can take.
func TestMinimalGroupEntry(t *testing.T) {
	d := Descriptor{Group: []GroupEntry{{PeerID: []byte{}, Nick: []byte{}, Addrs: [][]byte{}, PoK: []byte{}, Y: [][32]byte{}, Yp: [][32]byte{}}}, Clients: []ClientEntry{}}
	if n := len(d.Group[0].Marshal()); n != groupEntryMin {
		t.Fatalf("minimal group entry is %d bytes, groupEntryMin %d", n, groupEntryMin)
	}
	var got Descriptor
	if err := got.Unmarshal(d.Marshal(), testLimits); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Marshal(), d.Marshal()) {
		t.Fatal("minimal descriptor re-encodes differently")
	}
}

// TestLongTermSizes: the fixed sizes of the long-term key messages are
// what their constants say (a Forwarded with an empty registration is the
// smallest, which the list's count check relies on).
func TestLongTermSizes(t *testing.T) {
	f := Forwarded{Reg: Register{Reg: []byte{}}}
	if n := len(f.Marshal()); n != forwardedMin {
		t.Fatalf("minimal forwarded registration is %d bytes, forwardedMin %d", n, forwardedMin)
	}
	if n := len((&BatchRef{}).Marshal()); n != BatchRefSize {
		t.Fatalf("batch reference is %d bytes, want %d", n, BatchRefSize)
	}
	if n := len((&DropReq{}).Marshal()); n != DropReqSize {
		t.Fatalf("drop request is %d bytes, want %d", n, DropReqSize)
	}
	if n := len((&DropStep{}).Marshal()); n != DropStepSize {
		t.Fatalf("drop step is %d bytes, want %d", n, DropStepSize)
	}
	var ds DropStep
	if err := ds.Unmarshal(make([]byte, DropStepSize+1)); err == nil {
		t.Fatal("drop step: trailing byte accepted")
	}
	if n := len((&KeyEvidence{}).Marshal()); n != keyEvidenceSize {
		t.Fatalf("key evidence is %d bytes, want %d", n, keyEvidenceSize)
	}
	r := Register{Reg: []byte("x")}
	c := ClientRegister{Reg: r}
	if len(c.Marshal()) != len(r.Marshal())+LongTermSize {
		t.Fatal("the long-term trailer is not LongTermSize bytes")
	}
	var k KeyEvidence
	if err := k.Unmarshal(make([]byte, keyEvidenceSize+1)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// TestIndexPageRefuses: an index page whose more flag is neither 0 nor 1,
// or an index request that is not exactly IndexReqSize bytes, is refused
// (each decodes to one encoding only).
func TestIndexPageRefuses(t *testing.T) {
	var p Index
	if err := p.Unmarshal(append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 2}, make([]byte, 16)...), 2); err == nil {
		t.Error("more flag 2 accepted")
	}
	if err := p.Unmarshal(append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 16)...), 2); err != nil || !p.More {
		t.Errorf("more flag 1: %v", err)
	}
	var r IndexReq
	for _, n := range []int{0, IndexReqSize - 1, IndexReqSize + 1} {
		if err := r.Unmarshal(make([]byte, n)); err == nil {
			t.Errorf("index request of %d bytes accepted", n)
		}
	}
	if err := r.Unmarshal(make([]byte, IndexReqSize)); err != nil {
		t.Error(err)
	}
}
