package wire

// Server catch-up (docs/protocol.md §7 v3): a server that was out of an
// epoch's chain asks a server that was in it for a round's final request
// list, which it checks against the epoch's closing record.
const (
	// TypeListReq: server → roster server, an EpochRef naming an epoch
	// and a round; the reply is the round's final RoundList as signed.
	TypeListReq Type = 94
)
