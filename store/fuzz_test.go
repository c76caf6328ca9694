package store

import (
	"bytes"
	"testing"
	"time"
)

// Every record decoder reads bytes from disk that a crash, a bad disk or
// an edited file may have mangled. Each fuzz target checks that decoding
// never panics and that whatever decodes encodes back to the same bytes
// (so a record has one encoding). Seeds are valid encodings.

var fuzzTime = time.Unix(1_800_000_000, 42)

func roundTrip[T any](t *testing.T, b []byte, decode func([]byte) (T, error), encode func(*T) []byte) {
	v, err := decode(b)
	if err != nil {
		return
	}
	if got := encode(&v); !bytes.Equal(got, b) {
		t.Fatalf("decode→encode changed the bytes:\n in %x\nout %x", b, got)
	}
}

func FuzzIndexEntry(f *testing.F) {
	f.Add((&IndexEntry{FileID: ID{1}, Name: "a.txt", Size: 5, Chunks: 1, Epoch: EpochID{2}, Round: 3, Time: fuzzTime}).encode())
	f.Add((&IndexEntry{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeIndexEntry, (*IndexEntry).encode)
	})
}

func FuzzManifest(f *testing.F) {
	f.Add((&Manifest{Epoch: EpochID{1}, Round: 2, Pos: 3, Data: []byte("manifest")}).encode())
	f.Add((&Manifest{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, func(b []byte) (Manifest, error) { return decodeManifest(ID{}, b) }, (*Manifest).encode)
	})
}

func FuzzRoundRecord(f *testing.F) {
	f.Add((&RoundRecord{Epoch: EpochID{1}, Round: 2, Time: fuzzTime, Published: []ID{{3}, {4}},
		Requests: []Request{{ID{3}, 100}}}).encode())
	f.Add((&RoundRecord{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeRoundRecord, (*RoundRecord).encode)
	})
}

func FuzzEpochRecord(f *testing.F) {
	f.Add((&EpochRecord{ID: EpochID{1}, Number: 7, Started: fuzzTime, Ended: fuzzTime.Add(time.Hour),
		Rounds: 256, EndReason: "R rounds", Descriptor: []byte("signed")}).encode())
	f.Add((&EpochRecord{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeEpochRecord, (*EpochRecord).encode)
	})
}

func FuzzShare(f *testing.F) {
	f.Add((&Share{FileID: ID{1}, Link: "riffle:x#k", Path: "/a", State: SharePublished,
		ChunksTotal: 3, ChunksSent: 3, Created: fuzzTime, Updated: fuzzTime}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeShare, (*Share).encode)
	})
}

func FuzzDownload(f *testing.F) {
	f.Add((&Download{FileID: ID{1}, Link: "riffle:x", Output: "/o", Needed: 4, Held: 2, Bytes: 99,
		Completed: true, Created: fuzzTime, Updated: fuzzTime}).encode())
	f.Add((&Download{}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeDownload, (*Download).encode)
	})
}

func FuzzChunkMeta(f *testing.F) {
	f.Add(chunkMeta{touched: fuzzTime, length: 262144}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, decodeChunkMeta, func(m *chunkMeta) []byte { return m.encode() })
	})
}

// TestDecodeBounds checks the bounds that the fuzz targets cannot reach
// by chance: a huge announced count or length is refused before any
// allocation, and trailing bytes are refused.
func TestDecodeBounds(t *testing.T) {
	rec := (&RoundRecord{Time: fuzzTime, Published: []ID{{1}}}).encode()
	huge := append([]byte{}, rec...)
	// The published count sits after version, epoch id, round and time.
	copy(huge[1+32+4+8:], []byte{0xff, 0xff, 0xff, 0xff})
	if _, err := decodeRoundRecord(huge); err == nil {
		t.Fatal("round record with a 4-billion count decoded")
	}
	if _, err := decodeRoundRecord(append(rec, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	e := (&EpochRecord{Descriptor: []byte("x")}).encode()
	e[len(e)-5] = 0x7f // descriptor length now far above MaxDescriptor
	if _, err := decodeEpochRecord(e); err == nil {
		t.Fatal("oversized descriptor length accepted")
	}
	bad := (&IndexEntry{Name: "ok"}).encode()
	bad[0] = 9
	if _, err := decodeIndexEntry(bad); err == nil {
		t.Fatal("unknown record version accepted")
	}
	r, err := decodeRoundRecord(rec)
	if err != nil || len(r.Published) != 1 || !r.Time.Equal(fuzzTime) {
		t.Fatalf("valid record: %+v %v", r, err)
	}
}
