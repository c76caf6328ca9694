package wire

import (
	"bytes"
	"reflect"
	"testing"
)

// fuzzDecoder fuzzes the decoder of the named vectors, seeded with their
// bodies: a body that decodes re-encodes to the same bytes.
func fuzzDecoder(f *testing.F, names ...string) {
	var dec func([]byte) (Body, error)
	for _, v := range vectors() {
		for _, n := range names {
			if v.name == n {
				f.Add(v.msg.Marshal())
				if dec == nil {
					dec = v.dec
				}
			}
		}
	}
	if dec == nil {
		f.Fatalf("no vector named %v", names)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := dec(body)
		if err != nil {
			return
		}
		if out := m.Marshal(); !bytes.Equal(out, body) {
			t.Fatalf("%s: decode→encode changed the bytes:\n%x\n%x", names[0], body, out)
		}
	})
}

func FuzzHello(f *testing.F)       { fuzzDecoder(f, "hello") }
func FuzzPrepare(f *testing.F)     { fuzzDecoder(f, "prepare") }
func FuzzGroupEntry(f *testing.F)  { fuzzDecoder(f, "entry") }
func FuzzSigned(f *testing.F)      { fuzzDecoder(f, "signed", "signreq") }
func FuzzSig(f *testing.F)         { fuzzDecoder(f, "sig") }
func FuzzEpochRef(f *testing.F)    { fuzzDecoder(f, "closereq", "waitopen", "waitlist") }
func FuzzAbort(f *testing.F)       { fuzzDecoder(f, "abort", "abort-noclose") }
func FuzzCert(f *testing.F)        { fuzzDecoder(f, "timeoutvote") }
func FuzzCertReq(f *testing.F)     { fuzzDecoder(f, "certreq") }
func FuzzCerts(f *testing.F)       { fuzzDecoder(f, "certs") }
func FuzzRegister(f *testing.F)    { fuzzDecoder(f, "register") }
func FuzzRegList(f *testing.F)     { fuzzDecoder(f, "reglist") }
func FuzzForwarded(f *testing.F)   { fuzzDecoder(f, "forward", "badforward") }
func FuzzKeyEvidence(f *testing.F) { fuzzDecoder(f, "keyevidence") }
func FuzzRoute(f *testing.F)       { fuzzDecoder(f, "route") }
func FuzzStep(f *testing.F)        { fuzzDecoder(f, "step") }
func FuzzSubmit(f *testing.F)      { fuzzDecoder(f, "submit") }
func FuzzSubmitBatch(f *testing.F) { fuzzDecoder(f, "submitbatch") }
func FuzzRoundList(f *testing.F)   { fuzzDecoder(f, "roundlist", "proposal") }
func FuzzRows(f *testing.F)        { fuzzDecoder(f, "padanswers", "query", "answer") }
func FuzzChunk(f *testing.F)       { fuzzDecoder(f, "chunk", "getchunk") }
func FuzzIndex(f *testing.F)       { fuzzDecoder(f, "index") }
func FuzzIndexReq(f *testing.F)    { fuzzDecoder(f, "indexreq") }
func FuzzRoot(f *testing.F)        { fuzzDecoder(f, "root") }
func FuzzRootRelay(f *testing.F)   { fuzzDecoder(f, "rootrelay") }
func FuzzBatchRef(f *testing.F)    { fuzzDecoder(f, "getbatch", "lack") }
func FuzzDropReq(f *testing.F)     { fuzzDecoder(f, "dropreq") }
func FuzzDropStep(f *testing.F)    { fuzzDecoder(f, "dropstep") }
func FuzzReceipt(f *testing.F)     { fuzzDecoder(f, "receipt") }
func FuzzReceiptSet(f *testing.F)  { fuzzDecoder(f, "receiptset") }

// FuzzOrder fuzzes a primary's signed order on its own (inside a RegList,
// FuzzRegList reaches it too).
func FuzzOrder(f *testing.F) {
	f.Add((&Order{Epoch: k32(1), Primary: 1, Keys: [][32]byte{k32(0xa0), k32(0xa1)}, Sig: k64(0x6a)}).Marshal())
	f.Fuzz(func(t *testing.T, body []byte) {
		var m Order
		if m.Unmarshal(body, testLimits) != nil {
			return
		}
		if !bytes.Equal(m.Marshal(), body) {
			t.Fatal("order: decode→encode changed the bytes")
		}
	})
}
func FuzzClosing(f *testing.F)         { fuzzDecoder(f, "closing") }
func FuzzClosingProposal(f *testing.F) { fuzzDecoder(f, "closingproposal") }
func FuzzClosingSig(f *testing.F)      { fuzzDecoder(f, "closingsig") }
func FuzzListSig(f *testing.F)         { fuzzDecoder(f, "listsig") }
func FuzzWindowReq(f *testing.F)       { fuzzDecoder(f, "windowreq") }
func FuzzWindow(f *testing.F)          { fuzzDecoder(f, "window") }
func FuzzState(f *testing.F)           { fuzzDecoder(f, "state") }
func FuzzOnionReceipt(f *testing.F)    { fuzzDecoder(f, "onionreceipt", "showreceipt") }
func FuzzDrySet(f *testing.F)          { fuzzDecoder(f, "dryset") }
func FuzzChargeHeld(f *testing.F)      { fuzzDecoder(f, "charge-held") }
func FuzzAccount(f *testing.F)         { fuzzDecoder(f, "account", "account-unforwarded") }
func FuzzForwardRoot(f *testing.F)     { fuzzDecoder(f, "forwardroot") }
func FuzzChargeAccount(f *testing.F)   { fuzzDecoder(f, "charge-account") }
func FuzzChargeSilent(f *testing.F)    { fuzzDecoder(f, "charge-silent") }
func FuzzBlameReq(f *testing.F)        { fuzzDecoder(f, "blamereq") }
func FuzzEquivocation(f *testing.F)    { fuzzDecoder(f, "equivocation") }
func FuzzDoubleSubmit(f *testing.F)    { fuzzDecoder(f, "doublesubmit") }
func FuzzAttestReq(f *testing.F)       { fuzzDecoder(f, "attestreq") }
func FuzzAttest(f *testing.F)          { fuzzDecoder(f, "attest") }
func FuzzCharge(f *testing.F)          { fuzzDecoder(f, "charge") }

// FuzzDecoyPool fuzzes the pool encoding a Window carries (not a frame of
// its own, so not in the vector file).
func FuzzDecoyPool(f *testing.F) {
	f.Add(vectorPool().Marshal())
	f.Fuzz(func(t *testing.T, body []byte) {
		var p DecoyPool
		if p.Unmarshal(body) != nil {
			return
		}
		if !bytes.Equal(p.Marshal(), body) {
			t.Fatal("decoy pool: decode→encode changed the bytes")
		}
	})
}

func vectorPool() *DecoyPool {
	return &DecoyPool{Version: PoolV2, Epoch: k32(0xb1), Total: 9, Sample: []PoolPair{{Pos: 3, ID: k32(0xc1)}, {Pos: 0, ID: k32(0xc2)}}, Manifests: [][32]byte{k32(0xd1), k32(0xd2)}}
}

// TestDecoyPoolRoundTrip: decode(encode(x)) == x for the pool encoding.
func TestDecoyPoolRoundTrip(t *testing.T) {
	want := vectorPool()
	var got DecoyPool
	if err := got.Unmarshal(want.Marshal()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	b := want.Marshal()
	if err := got.Unmarshal(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated pool decoded")
	}
}

// TestDecoyPoolV1: a pool in the layout older builds signed and stored
// (no manifest ids after the sample) decodes as PoolV1, names no ids and
// encodes back to the same bytes, so that the digest its record signed
// still checks it; before the layouts were told apart it did not decode.
func TestDecoyPoolV1(t *testing.T) {
	old := vectorPool()
	// The layout before the ids, written out by hand.
	var e Enc
	e.Fixed(old.Epoch[:])
	e.U32(old.Total)
	e.U32(uint32(len(old.Sample)))
	for _, p := range old.Sample {
		e.U32(p.Pos)
		e.Fixed(p.ID[:])
	}
	var got DecoyPool
	if err := got.Unmarshal(e.B); err != nil {
		t.Fatalf("an old-layout pool: %v", err)
	}
	if !got.IDLess() || got.Manifests != nil || got.Total != old.Total || !reflect.DeepEqual(got.Sample, old.Sample) {
		t.Fatalf("decoded %+v", got)
	}
	if !bytes.Equal(got.Marshal(), e.B) {
		t.Fatal("an old-layout pool encodes to other bytes")
	}
	// A current pool with no ids still carries their count.
	cur := DecoyPool{Version: PoolV2, Epoch: old.Epoch, Total: old.Total, Sample: old.Sample}
	if b := cur.Marshal(); len(b) != len(e.B)+4 {
		t.Fatalf("a current pool without ids is %d bytes, want %d", len(b), len(e.B)+4)
	}
	if err := got.Unmarshal(cur.Marshal()); err != nil || got.IDLess() {
		t.Fatalf("a current pool without ids decoded as %+v (%v)", got, err)
	}
}

// FuzzDescriptor fuzzes the descriptor decoder on its own (inside a
// Signed, it is one length-prefixed field).
func FuzzDescriptor(f *testing.F) {
	for _, final := range []bool{false, true} {
		d := vectorDesc(final)
		f.Add(d.Marshal())
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var d Descriptor
		if d.Unmarshal(body, testLimits) != nil {
			return
		}
		if !bytes.Equal(d.Marshal(), body) {
			t.Fatal("descriptor: decode→encode changed the bytes")
		}
	})
}

// FuzzBatch checks, beyond the round trip, what a receiver relies on:
// PeekBatch reads the head a full decode finds; entries rebuilt in dirty
// recycled buffers equal those rebuilt in new ones; nothing rebuilt passes
// the onion cap or, all together, the frame cap.
func FuzzBatch(f *testing.F) {
	for _, v := range vectors() {
		if v.t == TypeBatch {
			f.Add(v.msg.Marshal())
		}
	}
	f.Add(hostileBatch(8, 100, true))
	l := testLimits
	l.Frame = 1 << 10
	f.Fuzz(func(t *testing.T, body []byte) {
		h, perr := PeekBatch(body)
		var m Batch
		if err := m.Unmarshal(body, l); err != nil {
			return
		}
		if perr != nil || h != (BatchHead{Epoch: m.Epoch, Round: m.Round, S: m.S, Root: m.Root, Sig: m.Sig}) {
			t.Fatalf("PeekBatch %+v, %v differs from the decoded batch", h, perr)
		}
		if !bytes.Equal(m.Marshal(), body) {
			t.Fatal("batch: decode→encode changed the bytes")
		}
		total := 0
		for _, x := range m.Entries {
			if len(x) > l.Onion {
				t.Fatalf("entry of %d bytes > onion cap %d", len(x), l.Onion)
			}
			total += len(x)
		}
		if total > l.Frame {
			t.Fatalf("%d bytes rebuilt > frame cap %d", total, l.Frame)
		}
		var d Batch
		if err := d.UnmarshalAlloc(body, l, func(n int) []byte { return bytes.Repeat([]byte{0xee}, n) }); err != nil {
			t.Fatalf("decode into recycled buffers: %v", err)
		}
		for i := range m.Entries {
			if !bytes.Equal(m.Entries[i], d.Entries[i]) {
				t.Fatalf("entry %d rebuilt in a recycled buffer differs", i)
			}
		}
	})
}

// FuzzReadAny reads frames as a request handler does: a frame read within
// its type's cap is written back to the same bytes.
func FuzzReadAny(f *testing.F) {
	caps := func(t Type) int {
		switch t {
		case TypeHello:
			return 64
		case TypeAck:
			return 0
		}
		return 16
	}
	for _, v := range vectors() {
		f.Add(v.frame())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ty, body, err := ReadAny(bytes.NewReader(b), caps)
		if err != nil {
			return
		}
		if len(body) > caps(ty) {
			t.Fatalf("type %d: body of %d bytes read past its cap %d", ty, len(body), caps(ty))
		}
		var out bytes.Buffer
		_ = WriteFrame(&out, ty, body)
		if !bytes.HasPrefix(b, out.Bytes()) {
			t.Fatal("frame round trip differs")
		}
	})
}
