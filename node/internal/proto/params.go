package proto

import (
	"bytes"
	"crypto/ecdh"
	"fmt"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// Bounds on parameters a server accepts (§3).
const (
	MaxRounds     = 1024
	MinChunkSize  = 1 << 10
	MaxChunkSize  = 4 << 20
	MaxK          = 16
	MaxClientsCap = 4096
	MaxRowsCap    = 1 << 16
	// DefaultPIRRate is the XOR throughput (bytes/s) a server assumes when
	// checking that a round's PIR work fits the round limit (§9): well
	// under what the four-Russians engine measured on two cores, so that
	// the check refuses only parameters that cannot work.
	DefaultPIRRate = 8e9
)

// The group pace's range and default (docs/operator.md, "What a group
// costs"). The floor keeps every group's figure finite; the ceiling keeps
// an epoch of MaxRounds rounds within a day, and a round's wait far
// inside a client's long poll (transport.PollTimeout).
const (
	MinRoundIntervalMs = 10
	MaxRoundIntervalMs = 60_000
	// DefaultRoundIntervalMs caps a client's goodput at b per interval,
	// 320 KiB/s at the default b, above the 300 KB/s a client is meant
	// to reach, and costs an idle client GroupCost's figure an hour.
	DefaultRoundIntervalMs = 800
)

// The round limit's range. It is the one timing a leader chooses (the
// others are group constants), so it is bounded above too: a corrupt
// leader's hours-long limit would hold every round it stalls, and what
// servers keep for a round's asks, that long.
const (
	MinRoundLimitMs = 100
	MaxRoundLimitMs = 600_000
)

// GenericLimits bound a descriptor before its parameters are known.
func GenericLimits() wire.Limits {
	return wire.Limits{Servers: wire.MaxServers, Clients: MaxClientsCap, Rounds: MaxRounds, Rows: MaxRowsCap, K: MaxK, Chunk: MaxChunkSize,
		Onion: mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers), Reg: mix.RegistrationSize(wire.MaxServers), Index: 1 << 20}
}

// LimitsFor bounds every message of an epoch with m servers.
func LimitsFor(p wire.Params, m int) wire.Limits {
	b, k := int(p.ChunkSize), int(p.K)
	return wire.Limits{Servers: m, Clients: int(p.MaxClients), Rounds: int(p.Rounds), Rows: int(p.MaxRows), K: k, Chunk: b,
		Onion: mix.OnionSize(b, k, m), Reg: mix.RegistrationSize(m), Step: mix.StepResultSize(int(p.MaxClients), m, 0),
		Index: 1 << 20, MaskSize: pir.MaskBytes(int(p.MaxRows))}
}

// CheckParams refuses parameters out of range or whose PIR work cannot fit
// the round limit at rate bytes/s of XOR (§9: about (L/8)·(256 + n·k)·b
// bytes per server and round, counted for the caps n and L).
func CheckParams(p wire.Params, rate float64) error {
	switch {
	case p.ChunkSize < MinChunkSize || p.ChunkSize > MaxChunkSize:
		return fmt.Errorf("node: chunk size %d outside [%d, %d]", p.ChunkSize, MinChunkSize, MaxChunkSize)
	case p.K < 1 || p.K > MaxK:
		return fmt.Errorf("node: %d request slots outside [1, %d]", p.K, MaxK)
	case p.Rounds < 1 || p.Rounds > MaxRounds:
		return fmt.Errorf("node: %d rounds outside [1, %d]", p.Rounds, MaxRounds)
	case p.W < 1 || uint32(p.W) > p.Rounds:
		return fmt.Errorf("node: cover window %d outside [1, %d]", p.W, p.Rounds)
	case p.MaxClients < MinClientCap || p.MaxClients > MaxClientsCap:
		// (v3) a floor, so that no leader can put a client alone (n−1).
		return fmt.Errorf("node: client cap %d outside [%d, %d]", p.MaxClients, MinClientCap, MaxClientsCap)
	case p.MaxRows < 1 || p.MaxRows > MaxRowsCap:
		return fmt.Errorf("node: row cap %d outside [1, %d]", p.MaxRows, MaxRowsCap)
	case p.RoundLimitMs < MinRoundLimitMs || p.RoundLimitMs > MaxRoundLimitMs:
		return fmt.Errorf("node: round limit %d ms outside [%d, %d]", p.RoundLimitMs, MinRoundLimitMs, MaxRoundLimitMs)
	case p.RoundIntervalMs < MinRoundIntervalMs || p.RoundIntervalMs > MaxRoundIntervalMs:
		return fmt.Errorf("node: round interval %d ms outside [%d, %d]", p.RoundIntervalMs, MinRoundIntervalMs, MaxRoundIntervalMs)
	}
	work := PIRWork(int(p.MaxClients), int(p.K), int(p.MaxRows), int(p.ChunkSize))
	if secs := work / rate; secs > float64(p.RoundLimitMs)/1000 {
		return fmt.Errorf("node: PIR work of %.3g bytes (n=%d, k=%d, L=%d, b=%d) needs %.1f s at %.3g B/s, more than the round limit of %d ms",
			work, p.MaxClients, p.K, p.MaxRows, p.ChunkSize, secs, rate, p.RoundLimitMs)
	}
	return nil
}

// PIRWork is §9's XOR volume for one server and round.
func PIRWork(n, k, L, b int) float64 {
	return float64(L) / 8 * float64(256+n*k) * float64(b)
}

// EpochID is the epoch id: the tagged hash of the descriptor's group part (§3).
func EpochID(d *wire.Descriptor) [32]byte { return TaggedHash(TagEpochID, d.MarshalGroup()) }

// RegisterDigest is what a registration key signs (§4.1).
func RegisterDigest(r *wire.Register) [32]byte {
	return TaggedHash(TagRegister, r.Epoch[:], r.XKey[:], r.Reg)
}

// LowOrderProbe is a fixed X25519 private key. A low-order public key
// gives the all-zero shared secret with every private key, which
// crypto/ecdh reports as an error: one ECDH with any fixed scalar detects
// it (the technique of mix's client-key check, applied to the servers' D_j:
// a D_j of low order would make every client's PIR seeds with that server
// public, §6.2).
var LowOrderProbe = func() *ecdh.PrivateKey {
	k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{0x5a}, 32))
	if err != nil {
		panic(err) // unreachable: any 32 bytes are an X25519 private key
	}
	return k
}()

// CheckX25519 rejects a malformed or low-order X25519 public key.
func CheckX25519(b []byte) error {
	pk, err := ecdh.X25519().NewPublicKey(b)
	if err != nil {
		return err
	}
	if _, err := LowOrderProbe.ECDH(pk); err != nil {
		return fmt.Errorf("key of low order: %w", group.ErrIdentity)
	}
	return nil
}
