package proto

import (
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// Constants servers and clients share.

const (
	// HandoverMax is how many cover onions a leaving client hands over.
	HandoverMax = 32
)

// StateEvery is the mean period of a waiting client's state requests: one
// for every client (anonymity), so a protocol rule, not a Tunables field.
const StateEvery = 5 * time.Second

// ErrWindowBusy refuses a window request for want of a slot: the client
// asks again a little later.
const ErrWindowBusy = wire.Refusal("node: too many window requests, try again")

// ErrIndexBusy refuses an index page for want of a slot: the client asks
// again a little later (every client of a primary syncs at the same
// checkpoint rounds, more of them than its slots at n = 200).
const ErrIndexBusy = wire.Refusal("node: too many index requests, try again")
