package wire

import (
	"errors"
	"runtime"
	"testing"
)

// hostileBatch is a Batch body of n entries that each announce a zero run
// of run bytes and send nothing: 12 bytes on the wire per entry, run bytes
// each once rebuilt. With tail, it ends in empty signature and hash lists
// and a root and signature, so that it is well formed.
func hostileBatch(n int, run uint32, tail bool) []byte {
	var e Enc
	e.Fixed(make([]byte, 32))
	e.U32(0)
	e.U16(1)
	e.U32(uint32(n))
	for range n {
		e.U32(0)
		e.U32(run)
		e.U32(0)
	}
	if tail {
		e.U32(0)
		e.U32(0)
		e.Fixed(make([]byte, 32+64))
	}
	return e.B
}

// allocBytes is the heap bytes f allocates (the mean of a few runs).
func allocBytes(f func()) uint64 {
	const runs = 3
	f() // warm up
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&b)
	return (b.TotalAlloc - a.TotalAlloc) / runs
}

// TestHostileBatchAllocatesLittle: a small Batch body whose entries are
// all zero runs must be refused before anything is rebuilt when it is
// malformed, and when its rebuilt size exceeds the frame cap; a decode
// never allocates more than a small multiple of the body plus what the
// limits allow to be rebuilt.
func TestHostileBatchAllocatesLittle(t *testing.T) {
	const n, onion = 1024, 64 << 10 // 1024 runs of 64 KiB: 64 MiB rebuilt
	l := Limits{Clients: n, Onion: onion}
	const maxAlloc = 1 << 20

	// Malformed (no signatures, root or signature after the entries):
	// refused with nothing rebuilt.
	cut := hostileBatch(n, onion, false)
	var err error
	got := allocBytes(func() {
		var m Batch
		err = m.Unmarshal(cut, l)
	})
	if err == nil {
		t.Fatal("truncated hostile batch accepted")
	}
	t.Logf("truncated hostile batch of %d bytes: %d bytes allocated", len(cut), got)
	if got > maxAlloc {
		t.Fatalf("truncated hostile batch of %d bytes allocated %d bytes (> %d)", len(cut), got, maxAlloc)
	}

	// Well formed, but its entries rebuilt exceed the frame cap: refused
	// with nothing rebuilt.
	whole := hostileBatch(n, onion, true)
	capped := l
	capped.Frame = 4 << 20
	got = allocBytes(func() {
		var m Batch
		err = m.Unmarshal(whole, capped)
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("hostile batch over the frame cap: %v, want ErrTooLarge", err)
	}
	t.Logf("hostile batch of %d bytes over a %d-byte frame cap: %d bytes allocated", len(whole), capped.Frame, got)
	if got > maxAlloc {
		t.Fatalf("hostile batch over the frame cap allocated %d bytes (> %d)", got, maxAlloc)
	}

	// Within the limits it decodes, and costs what the limits allow:
	// n·onion rebuilt, plus little.
	got = allocBytes(func() {
		var m Batch
		err = m.Unmarshal(whole, l)
	})
	if err != nil {
		t.Fatalf("hostile batch within limits: %v", err)
	}
	if want := uint64(n * onion); got < want || got > want+maxAlloc {
		t.Fatalf("batch within limits allocated %d bytes, want %d + at most %d", got, want, maxAlloc)
	}
}

// TestPeekBatch: the head read without decoding is the head a full decode
// finds, and a body too short to hold one is refused.
func TestPeekBatch(t *testing.T) {
	b := Batch{Epoch: [32]byte{1, 2}, Round: 7, S: 3, Entries: [][]byte{{1, 0, 0, 2}, {3}}, Zeros: []ZeroRun{{At: 1, N: 2}, {}},
		ClientSigs: [][64]byte{{4}, {5}}, ClientHashes: [][32]byte{{6}, {7}}, Root: [32]byte{8, 9}, Sig: [64]byte{10, 11}}
	for _, body := range [][]byte{b.Marshal(), (&Batch{Round: 1, Root: [32]byte{1}, Sig: [64]byte{2}}).Marshal()} {
		h, err := PeekBatch(body)
		if err != nil {
			t.Fatal(err)
		}
		var m Batch
		if err := m.Unmarshal(body, testLimits); err != nil {
			t.Fatal(err)
		}
		if h != (BatchHead{Epoch: m.Epoch, Round: m.Round, S: m.S, Root: m.Root, Sig: m.Sig}) {
			t.Fatalf("peeked head %+v differs from the decoded batch", h)
		}
		if _, err := PeekBatch(body[:batchMin-1]); !errors.Is(err, ErrShort) {
			t.Fatalf("short body: %v, want ErrShort", err)
		}
		if n := testing.AllocsPerRun(10, func() { _, _ = PeekBatch(body) }); n != 0 {
			t.Fatalf("PeekBatch allocates %v times", n)
		}
	}
}
