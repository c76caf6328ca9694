package dupwalk

import (
	"context"
	"testing"
)

// TestServeOneStart: a share fault's walk (one position, package node's
// onRoute) is a walk whose two starts are the same output: a server gives
// its step for the one output that walk reaches there, no other.
func TestServeOneStart(t *testing.T) {
	ctx := context.Background()
	w := &Walk{Pos: 1, P: newChain(1, -1)}
	// From server 2's output 1: perm[2][1] = 3 at server 1.
	st, err := w.Serve(ctx, 2, [2]int{1, 1}, 3)
	if err != nil || st.In != 0 {
		t.Fatalf("step %v, %v; want input 0", st, err)
	}
	for out := range 3 {
		if _, err := w.Serve(ctx, 2, [2]int{1, 1}, out); err == nil {
			t.Fatalf("served output %d, which the walk does not reach", out)
		}
	}
	// At the walk's start, the start itself.
	w = &Walk{Pos: 2, P: newChain(2, -1)}
	if st, err := w.Serve(ctx, 2, [2]int{1, 1}, 1); err != nil || st.In != 3 {
		t.Fatalf("step %v, %v; want input 3", st, err)
	}
}
