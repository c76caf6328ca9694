package node

import (
	"crypto/rand"
	"testing"
)

// TestBackgroundRequests: empty request slots carry re-requests at the
// background rate, retry ids (answers corrupted in an earlier epoch) go
// out only through that stream, and a client that holds nothing and has
// nothing to retry sends no decoy.
func TestBackgroundRequests(t *testing.T) {
	c := &Client{rand: rand.Reader, inflight: map[[32]byte]bool{}, failed: map[[32]byte]bool{},
		retry: map[[32]byte]bool{}, held: map[[32]byte]bool{}, wants: map[[32]byte]*getJob{}}
	const rounds = 16000
	if n := len(c.backgroundRequests(nil, 1)); n != 0 {
		t.Fatalf("%d decoys with nothing held", n)
	}
	for i := 0; i < 3; i++ {
		c.noteHeld([32]byte{byte(i + 1)})
	}
	decoys := 0
	for r := 0; r < rounds; r++ {
		for _, id := range c.backgroundRequests(nil, 1) {
			if !c.held[id] {
				t.Fatalf("decoy %x is not held", id[:2])
			}
			decoys++
		}
	}
	// 1000 expected; 5 standard deviations either way.
	if want := rounds / decoyOneIn; decoys < want-160 || decoys > want+160 {
		t.Fatalf("%d decoys in %d rounds, want about %d", decoys, rounds, want)
	}
	// Full slots carry no decoy.
	real := [][32]byte{{9}}
	for r := 0; r < 1000; r++ {
		if got := c.backgroundRequests(real, 1); len(got) != 1 {
			t.Fatalf("a full round got %d requests", len(got))
		}
	}
	// A retry id goes before held ones, once, and is not a need meanwhile.
	retry := [32]byte{0xee}
	c.retry[retry] = true
	if ids := c.neededIDs(4); len(ids) != 0 {
		t.Fatalf("needed %v", ids)
	}
	var first [][32]byte
	for len(first) == 0 {
		first = c.backgroundRequests(nil, 1)
	}
	if first[0] != retry || c.retry[retry] {
		t.Fatalf("first re-request %x, retry still queued %v", first[0][:1], c.retry[retry])
	}
	// Bounded memory.
	for i := 0; i < maxHeld+100; i++ {
		c.noteHeld([32]byte{0, byte(i), byte(i >> 8)})
	}
	if len(c.held) > maxHeld {
		t.Fatalf("%d held ids remembered", len(c.held))
	}
}
