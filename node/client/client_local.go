package client

import (
	"sync"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
)

// Local work (docs/protocol.md §5.4 v3): assembling, decrypting and
// writing a fetched file never delays the client's next onion or query.
// The query path only copies a fetched chunk and queues it; one worker
// goroutine does the disk and crypto work, without the client's lock
// held, and publishes what the round loop needs (each job's missing ids)
// as a snapshot under the lock.

// localQueue is the client's queue of local work: unbounded, so that the
// query path never waits for the worker (it holds at most the chunks
// fetched meanwhile: k a round).
type localQueue struct {
	mu    sync.Mutex
	items []func()
	wake  chan struct{} // one pending wake-up
}

func (q *localQueue) push(f func()) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *localQueue) pop() func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	f := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return f
}

// localWorker runs the queued local work until the client stops.
func (c *Client) localWorker() {
	defer close(c.localDone)
	for {
		for f := c.local.pop(); f != nil; f = c.local.pop() {
			if c.ctx.Err() != nil {
				return
			}
			f()
		}
		select {
		case <-c.ctx.Done():
			return
		case <-c.local.wake:
		}
	}
}

// deliver hands a fetched chunk to the get jobs that need it: counted
// here, the work queued (data is copied: the answer buffer is recycled).
func (c *Client) deliver(id [32]byte, data []byte) {
	c.mu.Lock()
	c.stats.Fetched++
	delete(c.q.retry, id)
	c.noteHeld(id)
	c.mu.Unlock()
	buf := append([]byte(nil), data...)
	c.local.push(func() { c.assemble(id, buf) })
}

// assemble is deliver's local work, run by the worker: a fetched data
// chunk goes to the jobs that need it. A chunk from an answer never opens
// a job or adds a manifest node (§6.4 v3): those come from the synced
// index only (openFromIndex).
func (c *Client) assemble(id [32]byte, data []byte) {
	c.mu.Lock()
	type target struct {
		fid [32]byte
		g   *getJob
	}
	var ts []target
	for fid, g := range c.q.wants {
		if g.asm != nil && g.needs(id) {
			ts = append(ts, target{fid, g})
		}
	}
	c.mu.Unlock()
	for _, t := range ts {
		hooks.Local(&c.hk, "chunk")
		if err := t.g.asm.Add(chunker.ID(id), data); err == nil {
			c.refresh(t.fid, t.g)
		}
	}
}

// openFromIndex gives get job g what the synced index mans holds of its
// file (§6.4 v3): the root manifest, which opens the assembler, then every
// manifest node below it that the index has. A manifest the index lacks
// waits for a later sync, never for a PIR answer. Run by the worker.
func (c *Client) openFromIndex(g *getJob, mans map[[32]byte][]byte) {
	fid := g.link.ID
	c.mu.Lock()
	if g.cancelled || c.q.wants[fid] != g {
		c.mu.Unlock()
		return
	}
	asm := g.asm
	c.mu.Unlock()
	if asm == nil {
		root, ok := mans[fid]
		if !ok {
			return
		}
		hooks.Local(&c.hk, "manifest")
		var err error
		asm, err = chunker.NewAssembler(g.dir, g.link, root, chunker.AssembleOptions{Log: c.log})
		c.mu.Lock()
		if err == nil && g.cancelled {
			asm.Close()
			c.mu.Unlock()
			return
		}
		if err != nil {
			delete(c.q.wants, fid)
			g.err = err
			close(g.done)
			c.notify()
			c.mu.Unlock()
			return
		}
		g.asm, g.root = asm, false
		c.mu.Unlock()
	}
	// A node's children are known once the node is in: go down level by
	// level while the index has what is missing.
	got := [][32]byte{fid}
	for more := true; more; {
		more = false
		nodes, _ := asm.Missing()
		for _, id := range nodes {
			if b, ok := mans[[32]byte(id)]; ok && asm.Add(id, b) == nil {
				got = append(got, [32]byte(id))
				more = true
			}
		}
	}
	c.mu.Lock()
	for _, id := range got {
		c.noteHeld(id)
	}
	c.mu.Unlock()
	c.refresh(fid, g)
}

// refresh publishes g's missing data ids to the round loop and finishes
// the job when nothing is missing; run by the worker.
func (c *Client) refresh(fid [32]byte, g *getJob) {
	nodes, data := g.asm.Missing()
	var needed [][32]byte
	for _, n := range data {
		needed = append(needed, [32]byte(n))
	}
	c.mu.Lock()
	if g.cancelled {
		c.mu.Unlock()
		return
	}
	g.needed = needed
	if len(needed) != 0 || len(nodes) != 0 {
		c.mu.Unlock()
		return
	}
	delete(c.q.wants, fid)
	c.mu.Unlock()
	hooks.Local(&c.hk, "finish")
	path, err := g.asm.Finish()
	c.mu.Lock()
	g.path, g.err = path, err
	close(g.done)
	c.notify()
	c.mu.Unlock()
}

// needs reports whether id is among g's missing ids; call with c.mu held.
func (g *getJob) needs(id [32]byte) bool {
	for _, n := range g.needed {
		if n == id {
			return true
		}
	}
	return false
}

// maxHeld bounds the chunks a client remembers as held.
const maxHeld = 4096

// noteHeld remembers a chunk the client published or fetched, for local
// views (Holds); decoys never come from it (decoys.go). Call with c.mu
// held.
func (c *Client) noteHeld(id [32]byte) {
	if len(c.held) >= maxHeld {
		for old := range c.held { // map order: an arbitrary one goes
			delete(c.held, old)
			break
		}
	}
	c.held[id] = true
	hooks.NoteHeld(&c.hk, id)
}
