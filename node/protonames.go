package node

import (
	"context"
	"io"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The names by which cmd, the harnesses and the tests reach what moved to
// node/internal/proto and node/transport (node's own files name proto and
// transport directly). They go once the server and the client are
// packages of their own that import proto.

// The bounded leader's group constants and client selection (§3 v3).
const (
	// DefaultMinAnonymity is proto.DefaultMinAnonymity: a client's default
	// minimum anonymity set (--min-anonymity).
	DefaultMinAnonymity = proto.DefaultMinAnonymity
	// MaxGroupServers is proto.MaxGroupServers: m_max, the largest chain
	// the client cap is sized for.
	MaxGroupServers = proto.MaxGroupServers
	// MinClientCap is proto.MinClientCap: the smallest client cap n a
	// server accepts.
	MinClientCap = proto.MinClientCap
)

// Long-term client keys (§8 "After a blame", §3 "Registration", §5.4).

// LongTermKeyFile is proto.LongTermKeyFile: the name of a client's
// long-term key in its data directory.
const LongTermKeyFile = proto.LongTermKeyFile

// LongTermKey is a client's long-term Ed25519 key (proto.LongTermKey).
type LongTermKey = proto.LongTermKey

// NewLongTermKey draws a fresh key (proto.NewLongTermKey).
func NewLongTermKey(r io.Reader) (*LongTermKey, error) { return proto.NewLongTermKey(r) }

// LoadLongTermKey reads the long-term key of a client data directory,
// creating it on first run (proto.LoadLongTermKey).
func LoadLongTermKey(dir string, r io.Reader) (*LongTermKey, error) {
	return proto.LoadLongTermKey(dir, r)
}

// Bounds on parameters a server accepts (§3) and the group pace's range
// and default (§5 v3): proto's, under the names cmd and the tests use.
const (
	MaxRounds              = proto.MaxRounds
	MinChunkSize           = proto.MinChunkSize
	MaxChunkSize           = proto.MaxChunkSize
	MaxK                   = proto.MaxK
	MaxClientsCap          = proto.MaxClientsCap
	MaxRowsCap             = proto.MaxRowsCap
	DefaultPIRRate         = proto.DefaultPIRRate
	MinRoundIntervalMs     = proto.MinRoundIntervalMs
	MaxRoundIntervalMs     = proto.MaxRoundIntervalMs
	DefaultRoundIntervalMs = proto.DefaultRoundIntervalMs
	MinRoundLimitMs        = proto.MinRoundLimitMs
	MaxRoundLimitMs        = proto.MaxRoundLimitMs
)

// The names by which node's files use what moved to node/transport: the
// protocol ids, the deadlines, the call and serve paths and the caps.

// Protocol ids (transport.Proto*).
const (
	ProtoRoster = transport.ProtoRoster
	ProtoEpoch  = transport.ProtoEpoch
	ProtoRound  = transport.ProtoRound
	ProtoClient = transport.ProtoClient
	ProtoPIR    = transport.ProtoPIR
)

// ProtocolVersion is transport.ProtocolVersion: the wire version, carried
// in Hello.
const ProtocolVersion = transport.ProtocolVersion

// DesignVersion is transport.DesignVersion: the version of
// docs/protocol.md that the code implements.
const DesignVersion = transport.DesignVersion

// oneSegment is fn as a segHandlerFunc (transport.ServePooled).
func oneSegment(fn transport.HandlerFunc) transport.SegHandlerFunc {
	return func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
		rt, rep, err := fn(ctx, from, t, body)
		return rt, [][]byte{rep}, err
	}
}

// IdentityFile is transport.IdentityFile: the name of the libp2p identity
// key in a data directory.
const IdentityFile = transport.IdentityFile

// LoadIdentity reads the identity key of dir, creating it if absent
// (transport.LoadIdentity).
func LoadIdentity(dir string) (crypto.PrivKey, error) { return transport.LoadIdentity(dir) }

// Closing records and decoy pools (§6.3 v3), manifests in the index (§7)
// and constants servers and clients share.
const (

	// IndexCeilingBytes is proto.IndexCeilingBytes: the manifest bytes
	// the index takes per R rounds.
	IndexCeilingBytes = proto.IndexCeilingBytes
	// WindowLookback is proto.WindowLookback: the epoch numbers a window
	// looks back over.
	WindowLookback = proto.WindowLookback
	// BudgetLookback is proto.BudgetLookback: the epoch numbers the walk
	// for the refusal budgets goes back over.
	BudgetLookback = proto.BudgetLookback
	// DecoyRateNum / DecoyRateDen is proto's ρ = ½.
	DecoyRateNum, DecoyRateDen = proto.DecoyRateNum, proto.DecoyRateDen
	// DecoyEpochs is proto.DecoyEpochs: E_d, the epochs whose request
	// lists make the pool.
	DecoyEpochs = proto.DecoyEpochs
)

// The group's constants (§3), the tunables, the cost model and the
// checkpoint rounds (§6.4 v3): proto's, under the names cmd and the tests
// use.

// Params are the epoch parameters a leader publishes in its descriptor
// (proto.Params).
type Params = proto.Params

// DefaultParams are the epoch parameters of a new leader
// (proto.DefaultParams).
func DefaultParams() Params { return proto.DefaultParams() }

// DefaultIndexHours is the default index retention (proto).
const DefaultIndexHours = proto.DefaultIndexHours

// Tunables are a server's and a client's own timeouts, periods and
// back-off intervals (proto.Tunables).
type Tunables = proto.Tunables

// DefaultTunables are the tunables' defaults (proto.DefaultTunables).
func DefaultTunables() Tunables { return proto.DefaultTunables() }

// Traffic, Rate and ClientCost are what a group costs (proto's cost.go).
type (
	Traffic    = proto.Traffic
	Rate       = proto.Rate
	ClientCost = proto.ClientCost
)

// GroupCost is one client's worst case of a group (proto.GroupCost).
func GroupCost(p Params) ClientCost { return proto.GroupCost(p) }

// ServerCost is one server's traffic (proto.ServerCost).
func ServerCost(p Params, n, m int) Rate { return proto.ServerCost(p, n, m) }

// FormatRate formats bytes an hour (proto.FormatRate).
func FormatRate(perHour float64) string { return proto.FormatRate(perHour) }

// ChainServer is one server of an epoch's chain, in chain order
// (proto.ChainServer).
type ChainServer = proto.ChainServer
