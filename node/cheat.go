//go:build riffletest

package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/leader"
)

// leaderCheat makes a leader break the selection's rules, for the tests
// of the bounded leader (docs/protocol.md §3 v3): nil outside them.
type leaderCheat struct {
	// keys, if set, replaces the selection the leader computed.
	keys func(keys [][32]byte, cl *leader.Closed) [][32]byte
	// shrink, if set, replaces the selection as keys does, knowing the
	// chain (the leader that shrinks an epoch around one client).
	shrink func(chain []peer.ID, keys [][32]byte, cl *leader.Closed) [][32]byte
	// signAny makes this server sign a final descriptor without the v3
	// checks of what it receipted, of the selection and of its own
	// clients kept: the server that let a leader shrink an epoch, for the
	// positive control of the shrink adversary.
	signAny bool
	// list, if set, changes the leader's list before it is sent.
	list func(rl *wire.RegList)
	// noReceipt makes this server, when it does not lead, take no
	// forwarded registration (as if every forward to it were lost).
	noReceipt bool
}
