//go:build !riffletest

package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
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

const hooksBuilt = false

// The hooks' state in configs, servers and clients: empty here.
type (
	serverHookCfg   struct{}
	serverHookState struct{}
)

func (s *Server) hookClientHandlers(c transport.HandlerFunc, p transport.SegHandlerFunc) (transport.HandlerFunc, transport.SegHandlerFunc) {
	return c, p
}

func (*Server) hookStage([32]byte, uint32, string)                            {}
func (*Server) hookPseudonyms([32]byte, []*group.Element)                     {}
func (*Server) hookPerm([32]byte, int, *mix.StepSecret)                       {}
func (*Server) hookMask([32]byte, uint32, uint32, int, []byte, int)           {}
func (*Server) hookMasks([32]byte, uint32, uint32, [][]byte, int)             {}
func (*Server) hookCorrupt([32]byte, uint32, uint32, [][]byte)                {}
func (*Server) hookSubmit([32]byte, uint32, uint32)                           {}
func (*Server) hookRequests([32]byte, uint32, int, [][32]byte)                {}
func (*Server) hookWithholdClosing(*wire.Closing) bool                        { return false }
func (*Server) hookIndexPage() int                                            { return 0 }
func (*Server) hookIndexReply(_ peer.ID, m []store.Manifest) []store.Manifest { return m }
func (*Server) hookIndexClosings(_ peer.ID, r [][]byte) [][]byte              { return r }
func (*Server) hookWindowReply(peer.ID, *wire.Window)                         {}
func (*Server) hookWindowRefuse(peer.ID) bool                                 { return false }
func (*Server) hookKeepOut(peer.ID, [32]byte) bool                            { return false }
func (*Server) hookUnpinnedWindow() bool                                      { return false }
func (*Server) hookLackWindow() bool                                          { return false }

func (*Server) hookCheatKeys(_ []peer.ID, keys [][32]byte, _ *closed) [][32]byte { return keys }
func (*Server) hookCheatList(*wire.RegList)                                      {}
func (*Server) hookSignAny() bool                                                { return false }
func (*Server) hookNoReceipt() bool                                              { return false }
func (*Server) hookHoldOpen() bool                                               { return false }
func (*Server) hookLeaderWindow(_ uint64, w []wire.WindowRef) []wire.WindowRef   { return w }
func (*Server) hookLeaderGap(_ uint64, g []wire.Cert) []wire.Cert                { return g }
func (*Server) hookOpenLate(peer.ID) time.Duration                               { return 0 }
func (*Server) hookSignedTo(_ bool, chain []peer.ID) []peer.ID                   { return chain }
func (*Server) hookFinalSigned(*wire.Signed)                                     {}
func (*Server) hookSyncPoked()                                                   {}
func (*Server) hookPushBack(peer.ID, uint64)                                     {}
func (*Server) hookCertChecked(*wire.Cert)                                       {}

func (*Server) hookAccuse(uint32) (int, bool)               { return 0, false }
func (*Server) hookCorruptOut(uint32, [][]byte)             {}
func (*Server) hookDropOut(uint32) bool                     { return false }
func (*Server) hookWithhold(uint32) bool                    { return false }
func (*Server) hookPubLate(uint32, peer.ID) time.Duration   { return 0 }
func (*Server) hookLastOut([32]byte, uint32, [][]byte)      {}
func (*Server) hookClosingTo(chain []peer.ID) []peer.ID     { return chain }
func (*Server) hookClosingSigTo(chain []peer.ID) []peer.ID  { return chain }
func (*Server) hookRepeatOut(uint32) bool                   { return false }
func (*Server) hookHideOut(uint32) bool                     { return false }
func (*Server) hookHideCerts() bool                         { return false }
func (*Server) hookLoseOut(uint32) bool                     { return false }
func (*Server) hookRefuseSucc(uint32) bool                  { return false }
func (*Server) hookHoldSubs([32]byte, uint32) bool          { return false }
func (*Server) hookLateOut(uint32) time.Duration            { return 0 }
func (*Server) hookServeLate(uint32) time.Duration          { return 0 }
func (*Server) hookStallRelay(uint32) bool                  { return false }
func (*Server) hookRootTo(uint32, peer.ID, bool) bool       { return true }
func (*Server) hookDropIn(uint32) bool                      { return false }
func (*Server) hookNoteLate(uint32) time.Duration           { return 0 }
func (*Server) hookSilentLack(uint32) bool                  { return false }
func (*Server) hookVoidWait(uint32)                         {}
func (*Server) hookRootDelay(uint32, peer.ID) time.Duration { return 0 }
func (*Server) hookAttestNone(uint32) bool                  { return false }
func (*Server) hookSpreadLate() time.Duration               { return 0 }
func (*Server) hookProbe(*sepoch, uint32, int)              {}
func (*Server) hookRefuseEvidence(wire.Type) bool           { return false }
func (*Server) hookLiar() bool                              { return false }
func (*Server) hookNoPace() bool                            { return false }
func (*Server) hookLieDrop(uint32) bool                     { return false }
func (*Server) hookBadProof([]byte)                         {}
func (*Server) hookRoot(_ *wire.Batch, msg []byte) []byte   { return msg }
