package client

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// Checkpoint syncs (docs/protocol.md §6.4 v3, "Checkpoints"): a get of a
// file published in the current epoch starts at a checkpoint of that
// epoch instead of the next epoch's start, without any request following
// from an answer of the epoch or from what this client learned when.
//
// Every client syncs the whole index at the same rounds of every epoch,
// whatever its user wants: for checkpoint q (every checkpointEvery rounds)
// it syncs from its primary once it holds the signed list of round
// q − lag + 1, and checks its copy against the manifests that the signed
// lists of rounds up to q − lag named (every chain server signed each
// list, so every client of the epoch holds the same ones: they are the
// head of the manifest log the get may use). A manifest the primary's copy
// lacks is asked of every other server of the chain at once. At q, when
// it holds round q − 1's list, the client hands its gets exactly those
// named manifests that it holds, never one named later, whenever it
// learned of it: two clients that want the same file start at the same
// checkpoint. A named manifest still missing at q is used at no later
// checkpoint of the epoch; it waits for the next epoch's start.
// The lag leaves the sync checkpointSyncTime at the pace: the primary's
// half, then every other server's.
//
// After the epoch's last list every client of the epoch checks its copy
// once more, the same way, against every manifest the epoch's lists
// named (endCheck): the last rounds' manifests, and those missing at a
// checkpoint, are then held by the next epoch's start, whose sync waits
// for this check. Which manifests a client checks is thus named by the
// lists of the epoch it is in, never by the epochs it attended before.

// cpState is an epoch's checkpoint syncs (cepoch.cp); guarded by c.mu.
type cpState struct {
	syncs  map[uint32]*cpSync  // by checkpoint round
	missed map[[32]byte]bool   // named, missing at a checkpoint: not before the next epoch
	used   map[[32]byte][]byte // the epoch's manifests handed to gets so far
	// gaps are the named manifests the primary's copy lacked after a
	// sync that went through, or another server gave after one that
	// stalled or failed; filled those of them another server gave.
	gaps, filled map[[32]byte]bool
}

// noteGaps records what a sync of the epoch found missing at the primary
// and which of those it then held; call with c.mu held.
func (cp *cpState) noteGaps(gaps [][32]byte, held map[[32]byte][]byte) {
	if cp.gaps == nil {
		cp.gaps, cp.filled = map[[32]byte]bool{}, map[[32]byte]bool{}
	}
	for _, id := range gaps {
		cp.gaps[id] = true
		if held[id] != nil {
			cp.filled[id] = true
		}
	}
}

// cpSync is one checkpoint's sync: the named ids it must bring and, once
// done, those it holds.
type cpSync struct {
	due  [][32]byte
	done chan struct{}
	held map[[32]byte][]byte
}

// checkpointRound runs what list r of epoch e starts or ends: the sync of
// the checkpoint q = r + lag − 1, whose manifests are those of the lists
// up to r − 1 (prevDue), and the checkpoint r + 1. Call with c.mu held.
func (e *cepoch) checkpointRound(ctx context.Context, r uint32, prevDue [][32]byte) {
	c := e.c
	p := e.v.Desc.Params
	lag := proto.CheckpointLag(p.RoundIntervalMs, uint32(p.W))
	for _, q := range proto.Checkpoints(p.Rounds, p.RoundIntervalMs, uint32(p.W)) {
		if r == q-lag+1 {
			// Holding list q − lag + 1: the servers have stored what
			// list q − lag named. Sync for q.
			s := &cpSync{due: prevDue, done: make(chan struct{})}
			if e.cp.syncs == nil {
				e.cp.syncs = map[uint32]*cpSync{}
			}
			e.cp.syncs[q] = s
			group := e.v.Desc.Group
			go func() {
				defer close(s.done)
				var gaps [][32]byte
				s.held, gaps = c.icopy.SyncNamed(ctx, group, s.due)
				c.mu.Lock()
				e.cp.noteGaps(gaps, s.held)
				c.mu.Unlock()
			}()
		}
		if r+1 == q {
			e.applyCheckpoint(q)
		}
	}
}

// applyCheckpoint hands the gets the manifests checkpoint q brought; call
// with c.mu held.
func (e *cepoch) applyCheckpoint(q uint32) {
	c := e.c
	s := e.cp.syncs[q]
	if s == nil {
		return
	}
	delete(e.cp.syncs, q)
	var held map[[32]byte][]byte
	select {
	case <-s.done:
		held = s.held
	default:
		// Not done in its time: every named manifest waits for the next
		// epoch.
	}
	if e.cp.missed == nil {
		e.cp.missed, e.cp.used = map[[32]byte]bool{}, map[[32]byte][]byte{}
	}
	added := 0
	for _, id := range s.due {
		if e.cp.missed[id] || e.cp.used[id] != nil {
			continue
		}
		b, ok := held[id]
		if !ok {
			e.cp.missed[id] = true
			continue
		}
		e.cp.used[id] = b
		added++
	}
	c.stats.Checkpoints++
	c.stats.CheckpointMissed = len(e.cp.missed)
	if added == 0 {
		return
	}
	mans := maps.Clone(c.idx.manifests)
	if mans == nil {
		mans = map[[32]byte][]byte{}
	}
	maps.Copy(mans, e.cp.used)
	c.idx.manifests = mans
	var gets []*getJob
	for _, g := range c.q.wants {
		gets = append(gets, g)
	}
	c.notify()
	c.local.push(func() {
		for _, g := range gets {
			c.openFromIndex(g, mans)
		}
	})
}

// startEndCheck runs epoch e's end check in the background: the client
// goes on to the next epoch meanwhile, and that epoch's sync waits for
// it (c.tail).
func (e *cepoch) startEndCheck(ctx context.Context) {
	c := e.c
	done := make(chan struct{})
	c.mu.Lock()
	c.tail = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		e.endCheck(ctx)
	}()
}

// endCheck is the sync after epoch e's last list: proto.CheckpointSlack
// on, when the servers have stored what that list named (they store a
// round's manifests as they note them in its list), it checks the copy
// against every manifest the epoch's lists named, as a checkpoint does,
// and tells the user of the gaps the epoch's syncs found at the primary.
// The wait does not grow with the pace: at a slow one, a round's wait
// would hold the next epoch's sync, and so its first onions, back.
func (e *cepoch) endCheck(ctx context.Context) {
	c := e.c
	select {
	case <-time.After(proto.CheckpointSlack):
	case <-ctx.Done():
		return
	}
	c.mu.Lock()
	due := slices.Clone(e.manifestIDs)
	c.mu.Unlock()
	held, gaps := c.icopy.SyncNamed(ctx, e.v.Desc.Group, due)
	c.mu.Lock()
	e.cp.noteGaps(gaps, held)
	ng, nf := len(e.cp.gaps), len(e.cp.filled)
	c.stats.IndexGaps += ng
	c.stats.IndexFilled += nf
	c.mu.Unlock()
	if ng > 0 {
		c.progress("warning: the index synced from the primary lacks %d manifests that this epoch's signed request lists name (left out, or its sync stalled: the primary may be testing which files this client wants); %d of them synced from the chain's other servers", ng, nf)
	}
}
