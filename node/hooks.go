//go:build !riffletest

package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/evidence"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// The tests' hook points (observers, cheats, misbehaviours), failpoint
// style: production code calls these methods, which here are empty or
// return their neutral value, so the compiler inlines them away and the
// binary holds neither a hook nor a branch for one. Builds with the tag
// riffletest (make test) take hooks_riffletest.go instead, where each
// calls the hooks a test set. Arguments are only what the call site has
// at hand: anything a hook needs computed is computed there. Methods, not
// an interface the tests implement: an interface call is never inlined
// away, and the hooks need the server's and client's internals.

// The hooks' state in configs, servers and clients: empty here.
type (
	serverHookCfg   struct{}
	serverHookState struct{}
)

// hookSrc gives a part of the server outside Server (mixer, submissions,
// closings, settingUp) the server's hook points: nil views here, so that the empty
// hooks inline away and no field of the binary holds a view's type.
type hookSrc struct{}

func newHookSrc(*Server) hookSrc { return hookSrc{} }
func (hookSrc) run() *hookRun    { return nil }
func (hookSrc) cfg() *hookCfg    { return nil }

// leaderHooks: none in the binary (leader.Config.Hooks).
func (*Server) leaderHooks() leader.Hooks { return nil }

// blameHooks: none in the binary (roundblame.Config.Hooks).
func (*Server) blameHooks() roundblame.Hooks { return nil }

// evidenceHooks: none in the binary (evidence.Config.Hooks).
func (*Server) evidenceHooks() evidence.Hooks { return nil }

func (s *hookCfg) ClientHandlers(c transport.HandlerFunc, p transport.SegHandlerFunc) (transport.HandlerFunc, transport.SegHandlerFunc) {
	return c, p
}

func (*hookCfg) Stage([32]byte, uint32, string)                            {}
func (*hookCfg) Pseudonyms([32]byte, []*group.Element)                     {}
func (*hookCfg) Perm([32]byte, int, *mix.StepSecret)                       {}
func (*hookCfg) Mask([32]byte, uint32, uint32, int, []byte, int)           {}
func (*hookCfg) Masks([32]byte, uint32, uint32, [][]byte, int)             {}
func (*hookCfg) Corrupt([32]byte, uint32, uint32, [][]byte)                {}
func (*hookCfg) Submit([32]byte, uint32, uint32)                           {}
func (*hookCfg) Requests([32]byte, uint32, int, [][32]byte)                {}
func (*hookCfg) WithholdClosing(*wire.Closing) bool                        { return false }
func (*hookCfg) IndexPage() int                                            { return 0 }
func (*hookCfg) IndexReply(_ peer.ID, m []store.Manifest) []store.Manifest { return m }
func (*hookCfg) IndexClosings(_ peer.ID, r [][]byte) [][]byte              { return r }
func (*hookCfg) WindowReply(peer.ID, *wire.Window)                         {}
func (*hookCfg) WindowRefuse(peer.ID) bool                                 { return false }
func (*hookCfg) KeepOut(peer.ID, [32]byte) bool                            { return false }
func (*hookCfg) UnpinnedWindow() bool                                      { return false }
func (*hookRun) LackWindow() bool                                          { return false }

func (*hookCfg) CheatKeys(_ []peer.ID, keys [][32]byte, _ *leader.Closed) [][32]byte { return keys }
func (*hookCfg) CheatList(*wire.RegList)                                             {}
func (*hookCfg) SignAny() bool                                                       { return false }
func (*hookCfg) NoReceipt() bool                                                     { return false }
func (*hookRun) HoldOpen() bool                                                      { return false }
func (*hookRun) LeaderWindow(_ uint64, w []wire.WindowRef) []wire.WindowRef          { return w }
func (*hookRun) LeaderGap(_ uint64, g []wire.Cert) []wire.Cert                       { return g }
func (*hookRun) OpenLate(peer.ID) time.Duration                                      { return 0 }
func (*hookRun) SignedTo(_ bool, chain []peer.ID) []peer.ID                          { return chain }
func (*hookRun) FinalSigned(*wire.Signed)                                            {}
func (*hookRun) SyncPoked()                                                          {}
func (*hookRun) PushBack(peer.ID, uint64)                                            {}
func (*hookRun) CertChecked(*wire.Cert)                                              {}

func (*hookRun) Accuse(uint32) (int, bool)                  { return 0, false }
func (*hookRun) CorruptOut(uint32, [][]byte)                {}
func (*hookRun) DropOut(uint32) bool                        { return false }
func (*hookRun) Withhold(uint32) bool                       { return false }
func (*hookRun) PubLate(uint32, peer.ID) time.Duration      { return 0 }
func (*hookCfg) LastOut([32]byte, uint32, [][]byte)         {}
func (*hookRun) ClosingTo(chain []peer.ID) []peer.ID        { return chain }
func (*hookRun) ClosingSigTo(chain []peer.ID) []peer.ID     { return chain }
func (*hookRun) RepeatOut(uint32) bool                      { return false }
func (*hookRun) HideOut(uint32) bool                        { return false }
func (*hookRun) HideCerts() bool                            { return false }
func (*hookRun) NoList(uint32) bool                         { return false }
func (*hookRun) ListTo(uint32, peer.ID) bool                { return true }
func (*hookRun) ProposalTo(_ uint32, c []peer.ID) []peer.ID { return c }
func (*hookRun) LoseOut(uint32) bool                        { return false }
func (*hookRun) RefuseSucc(uint32) bool                     { return false }
func (*hookRun) HoldSubs([32]byte, uint32) bool             { return false }
func (*hookRun) DrySilent([32]byte, uint32) bool            { return false }
func (*hookRun) DryLie([32]byte, uint32) bool               { return false }
func (*hookRun) LieDryLocked(*sepoch, uint32, uint32) (wire.Dry, bool) {
	return wire.Dry{}, false
}
func (*hookRun) LateOut(uint32) time.Duration            { return 0 }
func (*hookRun) SignLate(uint32) time.Duration           { return 0 }
func (*hookRun) NoAssemble() bool                        { return false }
func (*hookRun) ListSigTo(peer.ID) bool                  { return true }
func (*hookRun) LeaderLate(uint32) time.Duration         { return 0 }
func (*hookRun) ListReqRound(r uint32) uint32            { return r }
func (*hookRun) ServeLate(uint32) time.Duration          { return 0 }
func (*hookRun) StallRelay(uint32) bool                  { return false }
func (*hookRun) RootTo(uint32, peer.ID, bool) bool       { return true }
func (*hookRun) DropIn(uint32) bool                      { return false }
func (*hookRun) NoteLate(uint32) time.Duration           { return 0 }
func (*hookRun) SilentLack(uint32) bool                  { return false }
func (*hookRun) VoidWait(uint32)                         {}
func (*hookRun) RootDelay(uint32, peer.ID) time.Duration { return 0 }
func (*hookRun) AttestNone(uint32) bool                  { return false }
func (*hookRun) SilentAll(uint32) bool                   { return false }
func (*hookRun) Probe(*sepoch, uint32, int)              {}
func (*hookRun) NoPace() bool                            { return false }
func (*hookRun) BadProof([]byte)                         {}
func (*hookRun) Root(_ *wire.Batch, msg []byte) []byte   { return msg }

func (*hookRun) AccountLate(peer.ID, uint32) time.Duration { return 0 }
func (*hookRun) ForwardRoot(*wire.ForwardRoot)             {}
func (*hookRun) AccountUnforwarded([32]byte, uint32) bool  { return false }
func (*hookRun) DropSubs([32]byte, uint32) bool            { return false }
