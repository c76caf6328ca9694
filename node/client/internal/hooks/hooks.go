//go:build !riffletest

package hooks

import (
	"crypto/ed25519"
	"io"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Config is what a test sets in a client's config: nothing here.
type Config struct{}

// Hooks is a client's hook points: none here.
type Hooks struct {
	Config Config
}

func Joined(*Hooks, [32]byte, uint32, *mix.ClientSecret)                {}
func Row(*Hooks, [32]byte, uint32, int, int, int)                       {}
func Requested(*Hooks, [32]byte, uint32, [][32]byte)                    {}
func RetryCorrupted(*Hooks) bool                                        { return false }
func ResendAtOnce(*Hooks) bool                                          { return false }
func CoverHandover(*Hooks) bool                                         { return false }
func NoManifestCap(*Hooks) bool                                         { return false }
func NoGapFill(*Hooks) bool                                             { return false }
func HeldDraw(*Hooks) func(io.Reader) ([32]byte, bool)                  { return nil }
func OwnRule(*Hooks) bool                                               { return false }
func UnpinnedWindow(*Hooks) bool                                        { return false }
func Window(*Hooks, *proto.View, func() []*proto.PoolEpoch)             {}
func StartCheck(*Hooks, uint64, []*proto.PoolEpoch)                     {}
func NoPrevCheck(*Hooks) bool                                           { return false }
func NoteHeld(*Hooks, [32]byte)                                         {}
func OwnNote(*Hooks, *wire.RoundList)                                   {}
func OwnEnd(*Hooks, *proto.View, int)                                   {}
func OwnWants(*Hooks)                                                   {}
func IndexClosing(*Hooks, []byte)                                       {}
func OwnFallback(*Hooks) bool                                           { return false }
func OwnUse(*Hooks)                                                     {}
func JobEpochs(*Hooks) int                                              { return 0 }
func Local(*Hooks, string)                                              {}
func RegKey(*Hooks) ed25519.PrivateKey                                  { return nil }
func DupAnswers(_ *Hooks, holds bool) bool                              { return holds }
func Payload(*Hooks, [32]byte, uint32, uint32, []byte)                  {}
func LayerKeys(*Hooks, [32]byte, uint32, uint32, []mix.LayerKey)        {}
func Onion(*Hooks, [32]byte, uint32, uint32, []byte)                    {}
func SecondOnion(*Hooks, *wire.Submit, ed25519.PrivateKey) *wire.Submit { return nil }
func Silent(*Hooks, [32]byte, uint32, uint32) bool                      { return false }
func Register(*Hooks, [32]byte, []*group.Element, ed25519.PublicKey, *mix.ClientSecret, *mix.Registration) {
}
