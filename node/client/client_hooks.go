//go:build !riffletest

package client

import (
	"context"
	"crypto/ed25519"
	"io"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The client's hook points, empty in the binary (hooks.go says why).

// The hooks' state in a client's config and in a client: empty here.
type (
	ClientHookCfg   struct{}
	clientHookState struct{}
)

func (*Client) hookJoined([32]byte, uint32, *mix.ClientSecret) {}
func (*Client) hookRow([32]byte, uint32, int, int, int)        {}
func (*Client) hookRequested([32]byte, uint32, [][32]byte)     {}
func (*Client) hookRetryCorrupted() bool                       { return false }
func (*Client) hookResendAtOnce() bool                         { return false }
func (*Client) hookNoManifestCap() bool                        { return false }
func (*Client) hookNoGapFill() bool                            { return false }
func (*Client) hookHeldDraw() func(io.Reader) ([32]byte, bool) { return nil }
func (*Client) hookOwnRule() bool                              { return false }
func (*Client) hookUnpinnedWindow() bool                       { return false }
func (*Client) hookWindow(*proto.View)                         {}
func (*Client) hookNoteHeld([32]byte)                          {}
func (*Client) hookOwnNote(*wire.RoundList)                    {}
func (*Client) hookOwnEnd(*proto.View)                         {}
func (*Client) hookOwnWants()                                  {}
func (*Client) hookIndexClosing([]byte)                        {}
func (*Client) hookOwnFallback() bool                          { return false }
func (*Client) hookOwnUse()                                    {}
func (*Client) hookJobEpochs() int                             { return 0 }
func (*Client) hookLocal(string)                               {}
func (*Client) hookRegKey() ed25519.PrivateKey                 { return nil }
func (*Client) hookRegister([32]byte, []*group.Element, ed25519.PublicKey, *mix.ClientSecret, *mix.Registration) {
}
func (*Client) hookDupAnswers(holds bool) bool                         { return holds }
func (*Client) hookPayload([32]byte, uint32, uint32, []byte)           {}
func (*Client) hookLayerKeys([32]byte, uint32, uint32, []mix.LayerKey) {}
func (*Client) hookOnion([32]byte, uint32, uint32, []byte)             {}
func (*Client) hookSecondOnion(context.Context, *cepoch, *wire.Submit) {}
