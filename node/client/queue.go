package client

import (
	"io"
	"log/slog"

	"github.com/riffle-net/riffle/node/client/internal/presence"
)

// queue is the client's jobs and what they queue: the chunks to upload,
// the files wanted and the requests in flight, with the rules that move
// them between epochs (resend.go, docs/protocol.md §5.2 v3) and pause them
// (presence.go, §5.4 v3). It is guarded by Client.mu, which every caller
// of its methods holds: a chunk moves between the queue and its epoch's
// rounds (cepoch) in one step under that lock.
type queue struct {
	up       []upItem
	wants    map[[32]byte]*getJob
	inflight map[[32]byte]bool
	failed   map[[32]byte]bool
	// retry holds ids whose answer was corrupted in an earlier epoch:
	// never asked for on purpose again, taken only when a decoy draw
	// lands on them (§6.3 v3).
	retry map[[32]byte]bool

	// What the rules use of the client: its counters (under the same
	// lock), its randomness, its log and the user's progress lines.
	stats *Stats
	rand  io.Reader
	log   *slog.Logger
	say   func(format string, args ...any)
}

func newQueue(stats *Stats, rnd io.Reader, log *slog.Logger, say func(string, ...any)) queue {
	return queue{wants: map[[32]byte]*getJob{}, inflight: map[[32]byte]bool{}, failed: map[[32]byte]bool{}, retry: map[[32]byte]bool{},
		stats: stats, rand: rnd, log: log, say: say}
}

// busy reports whether a job is queued or running.
func (q *queue) busy() bool {
	return len(q.up) > 0 || len(q.wants) > 0
}

// fullEpoch counts a full epoch off the waits of queued chunks and into
// the presence count p (§5.4 v3).
func (q *queue) fullEpoch(p *presence.Count) {
	q.waitedEpoch()
	p.Full(q.busy())
}
