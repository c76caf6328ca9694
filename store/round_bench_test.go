package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"crypto/sha256"
)

// A round as a server stores it at n = 200 clients, b = 256 KiB (issue
// figures: ~52 MB a round): 200 published chunks in one PutRoundHashed.
const (
	roundChunks = 200
	roundChunk  = 256 << 10
)

// roundFixture returns k distinct rounds of chunks, each chunk's id its
// SHA-256 (made outside the timer).
func roundFixture(b *testing.B, k int) [][]Chunk {
	r := testRand(77)
	base := make([][]byte, roundChunks)
	for i := range base {
		base[i] = mkChunk(r, roundChunk).Data
	}
	out := make([][]Chunk, k)
	for j := range out {
		out[j] = make([]Chunk, roundChunks)
		for i := range out[j] {
			d := append([]byte(nil), base[i]...)
			binary.BigEndian.PutUint64(d, uint64(j))
			out[j][i] = Chunk{ID: sha256.Sum256(d), Data: d}
		}
	}
	return out
}

// BenchmarkStoreRound stores one round of 200 × 256 KiB per op, as the
// node does (ids already hashed), beside BaselineRoundFile: the same bytes
// appended to one file and fdatasync'd once, the floor for any layout that
// makes a round durable.
func BenchmarkStoreRound(b *testing.B) {
	const ring = 4
	rounds := roundFixture(b, ring)
	s, _ := openBench(b)
	b.SetBytes(roundChunks * roundChunk)
	b.ResetTimer()
	for i := range b.N {
		if i >= ring && i%ring == 0 {
			b.StopTimer()
			rounds = roundFixture(b, ring)
			b.StartTimer()
		}
		cs := rounds[i%ring]
		rec := RoundRecord{Round: uint32(i), Time: time.Now(), Published: ids(cs)}
		if err := s.PutRoundHashed(rec, cs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineRoundFile(b *testing.B) {
	rounds := roundFixture(b, 1)
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "seg"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(roundChunks * roundChunk)
	b.ResetTimer()
	for range b.N {
		for _, c := range rounds[0] {
			if _, err := f.Write(c.Data); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
