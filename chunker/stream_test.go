package chunker

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// genReader produces n deterministic pseudo-random bytes without holding
// them, standing in for a file of many GiB.
type genReader struct {
	left  int64
	state uint64
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n := len(p) &^ 7
	for i := 0; i < n; i += 8 {
		g.state = g.state*6364136223846793005 + 1442695040888963407
		binary.LittleEndian.PutUint64(p[i:], g.state)
	}
	for i := n; i < len(p); i++ {
		p[i] = byte(i)
	}
	g.left -= int64(len(p))
	return len(p), nil
}

// streamSum hashes what a genReader of n bytes produces.
func streamSum(n int64) []byte {
	h := sha256.New()
	io.CopyBuffer(h, &genReader{left: n}, make([]byte, 1<<20))
	return h.Sum(nil)
}

// TestShareStreams shares a generated stream (64 MiB; 8 GiB with
// RIFFLE_LONG=1) and checks that the emitted data chunks, decrypted where
// encrypted, are the stream, and that Share's allocations stay far below
// the stream's size.
func TestShareStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB stream; skipped with -short")
	}
	size := int64(64 << 20)
	if os.Getenv("RIFFLE_LONG") == "1" {
		size = 8 << 30
	}
	want := streamSum(size)
	for _, enc := range []bool{false, true} {
		b := DefaultChunkSize
		var key FileKey
		io.ReadFull(detRand(99), key[:])
		fc, err := newFileCipher(&key)
		if err != nil {
			t.Fatal(err)
		}
		var (
			h       hash.Hash = sha256.New()
			nData   int
			pt      []byte
			inData  = true
			lastSeg bool
		)
		emit := func(id ID, c []byte) error {
			if IsManifest(c) {
				inData = false
				return nil
			}
			if !inData || lastSeg {
				t.Fatalf("data chunk %d after the end of data", nData)
			}
			if enc {
				var err error
				if pt, err = fc.openSegment(pt[:0], c, uint64(nData), false); err != nil {
					if pt, err = fc.openSegment(pt[:0], c, uint64(nData), true); err != nil {
						t.Fatalf("segment %d does not open", nData)
					}
					lastSeg = true
				}
				h.Write(pt)
			} else {
				h.Write(c)
			}
			nData++
			return nil
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		l, err := Share(&genReader{left: size}, "big", "", b, ShareOptions{Encrypt: enc, Rand: detRand(99)}, emit)
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if !bytes.Equal(h.Sum(nil), want) {
			t.Fatalf("encrypt=%v: the data chunks are not the stream", enc)
		}
		if enc != (l.Key != nil) || (enc && !lastSeg) {
			t.Fatalf("encrypt=%v: key %v, last segment seen %v", enc, l.Key != nil, lastSeg)
		}
		allocated := after.TotalAlloc - before.TotalAlloc
		// A few chunk buffers plus the id list (which grows with the
		// chunk count: 32 bytes an id, doubled by append, and the
		// manifest nodes that copy it).
		if limit := uint64(4<<20) + 256*uint64(nData); allocated > limit || allocated > uint64(size/8) {
			t.Fatalf("encrypt=%v: Share allocated %d bytes for a %d-byte stream", enc, allocated, size)
		}
		t.Logf("encrypt=%v: %d bytes in %d chunks, %v, %d bytes allocated", enc, size, nData, elapsed, allocated)
	}
}

// BenchmarkChunking compares Share with plain SHA-256 over the same bytes,
// in the same run; the share/sha256 metric is the ratio of their times.
func BenchmarkChunking(b *testing.B) {
	const total = 32 << 20
	data := randBytes(11, total)
	for _, cs := range []int{MinChunkSize, DefaultChunkSize, MaxChunkSize} {
		b.Run(byteSize(cs), func(b *testing.B) {
			b.SetBytes(total)
			var shaTime, shareTime time.Duration
			for b.Loop() {
				t0 := time.Now()
				for off := 0; off < total; off += cs {
					_ = sha256.Sum256(data[off:min(off+cs, total)])
				}
				t1 := time.Now()
				if _, err := Share(bytes.NewReader(data), "x", "", cs, ShareOptions{}, func(ID, []byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
				shareTime += time.Since(t1)
				shaTime += t1.Sub(t0)
			}
			b.ReportMetric(float64(shareTime)/float64(shaTime), "share/sha256")
			b.ReportMetric(float64(total)*float64(b.N)/shaTime.Seconds()/1e6, "sha256-MB/s")
			b.ReportMetric(float64(total)*float64(b.N)/shareTime.Seconds()/1e6, "share-MB/s")
		})
	}
}

// BenchmarkShareEncrypted measures private sharing (AES-256-GCM then
// SHA-256) against plain sharing of the same bytes.
func BenchmarkShareEncrypted(b *testing.B) {
	const total = 32 << 20
	data := randBytes(12, total)
	b.SetBytes(total)
	var plain, enc time.Duration
	for b.Loop() {
		t0 := time.Now()
		Share(bytes.NewReader(data), "x", "", DefaultChunkSize, ShareOptions{}, func(ID, []byte) error { return nil })
		t1 := time.Now()
		if _, err := Share(bytes.NewReader(data), "x", "", DefaultChunkSize, ShareOptions{Encrypt: true}, func(ID, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
		enc += time.Since(t1)
		plain += t1.Sub(t0)
	}
	b.ReportMetric(float64(enc)/float64(plain), "encrypted/plain")
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + "MiB"
	}
	return strconv.Itoa(n>>10) + "KiB"
}
