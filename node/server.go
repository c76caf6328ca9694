package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/node/internal/closing"
	"github.com/riffle-net/riffle/node/internal/dupwalk"
	"github.com/riffle-net/riffle/node/internal/eligible"
	"github.com/riffle-net/riffle/node/internal/index"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/members"
	"github.com/riffle-net/riffle/node/internal/peers"
	"github.com/riffle-net/riffle/node/internal/polls"
	"github.com/riffle-net/riffle/node/internal/prepare"
	"github.com/riffle-net/riffle/node/internal/pubfetch"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/internal/signed"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/internal/status"
	"github.com/riffle-net/riffle/node/internal/strikes"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/internal/wouldserve"
	"github.com/riffle-net/riffle/node/transport"
)

// Defaults of a server's configuration.
const (
	DefaultMinServers = 3
	DefaultMinClients = 2
)

// ServerConfig configures a server.
type ServerConfig struct {
	DataDir    string
	Listen     []string // multiaddrs; DefaultListen when empty
	Peers      []string // bootstrap multiaddrs with /p2p/
	Nick       string
	MinServers int // no epoch with fewer servers (default 3)
	MinClients int // no epoch with fewer clients (default 2)
	NoLAN      bool
	Params     Params  // zero: DefaultParams
	PIRRate    float64 // bytes/s of XOR assumed by the work check
	// Logger is the server's log; its lines do not name this server (a
	// process runs one, and "server up" gives its id): a process running
	// several gives each a logger With an attribute of its own ("self").
	Logger *slog.Logger
	Rand   io.Reader
	// Store keeps chunks, the index and round records; nil: the bbolt
	// store in DataDir (§7). NewMemStore only when asked for.
	Store ChunkStore
	// StoreOptions are the bbolt store's quota and retention.
	StoreOptions StoreOptions
	// PruneEvery is how often retention is applied (default
	// DefaultPruneEvery; only with a retention set).
	PruneEvery time.Duration
	// AllowServers, when set, are the only other servers this one joins
	// a chain with (--allow-server; internal/eligible).
	AllowServers []peer.ID
	// Probation is P_prob in epochs (0: eligible.DefaultProbation; negative:
	// none; internal/eligible).
	Probation int
	// Founders are the servers of the group's number 1 (--founder), the
	// same list in every server's configuration: number 1's chain holds
	// only founders, more than half of them, and its timeout votes count
	// only from them (internal/certs). Empty: any live roster server may found
	// the group (a bootstrap an outsider can disrupt, §3).
	Founders []peer.ID
	// LeaderTimeout is T_lead (0: DefaultLeaderTimeout; rotate.go).
	LeaderTimeout time.Duration
	// Network carries the server's streams (nil: libp2p).
	Network transport.Network
	// Timing holds the server's timeouts and periods (zero fields:
	// DefaultTunables; for tests and embedders).
	Timing Tunables

	// The tests' hooks (hooks_riffletest.go); empty in the binary.
	serverHookCfg
}

// network is the configured network, libp2p by default.
func (c *ServerConfig) network() transport.Network {
	if c.Network == nil {
		return transport.DefaultNetwork
	}
	return c.Network
}

// DefaultPruneEvery is how often a server prunes its store by default.
const DefaultPruneEvery = 10 * time.Minute

// Server is a riffle server.
type Server struct {
	// windowSlots counts the window replies being read and sent, to
	// clients and to the group's servers (package slots).
	windowSlots slots.Window
	ctx         context.Context
	cancel      context.CancelFunc
	cfg         ServerConfig
	log         *slog.Logger
	rand        io.Reader
	h           transport.Host
	priv        crypto.PrivKey
	roster      rosterTable
	hellos      *roster.Hellos // the roster protocol (roster.go)
	closers     []func() error
	// ix is the index and what serves it: the store, the index pages,
	// PIR, the publications kept for the chain, the catch-up
	// (internal/index).
	ix *index.Index
	// store and pub are ix's Store and Pub, by the names the round files
	// use.
	store ChunkStore
	pub   *pubfetch.Service
	// regs: the registration's handlers (internal/registry,
	// registration.go).
	regs registry.Service
	// dups: a duplicate share's handlers (internal/dupwalk,
	// dupwalk.go).
	dups dupwalk.Service
	pool transport.BufPool // large round buffers (transport's bufpool.go)
	wg   sync.WaitGroup
	// The tests' hooks (hooks_riffletest.go); empty in the binary.
	serverHookState

	// mu guards the fields below it up to strikes, and every epoch's and
	// round's state (sepoch, sround) reached through them.
	mu      sync.Mutex
	changed chan struct{}
	epochs  map[[32]byte]*sepoch
	// kept: this primary's receipts of recently ended epochs, for the
	// accounts asked of it after forget (silent.go).
	kept map[[32]byte]*keptAccounts
	// asking: ended epochs forgotten while their account asks run, for
	// the answers to the asks for their attestations (silent.go).
	asking  map[[32]byte]*sepoch
	prep    map[[32]byte]*sepoch // by nonce, before the epoch id is known
	open    *sepoch              // epoch accepting registrations here
	number  uint64               // highest epoch number signed (EpochNumberFile)
	lastEnd time.Time            // when an epoch last ended here (waitstate.go)
	// strikes: this primary's strikes against its client peers and their
	// addresses (a culprit of a blame, roundblame_after.go), known only
	// to it; also on disk.
	strikes strikes.Table
	turn    rotation // the leader rotation and its state (rotate.go)
	// rb: the culprit servers round blames named here (internal/roundblame,
	// its own lock).
	rb        roundblame.Excluded
	keys      ltkeys.Keys // long-term client keys (internal/ltkeys)
	dupServer             // duplicate-share verdicts (dupwalk.go)
	// ref is the evidence log and the refusal budget (internal/chargelog).
	ref chargelog.Log
	// closing: the epochs' closing records, and the one signed for each
	// recent epoch, on disk before the signature (closing.go,
	// internal/closing).
	closing closings
	// cert holds the certificates of epoch numbers (internal/certs).
	cert certs.Certs
	// phase marks what this server signed of the numbers (internal/signed).
	phase signed.Marks
	// amnesia: this server lost its records and signs nothing for now
	// (internal/signed).
	amnesia signed.Amnesia
	// win keeps the window's items, wins serves them and asks for them
	// (internal/window, window.go).
	win  window.Items
	wins window.Service

	timing   timer          // where the time goes (Timing, riffle bench)
	handlers transport.Gate // stream handlers in flight
	obs      status.Watch   // roster log and round timing (internal/status)
	who      eligible.Table // who may serve (internal/eligible)
	// members are the chains and who is a server of the group, over
	// roster, who and cert (internal/members, eligible.go).
	members members.Chains
	// peers says who is asking, over roster, members and polls
	// (internal/peers, asker.go).
	peers peers.Who
	// would asks a left-out server whether it would serve, and answers
	// (internal/wouldserve, derive.go).
	would *wouldserve.Service
	polls polls.Gate // client long polls in flight (internal/polls)
	// mixing is the mix path (mixing.go).
	mixing mixer
	// submits is the intake of onions (intake.go).
	submits submissions
	// prepFacts is what a Prepare's first checks read (internal/prepare).
	prepFacts prepare.Facts
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// NewServer starts a server: host, roster, discovery, handlers, and the
// leader loop that drives epochs when this server heads the chain.
func NewServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: server needs a data directory")
	}
	if cfg.MinServers <= 0 {
		cfg.MinServers = DefaultMinServers
	}
	if cfg.MinClients <= 0 {
		cfg.MinClients = DefaultMinClients
	}
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams()
	}
	if cfg.LeaderTimeout <= 0 {
		cfg.LeaderTimeout = DefaultLeaderTimeout
	}
	cfg.Timing = cfg.Timing.WithDefaults()
	if cfg.PIRRate <= 0 {
		cfg.PIRRate = DefaultPIRRate
	}
	if len(cfg.Listen) == 0 {
		cfg.Listen = DefaultListen
	}
	log := cfg.Logger
	if log == nil {
		log = quietLogger()
	}
	rnd := cfg.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	boot, err := parsePeers(cfg.Peers)
	if err != nil {
		return nil, err
	}
	_, idErr := os.Stat(filepath.Join(cfg.DataDir, IdentityFile))
	priv, err := LoadIdentity(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	number, err := certs.LoadNumber(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	chains, err := eligible.LoadChains(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	kept, top, err := certs.Load(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	closingRecs, err := closing.Load(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// A certified number is over: never signed again, whatever the number
	// file says (it may be lost).
	number = max(number, top)
	st := cfg.Store
	if st == nil {
		opts := cfg.StoreOptions
		opts.IndexRetention = time.Duration(cfg.Params.IndexHours) * time.Hour
		bs, err := chunks.OpenStore(cfg.DataDir, opts, log)
		if err != nil {
			return nil, err
		}
		st = bs
	}
	if cfg.PruneEvery <= 0 {
		cfg.PruneEvery = DefaultPruneEvery
	}
	h, err := cfg.network().NewHost(priv, cfg.Listen)
	if err != nil {
		st.Close()
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	s := &Server{
		ctx: cctx, cancel: cancel, cfg: cfg, log: log, rand: rnd,
		h: h, priv: priv, store: st,
		changed: make(chan struct{}), epochs: map[[32]byte]*sepoch{}, prep: map[[32]byte]*sepoch{},
		number: number,
	}
	s.cert.Init(certEnv{s}, cfg.DataDir, log, cfg.Timing.CertSyncEvery, cfg.Timing.CertSyncStart, kept, top)
	s.win = window.Items{St: st, Src: winSrc{s}, Log: log}
	s.wins = window.Service{Items: &s.win, Peers: winPeers{s}}
	s.hellos = newHellos(s)
	s.members = members.Chains{H: memberHost{s}, Roster: &s.roster.Table, Who: &s.who, Certs: &s.cert, Min: cfg.MinServers}
	s.would = newWouldServe(s)
	s.peers = peers.Who{H: h, Roster: &s.roster.Table, Members: &s.members, Epochs: peerEpochs{s}, Polls: &s.polls, Timing: &s.cfg.Timing}
	s.ix = newIndex(s)
	s.pub = s.ix.Pub
	s.mixing = newMixer(s)
	s.submits = newSubmissions(s)
	s.prepFacts = prepare.Facts{Self: h.ID(), PIRRate: cfg.PIRRate, Params: cfg.Params.Wire(), MinServers: cfg.MinServers,
		Excluded: s.rb.Has, OutAt: s.refusalOutAt, Live: func(p peer.ID) bool { return s.roster.get(p) != nil },
		Eligible: s.members.EligibleIn, CheckFounding: s.who.CheckFounding,
		Bounds: func(n uint64) error { return certs.CheckNumber(s.lastNumber(), n) }}
	s.regs = registry.Service{H: regHost{s}, Keys: &s.keys, Log: log}
	s.dups = dupwalk.Service{H: dupHost{s}, Log: log, Ctx: cctx, RouteWait: cfg.Timing.DupRouteWait}
	s.rb.St, s.rb.Log = st, log
	s.ref.Init(cfg.DataDir, log, s.cert.Of)
	if recs, err := s.rb.Records(); err == nil {
		for _, r := range recs {
			s.ref.Cause(r.Epoch) // a blame: its epoch's counts taken back
		}
	}
	s.closing.init(s, closingRecs)
	// The phase marks as the directory holds them at start: read later,
	// they would see the epoch number this run wrote and take it for an
	// upgrade's.
	s.phase.Load(cfg.DataDir)
	s.keys.St, s.keys.Log = st, log
	s.loadStrikes()
	s.who.Init(cfg.AllowServers, cfg.Probation, cfg.Founders, chains)
	s.who.SetRoles(s.cert.Roles)
	s.turn.s, s.turn.progress = s, time.Now()
	h.OnDisconnect(s.onConnEnd)
	transport.Serve(cctx, h, &s.handlers, s.log, ProtoRoster, transport.ShortTimeout, anyPeer(rosterCaps), s.hellos.OnHello)
	// Every reply of the client protocols is sent within
	// Tunables.ClientReply plus its size at clientReplyRate, and so are
	// the windows and index pages of the epoch protocol, which servers
	// that are only on the roster may ask for (slots.Servers): one that
	// never reads holds its slot for seconds, not the stream's 2 min.
	replies := transport.ReplyBound{Base: cfg.Timing.ClientReply, Rate: clientReplyRate}
	epochReplies := func(t wire.Type) transport.ReplyBound {
		if t == wire.TypeWindowReq || t == wire.TypeIndexReq {
			return replies
		}
		return transport.ReplyBound{}
	}
	// Server protocols: big bodies only from server peers (asker.go).
	transport.ServeBoundedBy(cctx, h, &s.handlers, s.log, ProtoEpoch, transport.BulkTimeout, epochReplies, s.peers.Caps(epochCaps), nil, oneSegment(s.handleEpoch))
	transport.ServePooled(cctx, h, &s.handlers, s.log, ProtoRound, transport.BulkTimeout, s.peers.Caps(roundCaps), s.pool.Buffers(), s.handleRound)
	handleClient, handlePIR := s.hookCfg().ClientHandlers(s.handleClient, s.ix.OnPIR)
	transport.ServeBounded(cctx, h, &s.handlers, s.log, ProtoClient, transport.PollTimeout, replies, anyPeer(clientCaps), s.pool.Buffers(), oneSegment(handleClient))
	transport.ServeBounded(cctx, h, &s.handlers, s.log, ProtoPIR, transport.PollTimeout, replies, anyPeer(pirCaps), nil, handlePIR)
	if !cfg.NoLAN {
		stop, err := transport.StartLAN(cctx, h, lanConfig(s))
		if err != nil {
			// LAN discovery is a convenience: a host without multicast
			// still works with --peer.
			s.log.Warn("lan discovery off", "err", err)
		} else {
			s.closers = append(s.closers, stop)
		}
	}
	if s.ix.Prunes() && (cfg.StoreOptions.Retention > 0 || cfg.Params.IndexHours > 0) {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.ix.PruneLoop(cctx, cfg.PruneEvery) }()
	}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.hellos.Loop(cctx, boot) }()
	go func() { defer s.wg.Done(); s.turn.loop(cctx) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.cert.Loop(cctx) }()
	if idErr == nil && number == 0 && len(cfg.Founders) > 0 {
		// An identity without records: it lost them (internal/signed).
		s.amnesia.Start(s.log)
		s.log.Warn("records lost: this server signs nothing until the group's log moves past its window")
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.amnesia.Loop(cctx, cfg.Timing.CertSyncStart, s.cert.Top, s.foundersHoldNone)
		}()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.ix.Catch.Loop(cctx) }()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.obs.Loop(cctx, cfg.Timing.WatchEvery, watchSampler{s}, s.log, cfg.MinServers)
	}()
	s.log.Info("server up", "id", h.ID().String(), "addrs", fmt.Sprint(h.Addrs()))
	return s, nil
}

func parsePeers(ps []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, p := range ps {
		a, err := ma.NewMultiaddr(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("node: peer address %q: %w", p, err)
		}
		ai, err := peer.AddrInfoFromP2pAddr(a)
		if err != nil {
			return nil, fmt.Errorf("node: peer address %q needs /p2p/<peer id>: %w", p, err)
		}
		out = append(out, *ai)
	}
	return out, nil
}

// ID returns the server's peer id.
func (s *Server) ID() peer.ID { return s.h.ID() }

// Addrs returns the server's full multiaddrs, with /p2p/<id>.
func (s *Server) Addrs() []ma.Multiaddr { return fullAddrs(s.h) }

func fullAddrs(h transport.Host) []ma.Multiaddr {
	p2p, _ := ma.NewComponent("p2p", h.ID().String())
	var out []ma.Multiaddr
	for _, a := range h.Addrs() {
		out = append(out, a.Encapsulate(p2p.Multiaddr()))
	}
	return out
}

// Close stops the server and erases every epoch secret it holds.
func (s *Server) Close() error {
	s.cancel()
	// Handlers first: they end promptly once the context is cancelled,
	// and none may touch the store or a secret after this.
	s.handlers.Close()
	s.wg.Wait()
	var errs []error
	for _, c := range s.closers {
		if err := c(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.h.Close())
	s.mu.Lock()
	for _, e := range s.epochs {
		// Through the reference count: a stream handler may still be
		// mid-round (handlers are not in s.wg); it finds the epoch ended
		// and its last user erases.
		e.ended = true
		if e.users == 0 {
			e.erase()
		}
	}
	for _, e := range s.prep {
		e.erase()
	}
	s.mu.Unlock()
	errs = append(errs, s.store.Close())
	return errors.Join(errs...)
}

// notify wakes every waiter; call with s.mu held.
func (s *Server) notify() {
	s.wake()
}

// wake wakes every waiter (also for a root that moves a due, roots.go);
// call with s.mu held.
func (s *Server) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond (evaluated under s.mu) holds or ctx ends.
// Every change of the server wakes every wait, so a wait keeps one
// timer for its re-checks rather than one a wake (a timer each was a fifth
// of the objects a full-size epoch allocated).
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	var recheck *time.Timer
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			if recheck != nil {
				recheck.Stop()
			}
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		if recheck == nil {
			recheck = time.NewTimer(time.Second)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			recheck.Stop()
			return ctx.Err()
		case <-recheck.C:
			// Time-based conditions (deadlines) are re-checked at
			// least every second.
			recheck.Reset(time.Second)
		}
	}
}
