//go:build riffletest

package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// testObserver is what a server sees, handed to the linking adversary of the
// anonymity tests (docs/anonymity.md, "How it is tested"): nil in every
// server outside those tests. The tests give the adversary the observers of the servers they treat as
// corrupt only; the honest server's is read by the positive control
// alone. Each field may be nil; calls come from the server's goroutines
// concurrently.
type testObserver struct {
	// Perm: this server's setup permutation, forward[input position] =
	// output position (§4).
	Perm func(epoch [32]byte, pos int, forward []int)
	// Pseudonyms: the pseudonym list by output position after setup
	// (public to all servers), each encoded.
	Pseudonyms func(epoch [32]byte, ps [][]byte)
	// Mask: the PIR mask this server applies for (round, slot, request
	// slot t): derived from its seed, or received by the primary.
	Mask func(epoch [32]byte, r, slot uint32, t int, mask []byte, L int)
	// Submit: a submission for (round, slot) arrived at this primary.
	Submit func(epoch [32]byte, r, slot uint32, at time.Time)
	// Requests: the ids requested at output position q in round r (public
	// once published).
	Requests func(epoch [32]byte, r uint32, q int, ids [][32]byte)
	// LastOut: the last server's output of round r, the payloads in
	// plaintext by output position, before it publishes or withholds
	// them. out must not be kept.
	LastOut func(epoch [32]byte, r uint32, out [][]byte)
	// Corrupt (an active adversary): when it returns true this primary
	// spoils its combined answer for (round, slot, t).
	Corrupt func(epoch [32]byte, r, slot uint32, t int) bool
	// IndexReply (an active adversary): the manifests this server puts in
	// an index page it sends to peer to, from those the page would hold.
	IndexReply func(to peer.ID, mans []store.Manifest) []store.Manifest
	// IndexClosings (an active adversary): the closing records this
	// server puts in an index page it sends to peer to.
	IndexClosings func(to peer.ID, recs [][]byte) [][]byte
	// WindowReply (an active adversary): may change the window this
	// server is about to send peer to (leave records or pools out).
	WindowReply func(to peer.ID, w *wire.Window)
	// WindowRefuse (an active adversary): when it returns true this
	// server answers peer to's window request with an error.
	WindowRefuse func(to peer.ID) bool
	// KeepOut (an active adversary, a corrupt primary): when it returns
	// true this primary refuses peer from's registration for the epoch,
	// leaving its client out of its order.
	KeepOut func(from peer.ID, epoch [32]byte) bool
	// UnpinnedWindow breaks §6.3 (v3) on purpose, for the positive
	// control of the targeted sit-out: as leader this server pins no
	// window in its Prepare, and as a member it fetches none before it
	// answers one (the rule before the certified window).
	UnpinnedWindow bool
	// Received: a request from a client (or any peer) on the client and
	// PIR protocols, as this server read it: what the primary sees of a
	// client's sends. body must not be kept.
	Received func(from peer.ID, t wire.Type, body []byte)
	// Stage: this server started stage "mix" (its layer of round r) or
	// "publish" (storing round r's payloads).
	Stage func(epoch [32]byte, r uint32, stage string)
	// Closing (S_0, broken on purpose when it returns false): the closing
	// record S_0 is about to propose; false withholds it.
	Closing func(c *wire.Closing) bool
}
