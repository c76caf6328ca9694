package client

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/client/internal/indexsync"
	"github.com/riffle-net/riffle/node/client/internal/meter"
	"github.com/riffle-net/riffle/node/client/internal/netdir"
	"github.com/riffle-net/riffle/node/client/internal/presence"
	"github.com/riffle-net/riffle/node/client/internal/status"
	"github.com/riffle-net/riffle/node/client/internal/waitline"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
	"github.com/riffle-net/riffle/store"
)

// ClientConfig configures a client.
type ClientConfig struct {
	Server  string    // the primary's multiaddr, with /p2p/<peer id>
	Require []peer.ID // servers that must be in the chain besides the primary
	// DataDir holds the client DB of sealed onions and the long-term key
	// (optional: without it they are kept in memory only, and the client
	// is a first-time client at every start).
	DataDir string
	// LongTermKey, if set, is the client's long-term key instead of the
	// one of DataDir (tests: one key across clients and runs).
	LongTermKey *proto.LongTermKey
	Logger      *slog.Logger
	// Progress receives human-readable progress lines (nil: none).
	Progress io.Writer
	// Notices receives the few lines the user must see even without
	// progress, such as a data directory moved to another network's
	// state (netbind.go); nil: Progress.
	Notices io.Writer
	Rand    io.Reader
	// OnSend, if set, is called with the type of every request the client
	// sends and the bytes written to its stream (the wire-size equality
	// test records them).
	OnSend func(msgType uint8, size int)

	// MinAnonymity is the smallest anonymity set in which the client
	// carries its jobs (§3 v3), counted over the clients registered
	// through servers it trusts (its primary and the required servers);
	// in a smaller epoch it sends cover only. 0 means DefaultMinAnonymity.
	MinAnonymity int
	// AcceptBudgetDrops lets the client take an epoch whose chain dropped
	// a server of its previous chain for that server's refusal budget
	// (§3 "Who may serve", client_budget.go); without it the client
	// refuses such an epoch, says why and waits.
	AcceptBudgetDrops bool
	// MaxRate, if not zero, is the most bytes a second, each way, the
	// client agrees to move: it refuses a group whose constants allow more
	// (GroupCost's worst case), checked once per group, never per epoch,
	// and stops with ErrOverBudget (internal/meter).
	MaxRate float64
	// Now starts jobs at once instead of after the presence wait of §5.4
	// (PresenceMin to PresenceMax full epochs from arrival): what a
	// one-shot `--now` does, and tests. It reveals when a job ran.
	Now bool
	// Network carries the client's streams (nil: libp2p).
	Network transport.Network
	// Timing holds the client's timeouts (zero fields: DefaultTunables;
	// for tests and embedders).
	Timing proto.Tunables

	// The tests' hooks (internal/hooks); empty in the binary.
	ClientHookCfg
}

// network is the configured network, libp2p by default.
func (c *ClientConfig) network() transport.Network {
	if c.Network == nil {
		return transport.DefaultNetwork
	}
	return c.Network
}

// Client is a riffle client: it takes part in every epoch through its
// primary, sending one onion and k queries every round (cover when idle),
// and carries share and get jobs.
type Client struct {
	cfg   ClientConfig
	ltKey *proto.LongTermKey // signs each registration for the primary (internal/proto/ltkey.go)
	db    *store.ClientDB
	// bind is the data directory's binding to one network (netbind.go):
	// until it is bound, the database opened at start waits in it.
	bind    *netdir.Binding
	log     *slog.Logger
	rand    io.Reader
	h       transport.Host
	primary peer.ID
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	// mu guards the jobs' queue, the current epoch and the fields below
	// up to local; changed is closed and replaced at every change (notify).
	mu      sync.Mutex
	changed chan struct{}
	q       queue // the jobs and what they queue (queue.go)
	epoch   *cepoch
	anon    int
	b       int // chunk size of the current epoch
	// decoys is the group's window decoys are drawn from (decoys.go,
	// window_client.go); windowRecs are the closing records of its walk,
	// by epoch id, which settle the chunks that wait for one
	// (resend.go).
	decoys     decoyPool
	windowRecs map[[32]byte]*wire.Closing
	// prev is the epoch before the window's epoch, whose manifests the
	// check at its start covers too (prevcheck.go).
	prev *prevEpoch
	// windowBudget is what the window's walk shows of the servers'
	// refusal budgets (client_budget.go).
	windowBudget budgetView
	stats        Stats
	// idx is the synced index as of the last epoch's start (indexsync.go).
	idx syncedIndex
	// icopy is the synced copy of the index with its cursors, touched by
	// one sync at a time under its own lock (internal/indexsync).
	icopy indexsync.Copy
	// tail is closed once the end check of the last epoch taken part in
	// is done (checkpoint.go endCheck); the next epoch's sync waits for it.
	tail chan struct{}
	// lastGroup is the chain of the last open descriptor taken (its
	// previous certificate verified): what the next one's verifies
	// against (clientCheckPrevious).
	lastGroup []peer.ID
	// group is the group's constants this client checked against
	// MaxRate, with their cost, and what it moved (internal/meter).
	group meter.Group
	// fatal is why the client stopped by itself (Err).
	fatal error
	// held: chunks this client published or fetched (at most maxHeld),
	// for local views only (Holds): they never choose a request.
	held map[[32]byte]bool
	// hk: the tests' hook points (internal/hooks; empty in the binary);
	// clientHookState, what a test reaches of them.
	hk hooks.Hooks
	clientHookState

	local     localQueue // local work (client_local.go)
	localDone chan struct{}

	// pres is the presence count (internal/presence) and notes what Status
	// and the wait line say of the epochs (internal/waitline), each under
	// its own lock, taken after mu where both are.
	pres  *presence.Count
	notes *waitline.Notes
}

// Stats counts what a client did (internal/status).
type Stats = status.Stats

type upItem struct {
	c   store.Chunk
	job *shareJob
	// manifest: the chunk parses as a manifest, which the index takes
	// only up to manifestsPerPseudonym a pseudonym an epoch (§6.4 v3).
	manifest bool
	// seen: the chunk went out in a round whose list, signed by all m
	// servers, lacks it; whoever stopped it may have read it (§5.2 v3).
	seen bool
	// wait is the full epochs the chunk still waits before it may go
	// out again (resend.go).
	wait int
	// seenAt is the round of its epoch that last left it out, with the
	// digest of that round's list (resend.go); awaiting: its epoch ended
	// with it unsent and it waits for the epoch's closing record.
	seenAt   seenRound
	awaiting bool
}

// seenRound names the round whose signed list lacked a chunk.
type seenRound struct {
	epoch  [32]byte
	number uint64 // the epoch's number
	round  uint32
	list   [32]byte
}

type shareJob struct {
	left     map[[32]byte]bool
	done     chan struct{}
	finished bool // done is closed

	name    string
	b       int
	private bool
	// plain is a private file's plaintext, kept to encrypt it again
	// under a fresh key when part of it was seen unpublished (resend.go).
	plain []byte
	// link, ids and total change when a private file is encrypted again.
	link         chunker.Link
	ids          []chunker.ID
	total        int
	reencrypting bool
	reencrypted  int
	cancelled    bool // withdrawn (ShareHandle.Cancel): nothing is queued again
	// unconfirmed counts chunks counted as published without a record;
	// warnings are the lines the user was shown about them.
	unconfirmed int
	warnings    []string
	err         error
	ep          jobEpochs // epochs with real traffic (presence.go)
	// resume is the key of the job's resume record (share_resume.go),
	// nil without one; resumed counts the chunks that went out in an
	// earlier run.
	resume  *[32]byte
	resumed int
}

// finish closes the job's done channel once; call with c.mu held.
func (j *shareJob) finish() {
	if !j.finished {
		j.finished = true
		j.plain = nil
		close(j.done)
	}
}

type getJob struct {
	asm *chunker.Assembler
	// needed is asm's missing data ids as of its last change
	// (client_local.go): the round loop reads it under c.mu, never the
	// assembler itself. Manifest nodes are never requested: they come
	// from the synced index (§6.4 v3).
	needed    [][32]byte
	cancelled bool // Get returned; the worker drops the job
	link      chunker.Link
	dir       string
	root      bool // waiting for the root manifest (from a synced index)
	done      chan struct{}
	path      string
	err       error
	ep        jobEpochs // epochs with real traffic (presence.go)
}

// cepoch is a client's state of one epoch and its steps (client_epoch.go):
// the epoch's own fields are touched by its round loop, and those shared
// with the client's queue (reqs, ups, manWait, reask, cp) under c.mu,
// since a chunk moves between them and the queue in one step.
type cepoch struct {
	c    *Client // whose queue the epoch fills and empties
	v    *proto.View
	slot uint32
	// receipts: the chain servers' signed receipts of this client's
	// registration (§3 v3), checked; evidence if a selection leaves it
	// out.
	receipts []wire.Receipt
	regKey   ed25519.PrivateKey
	cs       *mix.ClientSecret
	others   []*pir.Keys // non-primaries' keys, chain order without the primary
	pidx     int
	reqs     map[uint32][][32]byte
	ups      map[uint32]*upItem
	onions   map[uint32][]byte // sealed once, kept to resend (§5.1)
	// onionReceipts: the primary's receipts of the onions of the rounds
	// without a final list yet (onionreceipt.go).
	onionReceipts map[uint32]wire.OnionReceipt
	// manifestsSent counts the manifest chunks sent this epoch: past
	// manifestsPerPseudonym the index would not take them, so they wait
	// for the next epoch.
	manifestsSent int
	// manWait holds the manifests published but not yet indexed: the
	// servers' queues take them in a later round of the epoch, or the
	// epoch ends and they go out again (settleEpoch).
	manWait []*upItem
	// cp: the checkpoint syncs (checkpoint.go).
	cp cpState
	// manifestIDs are the manifest ids of this epoch's signed request
	// lists: its checkpoints and its end check must find them all (§6.4 v3).
	manifestIDs [][32]byte
	// sealedNext is one more than the newest round sealed: a client that
	// leaves hands over cover from there (handover.go).
	sealedNext uint32
	marked     bool // the pending-epoch marker names this epoch

	// Buffers recycled round after round: the payload (free once sealed;
	// cleared at the epoch's end, it holds the requests) and the onions'
	// buffers (free once their round's list is in).
	payloadBuf []byte
	onionBufs  map[uint32][]byte
	freeOnions [][]byte
	// answerBufs holds free buffers for PIR answers (queries run
	// concurrently, at most queriesInFlight of them).
	answerBufs chan []byte

	// reask holds the requests of void rounds, in flight until the
	// round they may be asked again (resendHold).
	reask []reask
}

// onionDone recycles the buffer of round r's onion: the round is over.
func (e *cepoch) onionDone(r uint32) {
	delete(e.onions, r)
	delete(e.onionReceipts, r)
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
	if cfg.MinAnonymity <= 0 {
		cfg.MinAnonymity = proto.DefaultMinAnonymity
	}
	cfg.Timing = cfg.Timing.WithDefaults()
	rnd := cfg.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	// The long-term key (§8 "After a blame") links this client's
	// registrations at its primary, and only there; without a data
	// directory it is fresh per run.
	lt := cfg.LongTermKey
	switch {
	case lt != nil:
	case cfg.DataDir != "":
		if lt, err = proto.LoadLongTermKey(cfg.DataDir, rnd); err != nil {
			return nil, err
		}
	default:
		if lt, err = proto.NewLongTermKey(rnd); err != nil {
			return nil, err
		}
	}
	// A client's libp2p identity is fresh per process: nothing but the
	// long-term key, which only the primary sees, links its connections
	// across runs.
	h, err := cfg.network().NewHost(nil, nil)
	if err != nil {
		return nil, err
	}
	h.AddAddrs(ai.ID, ai.Addrs, time.Hour)
	cctx, cancel := context.WithCancel(ctx)
	c := &Client{cfg: cfg, ltKey: lt, log: log, rand: rnd, h: h, primary: ai.ID, ctx: cctx, cancel: cancel, done: make(chan struct{}),
		changed: make(chan struct{}), held: map[[32]byte]bool{}, localDone: make(chan struct{})}
	c.q = newQueue(&c.stats, rnd, log, c.progress)
	c.local.wake = make(chan struct{}, 1)
	c.icopy.Host = indexHost{c}
	c.hk.Config = cfg.ClientHookCfg
	c.clientHookState.bind(&c.hk)
	c.group.Since = time.Now()
	c.notes = waitline.NewNotes(cfg.MinAnonymity)
	wait, err := presence.Draw(rnd)
	if err != nil {
		h.Close()
		cancel()
		return nil, fmt.Errorf("node: presence draw: %w", err)
	}
	c.pres = presence.New(cfg.Now, wait)
	if err := h.Connect(cctx, *ai); err != nil {
		h.Close()
		cancel()
		return nil, fmt.Errorf("node: connect to %s: %w", cfg.Server, err)
	}
	c.openClientDB()
	c.bindAtStart()
	go c.run()
	go c.localWorker()
	return c, nil
}

// Close leaves the network (the cover window keeps the slot filled, §5.4).
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	<-c.localDone
	var err error
	if c.db != nil {
		err = c.db.Close()
	}
	if db := c.bind.Unbound(); db != nil {
		err = errors.Join(err, db.Close())
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

// call sends r to the client's primary, reporting the bytes sent to
// ClientConfig.OnSend.
func (c *Client) call(ctx context.Context, r transport.Request) ([]byte, error) {
	return c.callTo(ctx, c.primary, r)
}

// callTo sends r to server p, counting the bytes each way (Status) and
// reporting those sent to ClientConfig.OnSend.
func (c *Client) callTo(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error) {
	onSend := c.cfg.OnSend
	r.Sent = func(t wire.Type, n int) {
		c.group.Sent(n)
		if onSend != nil {
			onSend(uint8(t), n)
		}
	}
	rep, err := transport.Call(ctx, c.h, p, r)
	if err == nil {
		c.group.Received(proto.FrameHeader + len(rep))
	}
	return rep, err
}

func (c *Client) run() {
	defer close(c.done)
	c.resendPending(c.ctx)
	var last [32]byte
	for c.ctx.Err() == nil {
		began := time.Now()
		id, err := c.oneEpoch(last)
		if id != ([32]byte{}) {
			last = id
		}
		if errors.Is(err, ErrOverBudget) {
			c.log.Warn("client stops", "err", err)
			c.mu.Lock()
			c.fatal = err
			c.notify()
			c.mu.Unlock()
			return
		}
		// Epoch attempts start at least the group's registration window
		// apart, so that what aborted setups cost is bounded by the
		// constants too (GroupCost); a failed one waits half a second.
		next := began.Add(c.group.Gap())
		if err != nil && c.ctx.Err() == nil {
			c.log.Info("epoch left", "err", err)
			if why := waitline.Line(err); c.notes.SetWait(why) && why != "" {
				c.progress("%s", why)
			}
			if at := time.Now().Add(c.cfg.Timing.AttemptRetry); at.After(next) {
				next = at
			}
		}
		if d := time.Until(next); d > 0 {
			select {
			case <-c.ctx.Done():
			case <-time.After(d):
			}
		}
	}
}
