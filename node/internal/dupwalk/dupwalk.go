// Package dupwalk is the walk of a duplicate share's two positions back
// to their input slots (docs/protocol.md §4.1 v3, with the route proofs
// of §8 step 1): each server's route from an output to its input, proven
// by that server and checked against its published setup step,
// established from the walk's start down, strictly in order (§8 v2), and
// each proven once. Walk has its own leaf lock; what it proves, asks and
// checks is its server's (Prover). Abort (abort.go, its own lock) is the
// epoch's duplicate at one server: the abort and the chain's signatures,
// early ones kept until this server's own abort, what a waiting client
// gets, the two clients' answers and the verdict (the rules are package
// blame's). Service (service.go) is the duplicate's handlers: the fault
// walked, signed and broadcast, the verdict, the routes served, the
// chain's signatures, a client's wait and the two clients' proofs, over
// what they ask of their server (Host: node's dupwalk.go names the
// culprits and ends the epoch). A share fault's walk (§4.2 step 3, one
// position) is the same walk with one start.
package dupwalk

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Step is one server's route from an output: its input position and the
// proof.
type Step struct {
	In    int
	Proof []byte
}

// Prover is what a walk asks of its server.
type Prover interface {
	// Own proves this server's route from its output out.
	Own(out int) (Step, error)
	// Ask gets server t's route from its output out.
	Ask(ctx context.Context, t, out int) (Step, error)
	// Verify checks server t's route from out against its published
	// setup step.
	Verify(t, out int, st Step) error
}

// Walk is the routes of one epoch's duplicate walked at one server: at
// most the two walks' steps, one a server each.
type Walk struct {
	Pos int // this server's chain position
	P   Prover

	mu    sync.Mutex
	steps map[[2]int]Step // (server t, output position) → step
}

// RouteAt returns the input position at server t on the walk that
// starts from output out0 of server t0 (t ≤ t0), establishing and
// checking every step from t0 down first.
func (w *Walk) RouteAt(ctx context.Context, t, t0, out0 int) (int, error) {
	out := out0
	if t < t0 {
		var err error
		if out, err = w.RouteAt(ctx, t+1, t0, out0); err != nil {
			return 0, err
		}
	}
	st, err := w.StepAt(ctx, t, out)
	return st.In, err
}

// StepAt is server t's route from its output out, proven by t (this
// server's own from its step secret) and checked against the published
// setup step; remembered, so that each route is proven once.
func (w *Walk) StepAt(ctx context.Context, t, out int) (Step, error) {
	key := [2]int{t, out}
	w.mu.Lock()
	st, ok := w.steps[key]
	w.mu.Unlock()
	if ok {
		return st, nil
	}
	var err error
	if t == w.Pos {
		st, err = w.P.Own(out)
	} else {
		st, err = w.P.Ask(ctx, t, out)
	}
	if err != nil {
		return st, err
	}
	if err := w.P.Verify(t, out, st); err != nil {
		return st, fmt.Errorf("node: route of server %d from output %d does not verify (server %d is the culprit): %w", t, out, t, err)
	}
	w.mu.Lock()
	if w.steps == nil {
		w.steps = map[[2]int]Step{}
	}
	w.steps[key] = st
	w.mu.Unlock()
	return st, nil
}

// Serve is this server's step for another's walk: only from an output
// that one of the walks from starts (outputs of server t0) reaches here.
func (w *Walk) Serve(ctx context.Context, t0 int, starts [2]int, out int) (Step, error) {
	if w.Pos > t0 {
		return Step{}, errors.New("node: this server is not on the walk")
	}
	for _, start := range starts {
		at := start
		if w.Pos < t0 {
			var err error
			if at, err = w.RouteAt(ctx, w.Pos+1, t0, start); err != nil {
				return Step{}, err
			}
		}
		if at == out {
			return w.StepAt(ctx, w.Pos, out)
		}
	}
	return Step{}, fmt.Errorf("node: route asked for output %d, which neither walk reaches here", out)
}
