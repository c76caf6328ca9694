package dupwalk

import (
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Abort is one epoch's duplicate share at one server (§4.1 v3): the abort
// this server signed, with the chain's signatures as they come (those
// that came before its own walk reached it kept to check then), the two
// clients' answers, the verdict (package blame's rules, blame.Dup), and
// the routes walked. Its own lock; package node walks, signs, asks and
// names.
type Abort struct {
	mu    sync.Mutex
	dup   *blame.Dup
	early map[int][64]byte
	walk  *Walk
}

// Walk is the epoch's walk, made by mk at its first use.
func (a *Abort) Walk(mk func() *Walk) *Walk {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.walk == nil {
		a.walk = mk()
	}
	return a.walk
}

// Started reports whether this server signed its abort.
func (a *Abort) Started() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dup != nil
}

// Start takes this server's abort ab of value, signed at its position
// only; the signatures that came before and verify against it (chain in
// order) join it.
func (a *Abort) Start(ab wire.DupAbort, value *group.Element, chain []peer.ID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dup = blame.NewDup(ab, value)
	d := proto.DupDigest(&ab)
	for j, sg := range a.early {
		if j < len(chain) && proto.VerifyPeerSig(chain[j], d, sg) == nil {
			a.dup.Abort.Sigs[j] = sg
		}
	}
	a.early = nil
}

// Sign takes chain server j's signature sig of the abort, from its peer
// from: kept for later (one a server) while this server's own walk has
// not reached its abort, unless the epoch ended; else checked against
// this server's abort.
func (a *Abort) Sign(j int, from peer.ID, sig [64]byte, ended bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dup == nil {
		if ended {
			return errors.New("node: duplicate abort of an ended epoch")
		}
		if a.early == nil {
			a.early = map[int][64]byte{}
		}
		a.early[j] = sig
		return nil
	}
	st := a.dup.Abort
	st.Sigs = nil
	if err := proto.VerifyPeerSig(from, proto.DupDigest(&st), sig); err != nil {
		return fmt.Errorf("node: duplicate abort of server %d does not match this server's: %w", j, err)
	}
	a.dup.Abort.Sigs[j] = sig
	return nil
}

// Signed reports whether every chain server's signature is in.
func (a *Abort) Signed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dup != nil && a.dup.Signed()
}

// Query is what a client of this epoch waiting for the abort gets: the
// abort once every chain server signed it, and whether its wait is over
// (that, the verdict taken, or, with no abort, the epoch ended or its
// setup done).
func (a *Abort) Query(ended, setupDone bool) (out []byte, over bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dup == nil {
		return nil, ended || setupDone
	}
	if a.dup.Signed() {
		return a.dup.Abort.Marshal(), true
	}
	return nil, a.dup.Done
}

// Open says what a share proof of slot is checked against: the value and
// its component; answered if the slot answered already (one answer a
// slot). An error if no abort is open or it does not name slot.
func (a *Abort) Open(slot uint32) (value *group.Element, comp int, answered bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dup == nil || a.dup.Done {
		return nil, 0, false, errors.New("node: no open duplicate-share abort of this epoch")
	}
	if !a.dup.Names(slot) {
		return nil, 0, false, errors.New("node: share proof for a slot the abort does not name")
	}
	return a.dup.Value, int(a.dup.Abort.Comp), a.dup.Answered(slot), nil
}

// Answer takes slot's first answer before the verdict (blame.Dup.Answer).
func (a *Abort) Answer(slot uint32, verified bool, proof []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dup != nil {
		a.dup.Answer(slot, verified, proof)
	}
}

// Verdict closes the abort to more answers and applies the rules
// (blame.Dup.Verdict).
func (a *Abort) Verdict() (culprits []blame.DupCulprit, silent []uint32, evidence [][]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dup.Verdict()
}

// Dup is the abort's state itself, for tests that set or read it: use it
// only while no handler runs.
func (a *Abort) Dup() **blame.Dup { return &a.dup }
