package wire

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// readBodyGrown is readBody as it was before pieces: one buffer doubled
// as the bytes arrive, what came copied into each larger one. Kept to
// compare against (BenchmarkReadBody, TestReadBodySameBytes).
func readBodyGrown(r io.Reader, n int, bufs *Buffers) ([]byte, error) {
	c := min(n, BodyStart)
	b := bufs.get(c)
	got := 0
	for {
		m, err := io.ReadFull(r, b[got:c])
		got += m
		if err != nil {
			bufs.put(b)
			return nil, bodyErr(err, n)
		}
		if got == n {
			return b[:n], nil
		}
		c = min(2*c, n)
		nb := bufs.get(c)
		copy(nb, b[:got])
		bufs.put(b)
		b = nb
	}
}

// freeList is a Buffers that keeps what comes back by length, as the
// server's pool does by size class: after the first read nothing is new.
func freeList() *Buffers {
	free := map[int][][]byte{}
	return &Buffers{
		Get: func(n int) []byte {
			if l := free[n]; len(l) > 0 {
				free[n] = l[:len(l)-1]
				return l[len(l)-1]
			}
			return make([]byte, n)
		},
		Put: func(b []byte) { free[len(b)] = append(free[len(b)], b) },
	}
}

// bodySizes are a client's submission (b = 256 KiB and its fields) and a
// server's batch at n = 200.
var bodySizes = []int{256<<10 + 300, 200*(256<<10+100) + 300}

// TestReadBodySameBytes: the pieces read the same bytes as the grown
// buffer, from readers that hand them over in any sizes.
func TestReadBodySameBytes(t *testing.T) {
	for _, n := range append([]int{0, 1, BodyStart, 3*BodyStart - 1}, bodySizes...) {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*13 + i>>12)
		}
		for _, piece := range []int{1 << 10, 32<<10 + 7, 1 << 20} {
			a, errA := readBody(&pieceReader{b: body, n: piece}, n, freeList())
			b, errB := readBodyGrown(&pieceReader{b: body, n: piece}, n, freeList())
			if errA != nil || errB != nil || !bytes.Equal(a, body) || !bytes.Equal(b, body) {
				t.Fatalf("body of %d bytes in reads of %d: %v, %v", n, piece, errA, errB)
			}
		}
	}
}

// pieceReader hands over at most n bytes a read.
type pieceReader struct {
	b []byte
	n int
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}

// BenchmarkReadBody: a body read from a stream into recycled buffers,
// grown (old) against pieces (new), alternated within one run.
func BenchmarkReadBody(b *testing.B) {
	for _, n := range bodySizes {
		body := make([]byte, n)
		for _, c := range []struct {
			name string
			read func(io.Reader, int, *Buffers) ([]byte, error)
		}{{"grown", readBodyGrown}, {"pieces", readBody}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				bufs := freeList()
				r := bytes.NewReader(body)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					r.Reset(body)
					got, err := c.read(r, n, bufs)
					if err != nil {
						b.Fatal(err)
					}
					bufs.Put(got)
				}
			})
		}
	}
}
