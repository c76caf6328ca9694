package chunker

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRoundTripEdgeSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, b := range []int{MinChunkSize, DefaultChunkSize, MaxChunkSize} {
		sizes := []int{0, 1, b - tagSize - 1, b - tagSize, b - tagSize + 1, b - 1, b, b + 1, 2*b - 2*tagSize, 2 * b, 3*b + 5}
		if b == MaxChunkSize && testing.Short() {
			sizes = []int{0, 1, b, b + 1}
		}
		for _, n := range sizes {
			data := randBytes(uint64(n), n)
			for _, enc := range []bool{false, true} {
				roundTrip(t, data, b, enc, rng)
			}
		}
	}
}

func TestRoundTripRandomSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		b := MinChunkSize + rng.IntN(8*MinChunkSize)
		n := rng.IntN(40 * b)
		data := randBytes(uint64(i), n)
		roundTrip(t, data, b, rng.IntN(2) == 1, rng)
	}
}

// A file of 1 KiB chunks large enough for a manifest tree of depth 2 (more
// than rootCap·31 chunks) and one repeated chunk throughout.
func TestRoundTripDeepTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := MinChunkSize
	n := 40 * 31 * b // 1240 chunks: depth 2
	data := make([]byte, n+333)
	copy(data[7*b:], randBytes(1, 900*b)) // zero chunks repeat, the middle does not
	for _, enc := range []bool{false, true} {
		l, s := share(t, data, "deep", "", b, enc)
		m, err := openRoot(s, l)
		if err != nil {
			t.Fatal(err)
		}
		if m.Depth != 2 {
			t.Fatalf("depth %d, want 2", m.Depth)
		}
		roundTrip(t, data, b, enc, rng)
	}
	// All zeros: one data id throughout, identical level-1 nodes.
	roundTrip(t, make([]byte, n), b, false, rng)
}

type failReader struct{ left int }

func (f *failReader) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, errors.New("disk on fire")
	}
	n := min(len(p), f.left)
	f.left -= n
	return n, nil
}

func TestShareErrors(t *testing.T) {
	nop := func(ID, []byte) error { return nil }
	for _, enc := range []bool{false, true} {
		_, err := Share(&failReader{left: 3000}, "x", "", MinChunkSize, ShareOptions{Encrypt: enc}, nop)
		if err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("encrypt=%v: read error: %v", enc, err)
		}
		boom := errors.New("network down")
		calls := 0
		_, err = Share(bytes.NewReader(make([]byte, 3000)), "x", "", MinChunkSize, ShareOptions{Encrypt: enc},
			func(ID, []byte) error {
				if calls++; calls == 2 {
					return boom
				}
				return nil
			})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "data chunk 1") {
			t.Fatalf("encrypt=%v: emit error: %v", enc, err)
		}
	}
	for _, b := range []int{0, MinChunkSize - 1, MaxChunkSize + 1} {
		if _, err := Share(bytes.NewReader(nil), "x", "", b, ShareOptions{}, nop); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Fatalf("chunk size %d: %v", b, err)
		}
	}
}
