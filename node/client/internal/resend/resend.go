// Package resend is the rule for the chunks of a round that did not
// publish them (docs/protocol.md §5.2 v3, "a void round counts as seen"):
// how long they are held in their epoch, what becomes of them once it
// ends (Rule), and which closing record settles them (Covers, Due). Pure:
// no I/O, no lock; the client's queue applies it (node/client's
// resend.go).
package resend

import (
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Re-sending the chunks of a round that did not publish them (docs/
// protocol.md §5.2 v3, "a void round counts as seen"). Whoever stopped
// the round may have read its payloads (the last servers see plaintexts),
// so the same chunk sent again under another pseudonym would tie the two
// pseudonyms together. Within one epoch a chunk goes out again under the
// same pseudonym, which ties nothing new; when the epoch ends with it
// unsent, it waits for the epoch's closing record (closing.go) and
// Rule decides.

// Hold is how many rounds a chunk, and the requests, of a round
// whose signed list did not publish them wait before they go out again in
// the same epoch, counted from the onion sealed when that list came (W
// rounds after the round): the hand-over length. A client that left before
// the list came cannot send them again (its handed-over onions were
// sealed), and the epoch it left ends before its hand-over runs out
// (departure.go), so before any client sends anything of that round
// again: every uploader of the round behaves alike, and whoever stopped
// the round, having read its payloads, can tell the one that left among
// them only by a guess (docs/anonymity.md, "When you come and go").
const Hold = proto.HandoverMax

// Record is what a client holds, signed by all m servers, about a
// round whose chunk it did not see published.
type Record int

const (
	// RecordNone: no signed record of the round (it was void or did not
	// finish before the epoch ended, and no list came).
	RecordNone Record = iota
	// RecordMissing: the round's list, signed by all m servers, lacks
	// the chunk's id among the ids published; a void list (ListVoid)
	// lacks every id.
	RecordMissing
)

// Action is what becomes of such a chunk once its epoch has ended.
type Action int

const (
	// Never: the chunk counts as published and the user is told.
	Never Action = iota
	// Later: a public chunk goes out again after a wait of full
	// epochs, so that the epoch right after says nothing.
	Later
	// Reencrypt: a private file is encrypted again under a fresh
	// key and sent whole; its link has not been shown yet, so the new
	// chunks have nothing in common with the ones seen.
	Reencrypt
)

// WaitMax caps the full epochs a public chunk waits before it is
// sent again: 1 + G, G geometric with p = ½.
const WaitMax = 4

// Rule decides the fate of a chunk of a round that ended without
// publishing it, once the epoch is over: without a record signed by all m
// servers it counts as published; with one, a public chunk waits 1 + G
// full epochs (the wait is returned) and a private file is encrypted
// again.
func Rule(rec Record, private bool, rnd io.Reader) (Action, int, error) {
	if rec == RecordNone {
		return Never, 0, nil
	}
	if private {
		return Reencrypt, 0, nil
	}
	w := 1
	var b [1]byte
	for w < WaitMax {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return 0, 0, fmt.Errorf("node: draw a re-send wait: %w", err)
		}
		if b[0]&1 == 0 {
			break
		}
		w++
	}
	return Later, w, nil
}

// CloseWaitMax bounds the windows (of epoch numbers e+2, e+3, …) in which
// a chunk seen in epoch e waits for e's closing record: without one by
// then, it counts as published.
const CloseWaitMax = 3

// Covers reports whether closing record rec shows round void, or
// published with list, the list that lacked the chunk.
func Covers(rec *wire.Closing, round uint32, list [32]byte) bool {
	if int(round) >= len(rec.Rounds) {
		return false
	}
	x := rec.Rounds[round]
	return (x.State == wire.ClosedVoid || x.State == wire.ClosedPublished) && x.List == list
}

// Due reports whether the window of an epoch of number n is the last
// that may bring the record of the epoch of number seen: the record enters
// windows from number seen+2 on, and a chunk waits for CloseWaitMax of
// them.
func Due(seen, n uint64) bool { return n >= seen+1+CloseWaitMax }
