package proto

import "github.com/riffle-net/riffle/internal/wire"

// The group's constants a leader publishes in its descriptor (§3).

// Params are the epoch parameters a leader publishes in its descriptor
// (docs/protocol.md §3); the descriptor carries them in this order.
type Params struct {
	ChunkSize    uint32 // b, bytes of a chunk
	K            uint16 // request slots per client and round
	W            uint16 // cover window, rounds
	Rounds       uint32 // R, rounds per epoch
	MaxClients   uint32 // cap on n
	MaxRows      uint32 // cap on L, the rows of a round's PIR database
	RegWindowMs  uint32 // registration window after opening
	RoundLimitMs uint32 // a round not filled in this time ends the epoch
	// IndexHours is the index retention in hours (0: for good), a group
	// constant: a manifest leaves every server's index this long after it
	// was indexed, whatever each keeps of chunk bodies (§7 v3).
	IndexHours uint32
	// RoundIntervalMs is the group pace (§5 v3): no server starts its
	// part of a round before it started its part of the previous one plus
	// this interval, within [MinRoundIntervalMs, MaxRoundIntervalMs]. A
	// group constant like b and k, so that what a client sends and
	// receives an hour follows from the constants alone (GroupCost).
	RoundIntervalMs uint32
}

// Wire is p as the descriptor's encoding holds it.
func (p Params) Wire() wire.Params { return wire.Params(p) }

// DefaultParams are the epoch parameters of a new leader: b = 256 KiB and
// k = 1, chosen by the benchmark (docs/proto-node.md: the padded answers,
// (m−1)·n·k·b bytes a round, dominate the round time, and k = 1 gave the
// best per-client upload and download goodput at n = 64 and n = 200, k = 2
// only at n = 16, within the noise), R = 256, W = 2. The
// round limit of 10 s bounds how long a departed client's empty slot holds
// the epoch up (§5.4) once its cover window is spent, while leaving the PIR
// work of the caps (about 1.6 s at 8 GB/s) well inside a round.
func DefaultParams() Params {
	return Params{ChunkSize: 256 << 10, K: 1, W: 2, Rounds: 256, MaxClients: 256, MaxRows: 512, RegWindowMs: 3000, RoundLimitMs: 10000,
		IndexHours: DefaultIndexHours, RoundIntervalMs: DefaultRoundIntervalMs}
}

// DefaultIndexHours is the default index retention: 90 days. The index
// grows by at most IndexCap chunks of b bytes per R rounds, and a
// client syncs only what changed since its last sync.
const DefaultIndexHours = 90 * 24
