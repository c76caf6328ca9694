//go:build riffletest

package client

// The anonymity tests' observer of a client (observe.go has the server's).

// ClientObserver is what the anonymity tests learn from a client: the
// ground truth the adversary tries to guess (never given to it) and what
// a global observer of the client's link sees.
type ClientObserver struct {
	// Joined: the client's slot and its pseudonym (encoded) in an epoch.
	Joined func(epoch [32]byte, slot uint32, pseudonym []byte)
	// Row: the row the client's query for (round, t) asked for, of L.
	Row func(epoch [32]byte, r uint32, t, row, L int)
	// Requested: the ids the client's jobs request in round r (decoys
	// not included), in request slot order.
	Requested func(epoch [32]byte, r uint32, ids [][32]byte)
	// ResendAtOnce breaks §5.2 (v3) on purpose, for the positive
	// control of the void-after-leaving adversary: a chunk and the
	// requests of a void round go out again in the next onion sealed,
	// not resendHold rounds after the list (the rule before).
	ResendAtOnce bool
	// NoManifestCap breaks §6.4 (v3) on purpose, for the test of the
	// servers' caps: the client sends all its manifests at once.
	NoManifestCap bool
	// HeldDecoys breaks §6.3 (v3) on purpose, for the negative control
	// of the cross-epoch adversary: decoys are drawn, at the same rate,
	// from the chunks the client published or fetched (what v2 did).
	HeldDecoys bool
	// RetryCorrupted breaks §6.3 on purpose, for the positive control of
	// the active adversary that spoils answers: a chunk whose answer was
	// corrupted is asked for again in the next epoch, as a naive client
	// would.
	RetryCorrupted bool
	// NoGapFill breaks §7 (v3) on purpose, for the positive control of
	// the active adversary that leaves a manifest out of one client's
	// index: the client takes its primary's copy as whole and completes
	// it from no other server.
	NoGapFill bool
	// NoClosingFill breaks §7 (v3) on purpose, for the positive control
	// of the active adversary that withholds closing records from one
	// client: the client asks no other server for a record its primary
	// lacks.
	NoClosingFill bool
	// OwnDecoys breaks §6.3 (v3) on purpose, for the positive controls of
	// the late-record, newcomer and restart adversaries: decoys come from
	// the lists this client received itself, of the epochs it attended,
	// admitted as their closing records reach it (the rule before the
	// group's window), and no window is fetched.
	OwnDecoys bool
	// UnpinnedWindow breaks §6.3 (v3) on purpose, for the positive
	// control of the targeted sit-out: the window is the last 4 epochs
	// of the walk whose record and pool some server gave, not the epochs
	// the descriptor pins, and the client takes part with whatever it got
	// (the rule before the certified window).
	UnpinnedWindow bool
	// Window: the epochs of the window the client holds for an epoch,
	// newest first, once it holds it; WindowAt: the same by number.
	Window   func(epoch [32]byte, window [][32]byte)
	WindowAt func(n uint64, window []uint64)
}
