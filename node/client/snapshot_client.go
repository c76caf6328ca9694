package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/client/internal/jobdb"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// A client's snapshot for the local API and its share handles.

// ClientSnapshot is the client's Status and what a local view adds: the
// epoch's number and parameters, whether each required server is in the
// chain, and how many jobs wait.
type ClientSnapshot struct {
	ClientStatus
	Number uint64 // the epoch's number (§3), 0 between epochs
	K      int    // requests per round
	Rounds int    // R: rounds of the epoch
	// Pins are the servers the client requires, with whether the current
	// chain holds each.
	Pins []Pin
	// Queued is how many chunks of this client's shares wait to be
	// uploaded; Wanted how many files it is fetching.
	Queued, Wanted int
}

// Pin is a required server and whether the current chain holds it.
type Pin struct {
	PeerID  string
	InChain bool
}

// Snapshot returns the client's current state.
func (c *Client) Snapshot() ClientSnapshot {
	s := ClientSnapshot{ClientStatus: c.Status()}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Queued, s.Wanted = len(c.q.up), len(c.q.wants)
	if e := c.epoch; e != nil && hex.EncodeToString(e.v.ID[:]) == s.Epoch {
		p := e.v.Desc.Params
		s.Number, s.K, s.Rounds = e.v.Desc.Number, int(p.K), int(p.Rounds)
	}
	in := map[string]bool{}
	for _, m := range s.Chain {
		in[m.ID] = true
	}
	for _, r := range s.Require {
		s.Pins = append(s.Pins, Pin{PeerID: r, InChain: in[r]})
	}
	return s
}

// Holds reports, for each id, whether this client holds the chunk: it
// published or fetched it (of the last maxHeld such chunks).
func (c *Client) Holds(ids [][32]byte) []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]bool, len(ids))
	for i, id := range ids {
		out[i] = c.held[id]
	}
	return out
}

// GetStatus is how far a running get job is.
type GetStatus struct {
	Held, Total int    // data chunks held, of Total (0 while the root manifest is awaited)
	Name        string // the file's name once the root manifest is in
	// Chunks are the data chunk ids the root manifest lists, when it lists
	// them itself (a file small enough for one manifest chunk).
	Chunks []chunker.ID
}

// GetProgress reports how far the running get job of the file whose link
// has id is; ok is false when no get of that file runs.
func (c *Client) GetProgress(id chunker.ID) (st GetStatus, ok bool) {
	c.mu.Lock()
	g := c.q.wants[id]
	if g == nil {
		c.mu.Unlock()
		return GetStatus{}, false
	}
	asm := g.asm
	c.mu.Unlock()
	// Outside the client's lock: the assembler's own may be held by a
	// chunk being written.
	if asm != nil {
		st.Held, st.Total = asm.Progress()
		st.Name = asm.Name()
		if m := asm.Manifest(); m != nil && m.Depth == 0 {
			st.Chunks = append([]chunker.ID(nil), m.Chunks...)
		}
	}
	return st, true
}

// ShareHandle is a share job started by StartShare: its chunks are queued,
// one goes out per round, and Done closes once all are in published lists.
type ShareHandle struct {
	Link  chunker.Link
	Total int          // chunks to upload, data and manifest
	Bytes int64        // bytes read from the stream
	IDs   []chunker.ID // every chunk of the file, upload order
	b     int          // chunk size
	c     *Client
	job   *shareJob
}

// StartShare chunks r as a file named name and queues its chunks; it
// returns once r is read, and the caller follows the job with Left, Done
// and Cancel (Share is StartShare and a wait). It waits for an epoch first
// (the chunk size is the epoch's).
func (c *Client) StartShare(ctx context.Context, r io.Reader, name string, encrypt bool) (*ShareHandle, error) {
	b, err := c.chunkSizeWaiting(ctx, "share", name)
	if err != nil {
		return nil, err
	}
	job := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{}), name: name, b: b, private: encrypt, ep: newJobEpochs(&c.hk, maxEpochsOf(ctx))}
	h := &ShareHandle{b: b, c: c, job: job}
	var items []upItem
	cr := &countReader{r: r}
	var src io.Reader = cr
	opts := chunker.ShareOptions{Encrypt: encrypt, Rand: c.rand}
	var plain []byte
	var res jobdb.Resumable
	if encrypt {
		// Kept to encrypt the file again under a fresh key if a round
		// that carried part of it does not publish it (resend.go): the
		// queued chunks take as much memory. Read first: an interrupted
		// share of the same bytes resumes under the same key.
		if plain, err = io.ReadAll(cr); err != nil {
			return nil, err
		}
		src = bytes.NewReader(plain)
		res = jobdb.Find(c.db, jobdb.PrivateKey(plain, name, b), true)
		if res.Found {
			opts.Rand = bytes.NewReader(res.FileKey)
		}
	}
	mediaType := ""
	if strings.HasSuffix(name, chunker.TreeSuffix) {
		mediaType = chunker.TreeMediaType // a folder (chunker/tree.go)
	}
	link, err := chunker.Share(src, name, mediaType, b, opts, func(id chunker.ID, chunk []byte) error {
		if !job.left[id] {
			job.left[id] = true
			h.IDs = append(h.IDs, id)
			items = append(items, upItem{c: store.Chunk{ID: id, Data: append([]byte(nil), chunk...)}, job: job, manifest: proto.IsManifest(chunk)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !encrypt {
		res = jobdb.Find(c.db, link.ID, false)
	}
	// What went out in an interrupted run of this share is not queued
	// again (resume.go).
	items = c.resumeShare(ctx, job, &res, link, items)
	h.Link, h.Total, h.Bytes = link, len(h.IDs), cr.n
	c.mu.Lock()
	job.link, job.ids, job.total = link, h.IDs, len(h.IDs)
	if encrypt {
		job.plain = plain
	}
	c.q.up = append(c.q.up, items...)
	if len(job.left) == 0 {
		c.finishResumable(job)
		job.finish()
	}
	c.mu.Unlock()
	return h, nil
}

// resumed returns how many of the job's chunks went out in an earlier run.
func (h *ShareHandle) resumed() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.job.resumed
}

// unconfirmed returns how many of the job's chunks count as published
// without a signed list seen to show them.
func (h *ShareHandle) unconfirmed() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.job.unconfirmed
}

// Left returns how many of the job's chunks are not yet published.
func (h *ShareHandle) Left() int {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return len(h.job.left)
}

// Done is closed once every chunk of the job is in a published list or
// counts as published (Result tells which).
func (h *ShareHandle) Done() <-chan struct{} { return h.job.done }

// Result returns the job's link and chunk count as they stand (a private
// file encrypted again after a round that did not publish part of it has
// a new link and new chunks: §5.2 v3), the lines the user was shown about
// chunks counted as published without a record, and the job's error.
func (h *ShareHandle) Result() (chunker.Link, int, []string, error) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.job.link, h.job.total, append([]string(nil), h.job.warnings...), h.job.err
}

// Cancel withdraws the chunks of the job not yet sent and returns cause
// wrapped with what became of the file (published anyway or not).
func (h *ShareHandle) Cancel(cause error) error {
	link, total, _, _ := h.Result()
	c := h.c
	c.mu.Lock()
	dropped, rootDropped := c.q.withdraw(h.job, [32]byte(link.ID))
	c.mu.Unlock()
	// The root manifest sealed into an onion is sent and re-sent whatever
	// happens next (§5.1): then the file will be published.
	if rootDropped || total == 0 {
		return fmt.Errorf("%w: share withdrawn, %d of %d chunks had been sent; the file is not published, no link", cause, total-dropped, total)
	}
	return fmt.Errorf("%w: every chunk had been sent before the interrupt, so the file will be published as %s", cause, link)
}
