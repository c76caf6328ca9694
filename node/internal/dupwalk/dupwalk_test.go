package dupwalk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// chain is a Prover over routes in memory: server t maps output o to
// input perm[t][o]; liar's answers are off by one.
type chain struct {
	pos   int
	perm  [][]int
	liar  int
	asked []int // servers asked or proven, in order
}

func (c *chain) step(t, out int) Step {
	c.asked = append(c.asked, t)
	in := c.perm[t][out]
	if t == c.liar {
		in = (in + 1) % len(c.perm[t])
	}
	return Step{In: in}
}

func (c *chain) Own(out int) (Step, error) { return c.step(c.pos, out), nil }
func (c *chain) Ask(_ context.Context, t, out int) (Step, error) {
	return c.step(t, out), nil
}
func (c *chain) Verify(t, out int, st Step) error {
	if st.In != c.perm[t][out] {
		return errors.New("not the published step")
	}
	return nil
}

func newChain(pos, liar int) *chain {
	return &chain{pos: pos, liar: liar, perm: [][]int{{1, 2, 3, 0}, {3, 2, 1, 0}, {0, 3, 1, 2}}}
}

// TestRouteAtInOrderOnce: the walk from server 2's output goes down
// 2, 1, 0, each route once even for a second walk through the same
// steps, and lands on the composed input.
func TestRouteAtInOrderOnce(t *testing.T) {
	c := newChain(1, -1)
	w := &Walk{Pos: 1, P: c}
	ctx := context.Background()
	in, err := w.RouteAt(ctx, 0, 2, 1)
	// 1 → perm[2][1] = 3 → perm[1][3] = 0 → perm[0][0] = 1
	if err != nil || in != 1 {
		t.Fatalf("input %d, %v; want 1", in, err)
	}
	if got := c.asked; len(got) != 3 || got[0] != 2 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("asked %v, want 2 1 0", got)
	}
	if _, err := w.RouteAt(ctx, 1, 2, 1); err != nil || len(c.asked) != 3 {
		t.Fatalf("a walked step asked again: %v, %v", c.asked, err)
	}
}

// TestRouteLiarNamed: a route that does not verify names its server and
// stops the walk there.
func TestRouteLiarNamed(t *testing.T) {
	c := newChain(0, 1)
	w := &Walk{Pos: 0, P: c}
	_, err := w.RouteAt(context.Background(), 0, 2, 1)
	if err == nil || !strings.Contains(err.Error(), "server 1 is the culprit") {
		t.Fatalf("err %v, want server 1 named", err)
	}
	if len(c.asked) != 2 {
		t.Fatalf("asked %v: the walk went on past the liar", c.asked)
	}
}

// TestServeOnlyTheWalks: a server gives its step only for an output one
// of the two walks reaches there, and none if it is past the walk's
// start.
func TestServeOnlyTheWalks(t *testing.T) {
	ctx := context.Background()
	w := &Walk{Pos: 1, P: newChain(1, -1)}
	// From server 2's outputs 1 and 2: 3 and 1 at server 1.
	st, err := w.Serve(ctx, 2, [2]int{1, 2}, 1)
	if err != nil || st.In != 2 {
		t.Fatalf("step %v, %v; want input 2", st, err)
	}
	if _, err := w.Serve(ctx, 2, [2]int{1, 2}, 0); err == nil {
		t.Fatal("served an output neither walk reaches")
	}
	w = &Walk{Pos: 2, P: newChain(2, -1)}
	if _, err := w.Serve(ctx, 1, [2]int{0, 1}, 0); err == nil {
		t.Fatal("served past the walk's start")
	}
}
