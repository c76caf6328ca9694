package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
	"github.com/riffle-net/riffle/store"
)

// ClientConfig configures a client.
type ClientConfig struct {
	Server  string    // the primary's multiaddr, with /p2p/<peer id>
	Require []peer.ID // servers that must be in the chain besides the primary
	// MinAnonymity holds share and get jobs (the client sends cover, as
	// always) in epochs with fewer clients (0: no minimum).
	MinAnonymity int
	// DataDir holds the client DB of sealed onions (optional: without it
	// they are kept in memory only).
	DataDir string
	Logger  *slog.Logger
	// Progress receives human-readable progress lines (nil: none).
	Progress io.Writer
	Rand     io.Reader
	// OnSend, if set, is called with the type of every request the client
	// sends and the bytes written to its stream (the wire-size equality
	// test records them).
	OnSend func(t wire.Type, size int)
}

// Client is a riffle client: it takes part in every epoch through its
// primary, sending one onion and k queries every round (cover when idle),
// and carries share and get jobs.
type Client struct {
	cfg     ClientConfig
	db      *store.ClientDB
	log     *slog.Logger
	rand    io.Reader
	h       host.Host
	primary peer.ID
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	mu       sync.Mutex
	changed  chan struct{}
	epoch    *cepoch
	anon     int
	b        int // chunk size of the current epoch
	upQ      []upItem
	wants    map[[32]byte]*getJob
	inflight map[[32]byte]bool
	failed   map[[32]byte]bool
	// retry holds ids whose answer was corrupted in an earlier epoch; they
	// go out only in the background stream of re-requests (§6.3), never
	// as a burst. held is what that stream re-requests otherwise: chunks
	// this client fetched or published (at most maxHeld).
	retry map[[32]byte]bool
	held  map[[32]byte]bool
	stats Stats
	index []wire.IndexEntry // synced once per epoch
	// For Status: when the current epoch began, the round count then,
	// and why no epoch runs (control_status.go).
	epochAt      time.Time
	epochRounds0 int
	waiting      string
}

// Stats counts what a client did.
type Stats struct {
	Epochs, Rounds    int
	Uploaded, Fetched int
	BadAnswers        int
}

type upItem struct {
	c   StoredChunk
	job *shareJob
}

type shareJob struct {
	left map[[32]byte]bool
	done chan struct{}
}

type getJob struct {
	asm  *chunker.Assembler
	link chunker.Link
	dir  string
	root bool // waiting for the root manifest
	done chan struct{}
	path string
	err  error
}

// cepoch is a client's state of one epoch.
type cepoch struct {
	v      *view
	slot   uint32
	regKey ed25519.PrivateKey
	cs     *mix.ClientSecret
	others []*pir.Keys // non-primaries' keys, chain order without the primary
	pidx   int
	reqs   map[uint32][][32]byte
	ups    map[uint32]*upItem
	onions map[uint32][]byte // sealed once, kept to resend (§5.1)
	marked bool              // the pending-epoch marker names this epoch

	// Buffers recycled round after round: the payload (free once sealed;
	// cleared at the epoch's end, it holds the requests) and the onions'
	// buffers (free once their round's list is in).
	payloadBuf []byte
	onionBufs  map[uint32][]byte
	freeOnions [][]byte
	// answerBufs holds free buffers for PIR answers (queries run
	// concurrently, at most queriesInFlight of them).
	answerBufs chan []byte
}

// onionDone recycles the buffer of round r's onion: the round is over.
func (e *cepoch) onionDone(r uint32) {
	delete(e.onions, r)
	if buf, ok := e.onionBufs[r]; ok {
		delete(e.onionBufs, r)
		e.freeOnions = append(e.freeOnions, buf)
	}
}

// onionScratch returns a free onion buffer, or nil.
func (e *cepoch) onionScratch() []byte {
	if len(e.freeOnions) == 0 {
		return nil
	}
	buf := e.freeOnions[len(e.freeOnions)-1]
	e.freeOnions = e.freeOnions[:len(e.freeOnions)-1]
	return buf
}

// NewClient connects to the primary and starts taking part in epochs.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	a, err := ma.NewMultiaddr(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("node: server address %q: %w", cfg.Server, err)
	}
	ai, err := peer.AddrInfoFromP2pAddr(a)
	if err != nil {
		return nil, fmt.Errorf("node: server address %q needs /p2p/<peer id>: %w", cfg.Server, err)
	}
	log := cfg.Logger
	if log == nil {
		log = quietLogger()
	}
	rnd := cfg.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	// A client's libp2p identity is fresh per process: nothing links its
	// connections across runs.
	h, err := newHost(nil, nil)
	if err != nil {
		return nil, err
	}
	h.Peerstore().AddAddrs(ai.ID, ai.Addrs, time.Hour)
	cctx, cancel := context.WithCancel(ctx)
	c := &Client{cfg: cfg, log: log, rand: rnd, h: h, primary: ai.ID, ctx: cctx, cancel: cancel, done: make(chan struct{}),
		changed: make(chan struct{}), wants: map[[32]byte]*getJob{}, inflight: map[[32]byte]bool{}, failed: map[[32]byte]bool{},
		retry: map[[32]byte]bool{}, held: map[[32]byte]bool{}}
	if err := h.Connect(cctx, *ai); err != nil {
		h.Close()
		cancel()
		return nil, fmt.Errorf("node: connect to %s: %w", cfg.Server, err)
	}
	c.openClientDB()
	go c.run()
	return c, nil
}

// Close leaves the network (the cover window keeps the slot filled, §5.4).
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	var err error
	if c.db != nil {
		err = c.db.Close()
	}
	return errors.Join(c.h.Close(), err)
}

// AnonymitySet returns the number of clients of the current epoch.
func (c *Client) AnonymitySet() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.anon
}

// Stats returns counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Client) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) progress(format string, args ...any) {
	if c.cfg.Progress != nil {
		fmt.Fprintf(c.cfg.Progress, format+"\n", args...)
	}
}

// progressKey carries a job's own progress sink in its context: the
// control socket sends a handed-off job's lines to the command that asked
// for it, not to the daemon's stderr.
type progressKey struct{}

// WithProgress returns ctx with the progress lines of the share or get job
// run under it going to fn (one line per call, no newline): in this
// process, or from a running client through its control socket.
func WithProgress(ctx context.Context, fn func(line string)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressOf(ctx context.Context) func(string) {
	fn, _ := ctx.Value(progressKey{}).(func(string))
	return fn
}

// jobProgress prints a job's progress line to its own sink if ctx has one,
// else where the client's progress goes.
func (c *Client) jobProgress(ctx context.Context, format string, args ...any) {
	if fn := progressOf(ctx); fn != nil {
		fn(fmt.Sprintf(format, args...))
		return
	}
	c.progress(format, args...)
}

func (c *Client) call(ctx context.Context, proto protocol.ID, t wire.Type, body []byte, want wire.Type, max int, timeout time.Duration) ([]byte, error) {
	return c.callSegments(ctx, proto, t, [][]byte{body}, want, max, timeout)
}

func (c *Client) callSegments(ctx context.Context, proto protocol.ID, t wire.Type, body [][]byte, want wire.Type, max int, timeout time.Duration) ([]byte, error) {
	return callInto(ctx, c.h, c.primary, proto, t, body, want, max, timeout, c.cfg.OnSend, nil)
}

func (c *Client) run() {
	defer close(c.done)
	c.resendPending(c.ctx)
	var last [32]byte
	for c.ctx.Err() == nil {
		id, err := c.oneEpoch(last)
		if id != ([32]byte{}) {
			last = id
		}
		if err != nil && c.ctx.Err() == nil {
			c.log.Info("epoch left", "err", err)
			c.noteWait(waitLine(err))
			select {
			case <-c.ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// oneEpoch joins the next epoch and takes part until it ends.
func (c *Client) oneEpoch(last [32]byte) ([32]byte, error) {
	ctx := c.ctx
	rep, err := c.call(ctx, ProtoClient, wire.TypeWaitOpen, (&wire.EpochRef{Epoch: last}).Marshal(), wire.TypeSigned, 256<<20, pollTimeout)
	if err != nil {
		return last, err
	}
	var open wire.Signed
	if err := open.Unmarshal(rep, genericLimits()); err != nil {
		return last, err
	}
	v, err := checkSigned(&open, 1e30)
	if err != nil || open.Final {
		return last, fmt.Errorf("node: open descriptor: %v", err)
	}
	pidx := -1
	for i, p := range v.chain {
		if p == c.primary {
			pidx = i
		}
	}
	if pidx < 0 {
		return v.id, errors.New("node: epoch refused: the primary is not in its chain")
	}
	for _, r := range c.cfg.Require {
		found := false
		for _, p := range v.chain {
			found = found || p == r
		}
		if !found {
			return v.id, fmt.Errorf("node: epoch refused: required server %s not in the chain", r.String())
		}
	}
	pub, priv, err := ed25519.GenerateKey(c.rand)
	if err != nil {
		return v.id, err
	}
	cs, reg, err := mix.Register(mix.EpochID(v.id), pub, v.serverKeys, c.rand)
	if err != nil {
		return v.id, err
	}
	defer cs.Close()
	raw, err := reg.MarshalBinary()
	if err != nil {
		return v.id, err
	}
	msg := wire.Register{Epoch: v.id, XKey: reg.PIRKey, Reg: raw}
	copy(msg.RegKey[:], pub)
	dg := registerDigest(&msg)
	copy(msg.Sig[:], ed25519.Sign(priv, dg[:]))
	rep, err = c.call(ctx, ProtoClient, wire.TypeRegister, msg.Marshal(), wire.TypeSigned, 256<<20, pollTimeout)
	if err != nil {
		return v.id, err
	}
	var fin wire.Signed
	if err := fin.Unmarshal(rep, genericLimits()); err != nil {
		return v.id, err
	}
	fv, err := checkSigned(&fin, 1e30)
	if err != nil || !fin.Final || fv.id != v.id {
		return v.id, fmt.Errorf("node: final descriptor: %v", err)
	}
	slot := -1
	for i, ce := range fin.Desc.Clients {
		if bytes.Equal(ce.RegKey[:], pub) {
			slot = i
		}
	}
	if slot < 0 || int(fin.Desc.Clients[slot].Primary) != pidx {
		return v.id, errors.New("node: this client is not in the final descriptor under its primary")
	}
	pk, err := cs.PIRKey()
	if err != nil {
		return v.id, err
	}
	e := &cepoch{v: fv, slot: uint32(slot), regKey: priv, cs: cs, pidx: pidx, reqs: map[uint32][][32]byte{}, ups: map[uint32]*upItem{}, onions: map[uint32][]byte{},
		answerBufs: make(chan []byte, queriesInFlight)}
	for j := range fv.chain {
		if j == pidx {
			continue
		}
		k, err := pir.ClientKeys(pk, fv.id, fv.D[j])
		if err != nil {
			return v.id, err
		}
		e.others = append(e.others, k)
	}
	defer func() {
		for _, k := range e.others {
			k.Close()
		}
		clear(priv)
		clear(e.payloadBuf)
	}()
	n := len(fin.Desc.Clients)
	c.mu.Lock()
	c.epoch, c.anon, c.b = e, n, int(fin.Desc.Params.ChunkSize)
	c.stats.Epochs++
	c.noteEpoch()
	c.notify()
	c.mu.Unlock()
	names := ""
	for i, g := range fin.Desc.Group {
		names += fmt.Sprintf(" %s(%s)", string(g.Nick), fv.chain[i].String())
	}
	c.progress("epoch %x: %d servers [%s ], anonymity set %d clients", fv.id[:4], len(fv.chain), names, n)
	// §7: every client syncs the whole public index once per epoch, on a
	// fixed schedule that says nothing about what interests it.
	if idx, err := c.Index(ctx); err == nil {
		c.mu.Lock()
		c.index = idx
		c.mu.Unlock()
	}
	err = c.rounds(ctx, e)
	if ctx.Err() == nil {
		// A clean end (not a crash or a Close mid-epoch, after which the
		// stored submissions are sent again at the next start).
		c.dropSubmissions(fv.id)
	}
	c.mu.Lock()
	c.epoch = nil
	// Requests in flight are forgotten; failed ids may be asked again in a
	// later epoch (§6.3).
	clear(c.inflight)
	for id := range c.failed {
		c.retry[id] = true
	}
	clear(c.failed)
	for _, u := range e.ups {
		if u != nil && u.job != nil && u.job.left[u.c.ID] {
			c.upQ = append([]upItem{*u}, c.upQ...)
		}
	}
	c.mu.Unlock()
	return v.id, err
}

// rounds runs the client's side of §5 and §6 for one epoch. Round r's
// PIR query runs while the client waits for round r+1's list, so that the
// onion of round r+1+W goes out as soon as that list is final and the
// chain always holds W rounds: every client does the same whatever its
// user does, so the timing says nothing about anyone.
func (c *Client) rounds(ctx context.Context, e *cepoch) error {
	p := e.v.desc.Params
	R, W := p.Rounds, uint32(p.W)
	for r := uint32(0); r < min(W, R); r++ {
		if err := c.submit(ctx, e, r); err != nil {
			return err
		}
	}
	// On an early return the queries in flight are cancelled first, then
	// waited for (deferred calls run last to first).
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// At most queriesInFlight rounds' queries at once: a slow primary
	// holds the client back instead of piling up requests.
	sem := make(chan struct{}, queriesInFlight)
	for r := uint32(0); r < R; r++ {
		rep, err := c.call(ctx, ProtoClient, wire.TypeWaitList, (&wire.EpochRef{Epoch: e.v.id, Round: r}).Marshal(), wire.TypeRoundList, 64<<20, pollTimeout)
		if err != nil {
			// Typically the epoch's end: the queries of the rounds that
			// did run still get their answers (the server bounds the wait).
			wg.Wait()
			return queryErr(ctx, err)
		}
		var rl wire.RoundList
		if err := rl.Unmarshal(rep, e.v.lim); err != nil {
			return err
		}
		if rl.Round != r {
			return fmt.Errorf("node: list of round %d for round %d", rl.Round, r)
		}
		if err := checkList(e.v, &rl); err != nil {
			return err
		}
		c.confirm(e, r, &rl)
		// Round r is over: its onion is never sent again (the stored copy
		// for a crash is dropped with the epoch).
		e.onionDone(r)
		if r+W < R {
			if err := c.submit(ctx, e, r+W); err != nil {
				return queryErr(ctx, err)
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return queryErr(ctx, ctx.Err())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.query(ctx, e, r, &rl); err != nil {
				cancel(err)
				return
			}
			c.mu.Lock()
			c.stats.Rounds++
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	return queryErr(ctx, nil)
}

// queriesInFlight bounds the rounds whose PIR queries a client has
// outstanding at once.
const queriesInFlight = 2

// queryErr returns the error that ended a round's query (the cause of
// ctx's cancellation), else err.
func queryErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// confirm checks that round r's upload was published; if not, it goes
// back into the queue.
func (c *Client) confirm(e *cepoch, r uint32, rl *wire.RoundList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := e.ups[r]
	if u == nil {
		return
	}
	delete(e.ups, r)
	for _, id := range rl.Published {
		if id == u.c.ID {
			c.stats.Uploaded++
			c.noteHeld(id)
			if u.job != nil && u.job.left[id] {
				delete(u.job.left, id)
				if len(u.job.left) == 0 {
					close(u.job.done)
				}
			}
			c.notify()
			return
		}
	}
	c.upQ = append([]upItem{*u}, c.upQ...)
}

// submit seals and sends the onion of round r (§5.1): the next queued
// chunk or cover, and up to k requests.
func (c *Client) submit(ctx context.Context, e *cepoch, r uint32) error {
	p := e.v.desc.Params
	b, k := int(p.ChunkSize), int(p.K)
	onion := e.onions[r]
	if onion == nil {
		pl := &mix.Payload{Kind: mix.KindCover, Requests: make([][32]byte, k)}
		c.mu.Lock()
		hold := c.holdJobs()
		if len(c.upQ) > 0 && !hold {
			u := c.upQ[0]
			c.upQ = c.upQ[1:]
			e.ups[r] = &u
			pl.Kind, pl.Length, pl.Chunk = mix.KindChunk, uint32(len(u.c.Data)), u.c.Data
		}
		var reqs [][32]byte
		for id, g := range c.wants {
			if len(reqs) == k || hold {
				break
			}
			if g.root && !c.inflight[id] && !c.failed[id] && !c.retry[id] {
				reqs = append(reqs, id)
			}
		}
		if !hold {
			reqs = append(reqs, c.neededIDs(k-len(reqs))...)
		}
		reqs = c.backgroundRequests(reqs, k)
		for i, id := range reqs {
			pl.Requests[i] = id
			c.inflight[id] = true
		}
		e.reqs[r] = reqs
		c.mu.Unlock()
		raw, err := mix.EncodePayloadInto(e.payloadBuf, pl, b, k, mix.EpochID(e.v.id), uint64(r), e.cs, c.rand)
		if err != nil {
			return err
		}
		e.payloadBuf = raw
		keys, err := e.cs.LayerKeys(mix.EpochID(e.v.id), uint64(r), e.v.Y, e.v.Yp)
		if err != nil {
			return err
		}
		var buf []byte
		onion, buf, err = mix.SealInto(e.onionScratch(), mix.EpochID(e.v.id), uint64(r), keys, raw)
		mix.CloseLayerKeys(keys)
		if err != nil {
			return err
		}
		if e.onionBufs == nil {
			e.onionBufs = map[uint32][]byte{}
		}
		e.onionBufs[r] = buf
		// Sealed once and kept: a resend after an error sends these bytes
		// again, never a second sealing (§5.1 v2).
		e.onions[r] = onion
	}
	sub := wire.Submit{Epoch: e.v.id, Round: r, Slot: e.slot, Onion: onion}
	copy(sub.Sig[:], mix.SignSubmission(e.regKey, mix.EpochID(e.v.id), uint64(r), e.slot, onion))
	if err := c.keepSubmission(e, &sub); err != nil {
		return fmt.Errorf("node: store onion of round %d before sending: %w", r, err)
	}
	var err error
	for try := 0; try < 3; try++ {
		if _, err = c.callSegments(ctx, ProtoClient, wire.TypeSubmit, sub.Segments(), wire.TypeAck, 16, bulkTimeout); err == nil {
			return nil
		}
	}
	return err
}

// decoyOneIn sets the background rate of re-requests (§6.3): each request
// slot that a round leaves empty carries, with probability 1/decoyOneIn, a
// re-request of a chunk the client already holds, or of one whose answer
// was corrupted in an earlier epoch. Every client draws the same way
// whatever it does, so a re-request after a corrupted answer is one of a
// stream that never stops. The rate costs the servers about n·k/decoyOneIn
// more rows a round.
const decoyOneIn = 16

// maxHeld bounds the ids a client remembers for its re-requests.
const maxHeld = 4096

// noteHeld remembers a chunk the client holds; call with c.mu held.
func (c *Client) noteHeld(id [32]byte) {
	if len(c.held) >= maxHeld {
		for old := range c.held { // map order: an arbitrary one goes
			delete(c.held, old)
			break
		}
	}
	c.held[id] = true
}

// backgroundRequests fills the empty slots of a round's k requests from
// the background stream; call with c.mu held.
func (c *Client) backgroundRequests(reqs [][32]byte, k int) [][32]byte {
	used := map[[32]byte]bool{}
	for _, id := range reqs {
		used[id] = true
	}
	for slot := len(reqs); slot < k; slot++ {
		var coin [2]byte
		if _, err := io.ReadFull(c.rand, coin[:]); err != nil || binary.BigEndian.Uint16(coin[:])%decoyOneIn != 0 {
			continue
		}
		id, ok := c.pickRerequest(used)
		if !ok {
			continue
		}
		used[id] = true
		reqs = append(reqs, id)
	}
	return reqs
}

// pickRerequest takes a retry id if there is one, else a random held
// chunk not in used; call with c.mu held.
func (c *Client) pickRerequest(used map[[32]byte]bool) ([32]byte, bool) {
	for id := range c.retry {
		if !used[id] && !c.inflight[id] {
			delete(c.retry, id)
			return id, true
		}
	}
	var cands [][32]byte
	for id := range c.held {
		if !used[id] && !c.inflight[id] {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return [32]byte{}, false
	}
	var r [4]byte
	if _, err := io.ReadFull(c.rand, r[:]); err != nil {
		return [32]byte{}, false
	}
	return cands[binary.BigEndian.Uint32(r[:])%uint32(len(cands))], true
}

// neededIDs returns up to n ids that get jobs need and that are neither in
// flight nor failed in this epoch; call with c.mu held.
func (c *Client) neededIDs(n int) [][32]byte {
	var out [][32]byte
	seen := map[[32]byte]bool{}
	for _, g := range c.wants {
		if len(out) >= n {
			break
		}
		if g.asm == nil {
			continue
		}
		for _, id := range g.asm.Needed() {
			if len(out) >= n {
				break
			}
			if !c.inflight[id] && !c.failed[id] && !c.retry[id] && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// query sends the k masks of round r and checks the k answers (§6.1, §6.3).
func (c *Client) query(ctx context.Context, e *cepoch, r uint32, rl *wire.RoundList) error {
	_, k := int(e.v.desc.Params.ChunkSize), int(e.v.desc.Params.K)
	L := max(1, len(rl.Entries))
	c.mu.Lock()
	reqs := e.reqs[r]
	delete(e.reqs, r)
	c.mu.Unlock()
	rows := make([]int, k)
	q := wire.Rows{Epoch: e.v.id, Round: r, Slots: []uint32{e.slot}}
	for t := 0; t < k; t++ {
		rows[t] = -1
		if t < len(reqs) {
			for i, le := range rl.Entries {
				if le.ID == reqs[t] {
					rows[t] = i
				}
			}
		}
		if rows[t] < 0 {
			cr, err := pir.CoverRow(c.rand, L)
			if err != nil {
				return err
			}
			rows[t] = cr
		}
		mk, err := pir.Query(e.others, uint64(r), uint32(t), L, rows[t])
		if err != nil {
			return err
		}
		q.Rows = append(q.Rows, mk)
	}
	// The answer's buffer goes back to the epoch's free list when this
	// round is done with it: delivered chunks are written out or decoded
	// into copies, never kept.
	var buf []byte
	alloc := func(n int) []byte {
		select {
		case buf = <-e.answerBufs:
		default:
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		return buf[:n]
	}
	defer func() {
		if buf != nil {
			select {
			case e.answerBufs <- buf:
			default:
			}
		}
	}()
	rep, err := callInto(ctx, c.h, c.primary, ProtoPIR, wire.TypeQuery, [][]byte{q.Marshal()}, wire.TypeAnswer, 64+k*(8+int(e.v.desc.Params.ChunkSize)), pollTimeout, c.cfg.OnSend, alloc)
	c.mu.Lock()
	for _, id := range reqs {
		delete(c.inflight, id)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	var ans wire.Rows
	if err := ans.Unmarshal(rep, 1, k, int(e.v.desc.Params.ChunkSize)); err != nil {
		return err
	}
	for t := 0; t < k; t++ {
		row := ans.Rows[t]
		if len(row) != int(e.v.desc.Params.ChunkSize) {
			return fmt.Errorf("node: answer of %d bytes", len(row))
		}
		pir.Unpad(e.others, uint64(r), uint32(t), row)
		if len(rl.Entries) == 0 {
			continue
		}
		le := rl.Entries[rows[t]]
		// The whole row of every answer, real or cover (§6.3 v2).
		if err := pir.CheckRow(row, le.ID, int(le.Len)); err != nil {
			c.mu.Lock()
			c.stats.BadAnswers++
			if t < len(reqs) && reqs[t] == le.ID {
				c.failed[le.ID] = true
			}
			c.mu.Unlock()
			c.progress("warning: a server corrupted a PIR answer in round %d (nothing is reported; the chunk is asked again in a later epoch)", r)
			continue
		}
		if t < len(reqs) && reqs[t] == le.ID {
			c.deliver(le.ID, row[:le.Len])
		}
	}
	return nil
}

// deliver hands a fetched chunk to the get jobs that need it.
func (c *Client) deliver(id [32]byte, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Fetched++
	c.noteHeld(id)
	if g := c.wants[id]; g != nil && g.root {
		delete(c.wants, id)
		asm, err := chunker.NewAssembler(g.dir, g.link, data, chunker.AssembleOptions{Log: c.log})
		if err != nil {
			g.err = err
			close(g.done)
			c.notify()
			return
		}
		g.asm, g.root = asm, false
		c.wants[id] = g // keyed by file id from now on
		c.checkDone(id, g)
		return
	}
	for fid, g := range c.wants {
		if g.asm == nil {
			continue
		}
		if err := g.asm.Add(chunker.ID(id), data); err == nil {
			c.checkDone(fid, g)
		}
	}
}

func (c *Client) checkDone(fid [32]byte, g *getJob) {
	if len(g.asm.Needed()) != 0 {
		return
	}
	g.path, g.err = g.asm.Finish()
	delete(c.wants, fid)
	close(g.done)
	c.notify()
}

// ChunkSize waits for an epoch and returns its chunk size b.
func (c *Client) ChunkSize(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		b, ch := c.b, c.changed
		c.mu.Unlock()
		if b > 0 {
			return b, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Share uploads the stream r as a file named name, one chunk per round,
// and returns its link once every chunk is in a published list.
func (c *Client) Share(ctx context.Context, r io.Reader, name string, encrypt bool) (chunker.Link, error) {
	b, err := c.chunkSizeWaiting(ctx, "share "+name)
	if err != nil {
		return chunker.Link{}, err
	}
	job := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{})}
	var items []upItem
	cr := &countReader{r: r}
	link, err := chunker.Share(cr, name, "", b, chunker.ShareOptions{Encrypt: encrypt, Rand: c.rand}, func(id chunker.ID, chunk []byte) error {
		if !job.left[id] {
			job.left[id] = true
			items = append(items, upItem{c: StoredChunk{ID: id, Data: append([]byte(nil), chunk...)}, job: job})
		}
		return nil
	})
	if err != nil {
		return link, err
	}
	total := len(items)
	c.mu.Lock()
	c.upQ = append(c.upQ, items...)
	c.mu.Unlock()
	start := time.Now()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-job.done:
			c.jobProgress(ctx, "shared %s: %d bytes in %d uploads (data and manifest chunks), %s", name, cr.n, total, time.Since(start).Round(time.Millisecond))
			return link, nil
		case <-ctx.Done():
			return link, c.cancelShare(job, link, total, ctx.Err())
		case <-t.C:
			if why := c.waitReason(); why != "" {
				c.jobProgress(ctx, "share %s: %s", name, why)
				continue
			}
			c.mu.Lock()
			left := len(job.left)
			rounds := c.stats.Rounds
			c.mu.Unlock()
			c.jobProgress(ctx, "share %s: %s", name, progressLine(total-left, total, rounds, b, time.Since(start)))
		}
	}
}

// progressLine says how far a job of total chunks of b bytes is after el:
// chunks, round, rate and the time left at that rate.
func progressLine(done, total, round, b int, el time.Duration) string {
	eta := "?"
	if done > 0 {
		eta = (el / time.Duration(done) * time.Duration(total-done)).Round(time.Second).String()
	}
	return fmt.Sprintf("%d/%d chunks, round %d, %.1f KiB/s, eta %s", done, total, round, float64(done*b)/1024/el.Seconds(), eta)
}

// Get fetches the file of link into dir and returns its path. A partial
// download in dir is resumed (the chunker verifies what is on disk).
func (c *Client) Get(ctx context.Context, link chunker.Link, dir string) (string, error) {
	g := &getJob{link: link, dir: dir, root: true, done: make(chan struct{})}
	c.mu.Lock()
	c.wants[link.ID] = g
	c.mu.Unlock()
	start := time.Now()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			if g.err == nil {
				c.jobProgress(ctx, "fetched %s in %s", filepath.Base(g.path), time.Since(start).Round(time.Millisecond))
			}
			return g.path, g.err
		case <-t.C:
			c.mu.Lock()
			held, total, rounds, b, name := 0, 0, c.stats.Rounds, c.b, ""
			if g.asm != nil {
				held, total = g.asm.Progress()
				name = g.asm.Name()
			}
			c.mu.Unlock()
			if total == 0 {
				if why := c.waitReason(); why != "" {
					c.jobProgress(ctx, "get %s: %s", link.ID, why)
				} else if why := c.notIndexed(link.ID); why != "" {
					c.jobProgress(ctx, "get: %s", why)
				} else {
					c.jobProgress(ctx, "get %s: waiting for the manifest, round %d", link.ID, rounds)
				}
				continue
			}
			c.jobProgress(ctx, "get %s: %s", name, progressLine(held, total, rounds, b, time.Since(start)))
		case <-ctx.Done():
			c.mu.Lock()
			if c.wants[link.ID] == g {
				delete(c.wants, link.ID)
			}
			if g.asm != nil {
				// The partial file stays: a later Get into the same
				// directory verifies it and fetches only what is missing.
				g.asm.Close()
			}
			c.mu.Unlock()
			return "", ctx.Err()
		}
	}
}

// Index fetches the whole public index from the primary (§7: always all of
// it, never per-file look-ups).
func (c *Client) Index(ctx context.Context) ([]wire.IndexEntry, error) {
	rep, err := c.call(ctx, ProtoClient, wire.TypeIndexReq, nil, wire.TypeIndex, 256<<20, shortTimeout)
	if err != nil {
		return nil, err
	}
	var idx wire.Index
	if err := idx.Unmarshal(rep, 1<<20); err != nil {
		return nil, err
	}
	return idx.Entries, nil
}

var _ network.Stream

// SyncedIndex returns the public index as synced at the start of the
// current epoch (§7), for local search without any look-up.
func (c *Client) SyncedIndex() []wire.IndexEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.IndexEntry(nil), c.index...)
}
