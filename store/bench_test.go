package store

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Benchmarks for 256 KiB chunks, each beside the baseline it should be
// read against (run them in one invocation, the machine is shared):
//
//	PutChunk     vs BaselineWriteFileFsync (a file per chunk, fsynced)
//	PutRound     (8 chunks, one commit)
//	GetChunk     vs BaselineMemcpy (the copy GetChunk must make)
//	ViewChunks   vs BaselineXORMemory (PIR's XOR over rows already in RAM)
//	BaselineSHA256 (the id check every put makes)

const benchChunk = 256 << 10

func benchChunks(n int) []Chunk {
	r := testRand(1000)
	cs := make([]Chunk, n)
	for i := range cs {
		cs[i] = mkChunk(r, benchChunk)
	}
	return cs
}

func BenchmarkPutChunk(b *testing.B) {
	s, _ := openBench(b)
	cs := benchChunks(b.N)
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for i := range b.N {
		if err := s.PutChunks(cs[i : i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutRound(b *testing.B) {
	const perRound = 8
	s, _ := openBench(b)
	cs := benchChunks(b.N * perRound)
	b.SetBytes(perRound * benchChunk)
	b.ResetTimer()
	for i := range b.N {
		round := cs[i*perRound : (i+1)*perRound]
		rec := RoundRecord{Round: uint32(i), Time: time.Now(), Published: ids(round)}
		if err := s.PutRound(rec, round, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineWriteFileFsync(b *testing.B) {
	dir := b.TempDir()
	cs := benchChunks(min(b.N, 64))
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for i := range b.N {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(cs[i%len(cs)].Data); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

func BenchmarkBaselineSHA256(b *testing.B) {
	c := benchChunks(1)[0]
	b.SetBytes(benchChunk)
	for range b.N {
		sha256.Sum256(c.Data)
	}
}

// readFixture is 64 stored chunks (16 MiB), read in turn.
func readFixture(b *testing.B) (*Store, []Chunk) {
	s, _ := openBench(b)
	cs := benchChunks(64)
	if err := s.PutChunks(cs); err != nil {
		b.Fatal(err)
	}
	return s, cs
}

func BenchmarkGetChunk(b *testing.B) {
	s, cs := readFixture(b)
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.GetChunk(cs[i%len(cs)].ID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineMemcpy(b *testing.B) {
	cs := benchChunks(64)
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for i := range b.N {
		src := cs[i%len(cs)].Data
		_ = append(make([]byte, 0, len(src)), src...)
	}
}

// BenchmarkViewChunks XORs every row of a 64-row database into an
// accumulator from inside ViewChunks, as PIR does; b.N counts rows.
func BenchmarkViewChunks(b *testing.B) {
	s, cs := readFixture(b)
	acc := make([]byte, benchChunk)
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(len(cs), b.N-done)
		err := s.ViewChunks(ids(cs[:n]), func(rows [][]byte) error {
			for _, row := range rows {
				xorInto(acc, row)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += n
	}
}

func BenchmarkBaselineXORMemory(b *testing.B) {
	cs := benchChunks(64)
	acc := make([]byte, benchChunk)
	b.SetBytes(benchChunk)
	b.ResetTimer()
	for i := range b.N {
		xorInto(acc, cs[i%len(cs)].Data)
	}
}

// xorInto is the PIR inner loop (vectorised by crypto/subtle).
func xorInto(dst, src []byte) { subtle.XORBytes(dst, dst, src) }

func openBench(b *testing.B) (*Store, string) {
	path := filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, path
}

// TestFileOverhead stores 256 KiB chunks in rounds and checks that the
// disk taken (the bbolt pages in use plus the segment files) stays within
// 1 % of the payload: segments hold the bytes end to end, bbolt about 150
// bytes of records per chunk. The bbolt file itself may be up to bbolt's
// growth step larger than its pages in use.
func TestFileOverhead(t *testing.T) {
	n := 160
	if testing.Short() {
		n = 48
	}
	s, path := openTest(t, Options{})
	cs := benchChunks(n)
	for i := 0; i < n; i += 8 {
		round := cs[i : i+8]
		if err := s.PutRound(RoundRecord{Round: uint32(i), Time: time.Now(), Published: ids(round)}, round, nil); err != nil {
			t.Fatal(err)
		}
	}
	var used int64
	s.db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	segs, err := os.ReadDir(path + segDirSuffix)
	if err != nil {
		t.Fatal(err)
	}
	var segBytes int64
	for _, e := range segs {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		segBytes += fi.Size()
	}
	payload := float64(n * benchChunk)
	ratio := float64(used+segBytes) / payload
	t.Logf("%d chunks of 256 KiB: (bbolt pages %d + segments %d) / payload %.4f, bbolt file %d",
		n, used, segBytes, ratio, st.Size())
	if ratio > 1.01 {
		t.Fatalf("disk taken is %.4f × the payload", ratio)
	}
	if st.Size() > used+int64(s.db.AllocSize)+pageSize {
		t.Fatalf("file %d bytes, used %d", st.Size(), used)
	}
}
