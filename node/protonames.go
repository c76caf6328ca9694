package node

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
	"github.com/riffle-net/riffle/node/transport"
)

// The names by which package node's files use what moved to
// node/internal/proto, so that the move changed no caller. They go once
// the server and the client are packages of their own that import proto.

func merkleRoot(entries [][]byte) [32]byte { return proto.MerkleRoot(entries) }

func sign(priv crypto.PrivKey, digest [32]byte) ([64]byte, error) { return proto.Sign(priv, digest) }
func verifyPeerSig(id peer.ID, digest [32]byte, sig [64]byte) error {
	return proto.VerifyPeerSig(id, digest, sig)
}

// The request list's cut (§5.3, §6.3 v3).
func listStart(epoch [32]byte, round uint32, n int) int { return proto.ListStart(epoch, round, n) }
func roundRobinCut(q0 int, byPos [][][32]byte, held func([32]byte) bool, maxRows int) [][32]byte {
	return proto.RoundRobinCut(q0, byPos, held, maxRows)
}
func listPairs(byPos [][][32]byte, entries []wire.ListEntry) []wire.ListPair {
	return proto.ListPairs(byPos, entries)
}
func samePairs(a, b []wire.ListPair) bool { return proto.SamePairs(a, b) }

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

func checkGroupParams(got, own wire.Params) error { return proto.CheckGroupParams(got, own) }
func primaryQuota(n uint32, m int) int            { return proto.PrimaryQuota(n, m) }
func selectClients(epoch, beta [32]byte, keys [][32]byte, primaryOf map[[32]byte]uint16, rank map[[32]byte]int, n uint32, m int) [][32]byte {
	return proto.SelectClients(epoch, beta, keys, primaryOf, rank, n, m)
}
func checkPrimaryKept(clients []wire.ClientEntry, regs map[[32]byte]wire.Register, order [][32]byte, n uint32, m int) error {
	return proto.CheckPrimaryKept(clients, regs, order, n, m)
}

// The commit-reveal of the client selection (§3 v3).
var errRevealsInOpen = proto.ErrRevealsInOpen

// The leader's selection and the primaries' signed orders (§3 v3), which
// moved to node/internal/selection; leader.go uses these names.
func selectCandidates(id, beta [32]byte, all map[[32]byte]wire.Forwarded, primaryOf map[[32]byte]uint16, rank map[[32]byte]int, n uint32, m int) [][32]byte {
	return selection.Candidates(id, beta, all, primaryOf, rank, n, m)
}
func unselected(keys [][32]byte, cl *closed) []wire.Forwarded {
	return selection.Unselected(keys, cl.primaryOf, cl.all)
}
func orderOfReply(rl *wire.RegList, id [32]byte, p int, chain []peer.ID) (wire.Order, error) {
	return selection.OrderOfReply(rl, id, p, chain)
}

func commitment(r [wire.CommitSize]byte) [wire.CommitSize]byte { return proto.Commitment(r) }
func selectionBeta(reveals [][wire.CommitSize]byte) [32]byte   { return proto.SelectionBeta(reveals) }
func checkReveals(d *wire.Descriptor) error                    { return proto.CheckReveals(d) }
func revealsOf(d *wire.Descriptor, out [][wire.CommitSize]byte) ([][wire.CommitSize]byte, error) {
	return proto.RevealsOf(d, out)
}

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

func verifyLongTerm(key [32]byte, epoch, regKey [32]byte, sig [64]byte) error {
	return proto.VerifyLongTerm(key, epoch, regKey, sig)
}
func forwardDigest(f *wire.Forwarded) [32]byte { return proto.ForwardDigest(f) }

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
)

// The checks of a descriptor's parameters and the digests of §3 and §4.1.
func genericLimits() wire.Limits                    { return proto.GenericLimits() }
func limitsFor(p wire.Params, m int) wire.Limits    { return proto.LimitsFor(p, m) }
func checkParams(p wire.Params, rate float64) error { return proto.CheckParams(p, rate) }
func pirWork(n, k, L, b int) float64                { return proto.PIRWork(n, k, L, b) }
func epochID(d *wire.Descriptor) [32]byte           { return proto.EpochID(d) }
func registerDigest(r *wire.Register) [32]byte      { return proto.RegisterDigest(r) }

// Certified epoch numbers (§3 v3): the digests servers sign and the
// checks of a certificate.
func openCertDigest(n uint64, id [32]byte) [32]byte      { return proto.OpenCertDigest(n, id) }
func finalCertDigest(n uint64, id, dg [32]byte) [32]byte { return proto.FinalCertDigest(n, id, dg) }
func timeoutDigest(n uint64, chain [][]byte) [32]byte    { return proto.TimeoutDigest(n, chain) }
func timeoutQuorum(m int) int                            { return proto.TimeoutQuorum(m) }
func chainIDs(chain []peer.ID) [][]byte                  { return proto.ChainIDs(chain) }
func certChain(c *wire.Cert) ([]peer.ID, error)          { return proto.CertChain(c) }
func abortDigest(a *wire.Abort) [32]byte                 { return proto.AbortDigest(a) }
func inChain(chain []peer.ID, p peer.ID) bool            { return proto.InChain(chain, p) }
func verifyCert(c *wire.Cert, known map[peer.ID]bool) error {
	return proto.VerifyCert(c, known)
}
func verifyCertIn(c *wire.Cert, group map[peer.ID]bool) error {
	return proto.VerifyCertIn(c, group)
}

// Receipts of registrations (§3 v3) and duplicate-share aborts (§4.1).
func receiptDigest(r *wire.Receipt) [32]byte { return proto.ReceiptDigest(r) }
func regHash(r *wire.Register) [32]byte      { return proto.RegHash(r) }
func checkReceipt(r *wire.Receipt, id [32]byte, reg *wire.Register, chain []peer.ID) error {
	return proto.CheckReceipt(r, id, reg, chain)
}
func checkReceipted(clients []wire.ClientEntry, fwd map[[32]byte]wire.Forwarded, orders []wire.Order, n uint32, m int) error {
	return proto.CheckReceipted(clients, fwd, orders, n, m)
}
func dupDigest(a *wire.DupAbort) [32]byte { return proto.DupDigest(a) }

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

// Deadlines (transport.ShortTimeout, BulkTimeout, PollTimeout).
const (
	shortTimeout = transport.ShortTimeout
	bulkTimeout  = transport.BulkTimeout
	pollTimeout  = transport.PollTimeout
)

type (
	request        = transport.Request
	handlerFunc    = transport.HandlerFunc
	segHandlerFunc = transport.SegHandlerFunc
	gate           = transport.Gate
)

func call(ctx context.Context, h transport.Host, p peer.ID, r request) ([]byte, error) {
	return transport.Call(ctx, h, p, r)
}
func serve(ctx context.Context, h transport.Host, g *gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, caps func(peer.ID, wire.Type) int, fn handlerFunc) {
	transport.Serve(ctx, h, g, log, proto, timeout, caps, fn)
}
func servePooled(ctx context.Context, h transport.Host, g *gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn handlerFunc) {
	transport.ServePooled(ctx, h, g, log, proto, timeout, caps, bufs, fn)
}
func serveBounded(ctx context.Context, h transport.Host, g *gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, bound transport.ReplyBound, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn segHandlerFunc) {
	transport.ServeBounded(ctx, h, g, log, proto, timeout, bound, caps, bufs, fn)
}

func serveBoundedBy(ctx context.Context, h transport.Host, g *gate, log *slog.Logger, proto protocol.ID, timeout time.Duration, bounds func(wire.Type) transport.ReplyBound, caps func(peer.ID, wire.Type) int, bufs *wire.Buffers, fn segHandlerFunc) {
	transport.ServeBoundedBy(ctx, h, g, log, proto, timeout, bounds, caps, bufs, fn)
}

// oneSegment is fn as a segHandlerFunc (transport.ServePooled).
func oneSegment(fn handlerFunc) segHandlerFunc {
	return func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
		rt, rep, err := fn(ctx, from, t, body)
		return rt, [][]byte{rep}, err
	}
}

// The caps and replies of each protocol, from wire's message table.
var (
	wireProto    = transport.WireProto
	ceilings     = transport.Ceilings
	errUnhandled = transport.ErrUnhandled
)

func replyTo(proto protocol.ID, t wire.Type) (wire.Type, int, error) {
	return transport.ReplyTo(proto, t)
}
func takes(proto protocol.ID, t wire.Type) error     { return transport.Takes(proto, t) }
func unhandled(proto protocol.ID, t wire.Type) error { return transport.Unhandled(proto, t) }

// IdentityFile is transport.IdentityFile: the name of the libp2p identity
// key in a data directory.
const IdentityFile = transport.IdentityFile

// LoadIdentity reads the identity key of dir, creating it if absent
// (transport.LoadIdentity).
func LoadIdentity(dir string) (crypto.PrivKey, error) { return transport.LoadIdentity(dir) }

// The epoch's view and the checks servers and clients run on it (§3,
// §4.1, §5.3).
type view = proto.View

func openDigest(d *wire.Descriptor) [32]byte  { return proto.OpenDigest(d) }
func finalDigest(d *wire.Descriptor) [32]byte { return proto.FinalDigest(d) }
func listDigest(rl *wire.RoundList) [32]byte  { return proto.ListDigest(rl) }
func checkDescriptor(d *wire.Descriptor, rate float64) (*view, error) {
	return proto.CheckDescriptor(d, rate)
}
func checkSigned(sd *wire.Signed, rate float64) (*view, error) { return proto.CheckSigned(sd, rate) }
func verifyRegs(v *view, regs []wire.Register, rnd io.Reader) ([]*mix.Registration, []int, error) {
	return proto.VerifyRegs(v, regs, rnd)
}
func checkRegister(v *view, r *wire.Register) (*mix.Registration, error) {
	return proto.CheckRegister(v, r)
}
func checkList(v *view, rl *wire.RoundList) error { return proto.CheckList(v, rl) }

// Closing records and decoy pools (§6.3 v3), manifests in the index (§7)
// and constants servers and clients share.
const (
	tagClosing            = proto.TagClosing
	tagPoolSeed           = proto.TagPoolSeed
	tagPool               = proto.TagPool
	manifestsPerPseudonym = proto.ManifestsPerPseudonym
	maxIndexItems         = proto.MaxIndexItems
	handoverMax           = proto.HandoverMax
	stateEvery            = proto.StateEvery
	errWindowBusy         = proto.ErrWindowBusy
	errIndexBusy          = proto.ErrIndexBusy
	maxLookbackWindow     = proto.MaxLookbackWindow
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

func closingDigest(c *wire.Closing) [32]byte           { return proto.ClosingDigest(c) }
func checkClosing(v *view, c *wire.Closing) error      { return proto.CheckClosing(v, c) }
func poolDigest(p *wire.DecoyPool) [32]byte            { return proto.PoolDigest(p) }
func syncedManifests(raw [][]byte) map[[32]byte][]byte { return proto.SyncedManifests(raw) }
func isManifest(chunk []byte) bool                     { return proto.IsManifest(chunk) }
func indexFromWire(idx []wire.IndexEntry) []IndexEntry { return proto.IndexFromWire(idx) }
func samplePool(c *wire.Closing, pairs []wire.PoolPair) *wire.DecoyPool {
	return proto.SamplePool(c, pairs)
}

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

func costTable() string                            { return proto.CostTable() }
func checkpointLag(intervalMs, W uint32) uint32    { return proto.CheckpointLag(intervalMs, W) }
func checkpoints(R, intervalMs, W uint32) []uint32 { return proto.Checkpoints(R, intervalMs, W) }
func indexCap(p int, b uint32) int                 { return proto.IndexCap(p, b) }

// The walk back to an epoch's decoy window (§6.3 v3).
type windowWalk = proto.WindowWalk

func previousGroup(d *wire.Descriptor, items []wire.WindowItem) *wire.Descriptor {
	return proto.PreviousGroup(d, items)
}
func resolveWindow(d *wire.Descriptor, got []wire.WindowItem) (windowWalk, bool) {
	return proto.ResolveWindow(d, got)
}
func walkWindow(d *wire.Descriptor, got []wire.WindowItem) windowWalk {
	return proto.WalkWindow(d, got)
}

// ChainServer is one server of an epoch's chain, in chain order
// (proto.ChainServer).
type ChainServer = proto.ChainServer

func writeFileDurably(path string, b []byte) error { return proto.WriteFileDurably(path, b) }

// leaderOf is proto.LeaderOf: the leader of epoch number n in chain.
func leaderOf(n uint64, chain []peer.ID) peer.ID { return proto.LeaderOf(n, chain) }
