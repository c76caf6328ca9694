// Package roundblame is round blame's walk (docs/protocol.md §8): from
// public evidence back along one position of one round to the party that
// caused the fault, and, when that is a client, the forward reveal of its
// slot's route (§8 "A dead slot").
//
// A MAC failure at S_s's input position p starts with S_s's accusation: its
// MAC share Z' = y'_{s,r}·U_{p,s} with its DLEQ proof and the entry at p as
// S_{s-1} signed it. Every server checks it: if the MAC verifies, the
// accuser is the culprit. A bad payload (its pseudonym signature fails at
// publication) starts at S_{m-1}'s signed output q, which every server
// holds. Then, from the server before the accuser (or from S_{m-1}) towards
// S_0, each server t names the input position p” that became its output
// position, proves it against its setup shuffle (route proof), reveals
// Z = y_{t,r}·U_{p”,t} and Z' with DLEQ proofs, and shows its input entry
// at p” with its sender's signature; everyone checks that the MAC there
// verifies and that removing layer t gives t's output. The first step that
// does not check names its server; if every step checks, the client of the
// slot S_0 reached is the culprit. A server reveals its step only after it
// has itself verified every step between the evidence and itself (§8 v2:
// strictly sequential). Only the disrupting position of the disrupting
// round is walked; nothing of any other position is revealed.
//
// A blame's run at one server (run.go): started (Service.OnAccuse, an
// accusation taken; PayloadBlame; DropDouble, a second onion), walked
// (Service.Walk, StepOf; the chain's asks answered by OnStepReq), the
// culprit named (Conclude), and settled (Settle): a named client's slot
// is revealed forward (DropOf, OnDropReq; drop.go), recorded dead
// (Blames) and its round signed void (void.go); anything else ends the
// epoch. Evidence of a fault that needs no walk (two roots of one batch,
// two onions of one slot, a malformed signed batch) is checked, named
// and sent on (evidence.go). The culprit servers are kept in Excluded
// (its own lock).
//
// Blame is one round blame (its steps under its own lock; what settles
// it under the server's, Host.Locked, as are an epoch's Blames). The
// checks of a step, an accusation, an input entry, a drop step and of
// the evidence sent without a walk are functions of the epoch's public
// values (check.go, evidence.go). Service does the rest over what it
// asks of its server (Host: the epoch's secrets, kept inputs and end,
// the chain's requests, the naming): package node's blameHost.
package roundblame

import (
	"fmt"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
)

// Culprit is the party a walk named.
type Culprit struct {
	Server int    // chain position of a culprit server, or -1
	Slot   int    // input slot of a culprit client, or -1
	Why    string // the evidence, for operators
}

func (c Culprit) String() string {
	if c.Server >= 0 {
		return fmt.Sprintf("server %d", c.Server)
	}
	return fmt.Sprintf("client in slot %d", c.Slot)
}

// ServerCulprit names chain server t, for the reason format says.
func ServerCulprit(t int, format string, a ...any) *Culprit {
	return &Culprit{Server: t, Slot: -1, Why: fmt.Sprintf(format, a...)}
}

// StepResult is one verified walk step, a step that named its server, or
// a step that could not be had (the walk stops without a culprit).
type StepResult struct {
	St    *wire.BlameStep
	Named *Culprit
	Err   error
}

type stepCell struct {
	done chan struct{}
	res  StepResult
}

// DropResult is one verified drop step, one that named its server, or
// one that could not be had.
type DropResult struct {
	St    *wire.DropStep
	Named *Culprit
	Err   error
}

type dropCell struct {
	done chan struct{}
	res  DropResult
}

// Blame is one epoch's round blame (at most one runs: a blame that names a
// client leaves the epoch running with the slot dead; any other outcome,
// or a second blame, ends the epoch). Its steps are guarded by its own
// mutex.
type Blame struct {
	Round    uint32
	Acc      *wire.Accuse // nil for a bad payload
	start    int          // the first server to take a step (-1: none)
	out      int          // its output position
	outEntry []byte       // and the entry there (the evidence)

	mu    sync.Mutex
	cells map[int]*stepCell

	// accOnce checks the accusation once; accNamed is the accuser if it
	// does not hold. No step is revealed before it has held here.
	accOnce  sync.Once
	accNamed *Culprit

	// The dead slot, guarded by the server's lock (Host.Locked): Slot
	// is the client slot the walk named here (once SlotKnown); Settled
	// once the blame's outcome is in (Dropped: the slot is dead and the
	// epoch goes on; else the epoch ended). dcells are the drop steps,
	// guarded by mu.
	// Double: a second onion for one slot named the client, no walk
	// (its round is not void).
	SlotKnown, Settled, Dropped, Double bool
	Slot                                int
	dcells                              map[int]*dropCell
}

// NewAccused sets up the walk of accusation a of round r.
func NewAccused(r uint32, a *wire.Accuse) *Blame {
	bl := &Blame{Round: r, Acc: a, cells: map[int]*stepCell{}}
	bl.start, bl.out, bl.outEntry = int(a.S)-1, int(a.Pos), a.In.Entry
	return bl
}

// NewPayload sets up the walk of a bad payload at output q of round r,
// whose entry is entry, from the last of m servers.
func NewPayload(r uint32, m, q int, entry []byte) *Blame {
	return &Blame{Round: r, cells: map[int]*stepCell{}, start: m - 1, out: q, outEntry: entry}
}

// NewDouble is the blame of a client that signed two onions for one slot
// of round r: no walk, the slot's reveal only.
func NewDouble(r uint32) *Blame {
	return &Blame{Round: r, cells: map[int]*stepCell{}, start: -1, Double: true}
}

// Start is the first server to take a step (-1: none).
func (bl *Blame) Start() int { return bl.start }

// Evidence is the walk's public record: the accusation, if any, and the
// steps established from the start down, in order, until the first not
// (yet) had.
func (bl *Blame) Evidence() [][]byte {
	var evidence [][]byte
	if bl.Acc != nil {
		evidence = append(evidence, bl.Acc.Marshal())
	}
	bl.mu.Lock()
	for t := bl.start; t >= 0; t-- {
		cell := bl.cells[t]
		if cell == nil {
			break
		}
		select {
		case <-cell.done:
			if cell.res.St != nil {
				evidence = append(evidence, cell.res.St.Marshal())
			}
		default:
		}
	}
	bl.mu.Unlock()
	return evidence
}
