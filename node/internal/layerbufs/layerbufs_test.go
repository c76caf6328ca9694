package layerbufs

import "testing"

// TestReuseWhileItFits: a round's buffers come back to the next round of
// the same size (the same slab), a smaller size reuses them cut, a larger
// or another count gets new ones, and none is kept after Drop.
func TestReuseWhileItFits(t *testing.T) {
	var b Bufs
	first := b.Take(3, 10)
	if len(first) != 3 || len(first[0]) != 10 {
		t.Fatalf("took %d of %d", len(first), len(first[0]))
	}
	b.Put(first)
	again := b.Take(3, 10)
	if &again[0][0] != &first[0][0] {
		t.Fatal("a fitting slab was not reused")
	}
	if b.Held() != nil {
		t.Fatal("taken buffers still held")
	}
	b.Put(again)
	if cut := b.Take(3, 8); &cut[1][0] != &first[1][0] || len(cut[1]) != 8 {
		t.Fatal("a smaller size did not reuse the slab")
	}
	b.Put(first)
	if big := b.Take(3, 11); &big[0][0] == &first[0][0] || len(big[2]) != 11 {
		t.Fatal("a larger size reused a slab too small")
	}
	b.Put(first)
	b.Drop()
	if b.Held() != nil {
		t.Fatal("buffers kept after the drop")
	}
	b.Put(first)
	if b.Held() != nil {
		t.Fatal("a put after the drop kept its buffers")
	}
}
