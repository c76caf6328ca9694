package wire

import "fmt"

// The group's state as a server sees it (docs/protocol.md §4.1): what a
// client that is in no epoch waits for, so that it can tell its user. Every
// client not in an epoch asks its primary on one fixed period, job or no
// job (node/waitstate.go), so the question says nothing of its user; the
// answer only ever reaches the user, never what the client sends.

const (
	// TypeStateReq: client → its primary, an empty request.
	TypeStateReq Type = 95
	// TypeState: the reply, a State.
	TypeState Type = 96
)

// Phases of State.
const (
	PhaseIdle   uint8 = iota // no epoch runs in this server's chain
	PhaseOpen                // registration is open
	PhaseSetup               // registration closed, the setup runs
	PhaseRounds              // rounds run
	phaseEnd
)

// StateSize is a State's encoding: fixed.
const StateSize = 4*4 + 1 + 8 + 4*5

// State is a server's view of its group (all of it public):
//
//	u32 live servers ‖ u32 min servers ‖ u32 min clients ‖ u32 clients
//	waiting ‖ u8 phase ‖ u64 number ‖ u32 registered ‖ u32 rounds done ‖
//	u32 rounds ‖ u32 round ms ‖ u32 ms since the last epoch ended
//
// Live counts the roster's servers answering, this one included; Waiting
// the clients waiting here for an epoch to open. Number, Registered,
// Done, Rounds and RoundMillis describe the epoch of Phase (zero when
// idle): Registered the registrations taken here so far, RoundMillis the
// mean time of its rounds so far. SinceEnd is 0xffffffff when no epoch
// ended here since the server started.
type State struct {
	Live, MinServers, MinClients, Waiting uint32
	Phase                                 uint8
	Number                                uint64
	Registered, Done, Rounds, RoundMillis uint32
	SinceEnd                              uint32
}

// NoEnd is State.SinceEnd when no epoch ended.
const NoEnd = ^uint32(0)

func (m *State) Marshal() []byte {
	e := Enc{B: make([]byte, 0, StateSize)}
	e.U32(m.Live)
	e.U32(m.MinServers)
	e.U32(m.MinClients)
	e.U32(m.Waiting)
	e.U8(m.Phase)
	e.U64(m.Number)
	e.U32(m.Registered)
	e.U32(m.Done)
	e.U32(m.Rounds)
	e.U32(m.RoundMillis)
	e.U32(m.SinceEnd)
	return e.B
}

func (m *State) Unmarshal(b []byte) error {
	if len(b) != StateSize {
		return fmt.Errorf("wire: state of %d bytes, want %d", len(b), StateSize)
	}
	d := Dec{B: b}
	m.Live = d.U32("live servers")
	m.MinServers = d.U32("min servers")
	m.MinClients = d.U32("min clients")
	m.Waiting = d.U32("waiting clients")
	m.Phase = d.U8("phase")
	m.Number = d.U64("number")
	m.Registered = d.U32("registered")
	m.Done = d.U32("rounds done")
	m.Rounds = d.U32("rounds")
	m.RoundMillis = d.U32("round time")
	m.SinceEnd = d.U32("since end")
	if err := d.Done("state"); err != nil {
		return err
	}
	switch {
	case m.Phase >= phaseEnd:
		return fmt.Errorf("wire: state phase %d", m.Phase)
	case m.Done > m.Rounds:
		return fmt.Errorf("wire: state says %d of %d rounds done", m.Done, m.Rounds)
	case m.Phase == PhaseIdle && (m.Number|uint64(m.Registered|m.Done|m.Rounds|m.RoundMillis)) != 0:
		return fmt.Errorf("wire: idle state describes an epoch")
	}
	return nil
}
