package chunker

import (
	"math/rand/v2"
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
		m, err := DecodeManifest(s.chunks[l.ID])
		if err != nil {
			t.Fatal(err)
		}
		if m.Depth != 2 {
			t.Fatalf("depth %d, want 2", m.Depth)
		}
		roundTrip(t, data, b, enc, rng)
	}
}
