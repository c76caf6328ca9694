package node

import "github.com/riffle-net/riffle/internal/wire"

// leaderCheat makes a leader break the selection's rules, for the tests
// of the bounded leader (docs/protocol.md §3 v3): ServerConfig.cheat is
// unexported and nil outside them.
type leaderCheat struct {
	// keys, if set, replaces the selection the leader computed.
	keys func(keys [][32]byte, cl *closed) [][32]byte
	// list, if set, changes the leader's list before it is sent.
	list func(rl *wire.RegList)
	// noReceipt makes this server, when it does not lead, take no
	// forwarded registration (as if every forward to it were lost).
	noReceipt bool
}
