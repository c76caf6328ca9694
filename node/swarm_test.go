//go:build riffletest

package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// The swarm: seeded, reproducible runs of a whole network in virtual time
// under a random schedule of faults (kill -9 and restart, partitions, slow
// and lossy links), checking after every step that no honest party is
// excluded, struck or charged (but for a fault of the schedule: see
// judgeCharges), that epochs keep completing once the faults end,
// that each server's memory stays bounded, and at the end that every
// acknowledged file comes back byte-exact through every server.
//
// `go test -run TestSwarm ./node/` runs swarmCISeeds; RIFFLE_SWARM_SEEDS=N
// runs seeds 1..N (make swarm) and A-B seeds A..B, each then with
// swarmKeptSeeds and swarmSizedSeeds, RIFFLE_SWARM_SEED=S replays one, and
// RIFFLE_SWARM_BIG=1 draws the larger networks (m up to 8, n up to 64);
// RIFFLE_SWARM_M and RIFFLE_SWARM_N fix m and n.

// Bounds the swarm holds a network to.
const (
	// swarmStep is the virtual time between two steps of the schedule.
	swarmStep = 2 * time.Second
	// swarmProgress is how long, once every fault has ended, the network
	// may go without completing an epoch.
	swarmProgress = 90 * time.Second
	// swarmFetch is how long, once the faults have ended, an acknowledged
	// file may take to come back.
	swarmFetch = 3 * time.Minute
	// swarmPoolMax bounds a server's free round buffers.
	swarmPoolMax = 64 << 20
	// swarmEpochsMax bounds the epochs a server keeps in memory.
	swarmEpochsMax = 64
	// swarmDiskMax bounds a server's data directory.
	swarmDiskMax = 256 << 20
	// swarmHeapMax bounds the heap of the whole process: every server and
	// client of the swarm.
	swarmHeapMax = 2 << 30
)

// swarmCISeeds are the seeds `make test` runs: one that meets three
// hostile strategies (early-abort, early-void, hold-open as an insider)
// and a restart, and found a fault, once it is fixed.
var swarmCISeeds = []swarmSeed{
	{seed: 6}, // one open-descriptor signature lost to a lossy link held the group at its number for good: the leader aborts (TestOpenSignatureLost)
}

// swarmKeptSeeds are seeds that found a fault, once it is fixed, too
// costly for make test, where a focused test checks the fault (or a quick
// one that found nothing): `make swarm` runs them after its range, if the
// range left them out.
var swarmKeptSeeds = []swarmSeed{
	{seed: 1},
	{seed: 3},   // a server lossy, then killed and restarted, never caught up on the epochs it missed: its catch-up read past the closing records of epochs whose certificates it had not yet taken (TestCatchupKeepsUnknownRecords)
	{seed: 14},  // a chain server restarted at an epoch's end left the epoch without a closing record, and the servers out of its chain never took its files (TestCatchupWithoutClosing)
	{seed: 91},  // s2's own "no publication" abort that too few attested (s0 slow, s1 restarted): a charge of an honest server the check of charges lets hold (judgeCharges), met in 2 of 3 runs; and S_0 of a running epoch restarted (the prepare-refuser's restart) left it running at the other two for good, the next leader one of them: no lead, no timeout (TestStaleEpochYieldsTurn)
	{seed: 165}, // run beside seeds 166 to 168: a leader's final descriptor lost to one server, then its coordination abort; that server certified the number by the abort and did not charge the abort, the others did, for good (TestFinalLostToOneServer)
	{seed: 167}, // as seed 165, with the leader already charged once: out for its budget everywhere but there, so the servers derived different leaders and stalled for good (TestFinalLostToOneServer)
}

// swarmSizedSeeds are seeds that found a fault at sizes of their own
// (RIFFLE_SWARM_M and RIFFLE_SWARM_N), too costly for make test: `make
// swarm` runs them after its seeds.
var swarmSizedSeeds = []swarmSeed{
	{seed: 1, m: 3, n: 64}, // every client asked every server for the decoy window at once, and most found the servers busy and sat out, their jobs paused for good (TestWindowAtClientCap)
}

// swarmSeed is a seed, and whether its run leaves the hostile parties out
// (RIFFLE_SWARM_HOSTILE=off): its faults are the same either way; m and
// n, if set, fix the sizes (as RIFFLE_SWARM_M and RIFFLE_SWARM_N).
type swarmSeed struct {
	seed       uint64
	faultsOnly bool
	m, n       int
}

func swarmSeeds(t *testing.T) []swarmSeed {
	off := os.Getenv("RIFFLE_SWARM_HOSTILE") == "off"
	if s := os.Getenv("RIFFLE_SWARM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RIFFLE_SWARM_SEED=%q: %v", s, err)
		}
		return []swarmSeed{{seed: v, faultsOnly: off}}
	}
	if s := os.Getenv("RIFFLE_SWARM_SEEDS"); s != "" {
		// N: seeds 1 to N; A-B: seeds A to B.
		a, b, rng := strings.Cut(s, "-")
		if !rng {
			a, b = "1", s
		}
		lo, err1 := strconv.Atoi(a)
		hi, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || lo < 1 || hi < lo {
			t.Fatalf("RIFFLE_SWARM_SEEDS=%q: want a count or a range A-B", s)
		}
		var out []swarmSeed
		for v := lo; v <= hi; v++ {
			out = append(out, swarmSeed{seed: uint64(v), faultsOnly: off})
		}
		for _, sd := range swarmKeptSeeds {
			if sd.seed < uint64(lo) || sd.seed > uint64(hi) {
				out = append(out, sd)
			}
		}
		return append(out, swarmSizedSeeds...)
	}
	return swarmCISeeds
}

func TestSwarm(t *testing.T) {
	long(t)
	for _, sd := range swarmSeeds(t) {
		name := fmt.Sprint(sd.seed)
		if sd.faultsOnly {
			name += "-faults-only"
		}
		if sd.m > 0 {
			name += fmt.Sprintf("-m%d-n%d", sd.m, sd.n)
		}
		t.Run(name, func(t *testing.T) {
			// Seeds share nothing but the process: run them side by side.
			t.Parallel()
			start := time.Now()
			synctest.Test(t, func(t *testing.T) { runSwarm(t, sd) })
			t.Logf("seed %d: %v of wall time", sd.seed, time.Since(start).Round(time.Millisecond))
		})
	}
}

// swarm is one seeded run.
type swarm struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	// hrng draws the hostile parties (swarmHostiles), a track of its
	// own, so that a seed's schedule of faults is the same with or
	// without them.
	hrng *rand.Rand
	// faultsOnly: no hostile parties (swarmSeed).
	faultsOnly bool
	// sized: the sizes are fixed (swarmSeed.m, n), not drawn.
	sized swarmSeed
	// grng draws the gets (which file, which client).
	grng  *rand.Rand
	net   *memnet.Net
	p     Params
	start time.Time
	ctx   context.Context

	servers  []*swarmServer
	clients  []*Client
	progress swarmProgressLog // every client's progress lines

	// mu guards the fields below: jobs report from goroutines.
	mu       sync.Mutex
	acked    []swarmFile
	events   []string
	jobs     sync.WaitGroup
	shares   int
	gets     int
	faults   int
	restarts int
	warned   int // shares linked with the warning that they may be incomplete
	// bad: servers that were ever hostile (an insider strategy): they
	// may be charged and left out, and their own view judges nobody.
	bad map[int]bool
	// spans: when each fault (crash, partition, slow or lossy links, a
	// hostile's restart) touched which server (touched).
	spans []swarmSpan
	down  map[int]bool // a fault in force
	// charges: the charges of honest servers seen, by observer and
	// evidence, each judged once its grace is over (judgeCharges).
	charges map[swarmChargeKey]*swarmCharge
	// certSeen: when the swarm first saw a certificate of each number at
	// some server, and chainOf the servers of its chains.
	certSeen map[uint64]time.Time
	chainOf  map[uint64]map[int]bool
	// agreed: the numbers whose charges checkAgree compared, and pairs
	// the pairs of servers it compared.
	agreed map[uint64]bool
	pairs  int
	// framed: the epochs whose last server an early abort or void
	// would have charged (insiderEarly).
	framed      []framedLast
	hostile     *hostileRun    // the hostile party in force, if any
	hostiles    []swarmHostile // those drawn
	hostileRuns int
}

type swarmServer struct {
	cfg ServerConfig
	// cur is the running server, nil while down: the outsiders' and
	// insiders' loops read it on goroutines of their own while the
	// schedule crashes and restarts it (a data race under -race when it
	// was a plain field).
	cur  atomic.Pointer[Server]
	id   peer.ID
	addr string
	// checked: the certificates up to this number were checked.
	checked uint64
}

// s is the running server, nil while down; read it once a pass.
func (sv *swarmServer) s() *Server { return sv.cur.Load() }

type swarmFile struct {
	link chunker.Link
	data []byte
	by   int // the sharing client
}

// fault is one fault in force: it ends at until.
type fault struct {
	kind   string
	server int
	until  time.Time
	stop   func() // an outsider's end
}

func (w *swarm) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, fmt.Sprintf("%8.1fs ", time.Since(w.start).Seconds())+fmt.Sprintf(format, args...))
}

// fail ends the run with the schedule so far and the line that replays it.
func (w *swarm) fail(format string, args ...any) {
	w.t.Helper()
	w.mu.Lock()
	ev := strings.Join(w.events, "\n")
	w.mu.Unlock()
	env := ""
	if w.faultsOnly {
		env = "RIFFLE_SWARM_HOSTILE=off "
	}
	if w.sized.m > 0 {
		env += fmt.Sprintf("RIFFLE_SWARM_M=%d RIFFLE_SWARM_N=%d ", w.sized.m, w.sized.n)
	}
	w.t.Fatalf("seed %d: %s\nevents:\n%s\nreplay: %sRIFFLE_SWARM_SEED=%d go test -tags riffletest -count=1 -run '^TestSwarm$' ./node/",
		w.seed, fmt.Sprintf(format, args...), ev, env, w.seed)
}

func runSwarm(t *testing.T, sd swarmSeed) {
	seed := sd.seed
	w := &swarm{t: t, seed: seed, faultsOnly: sd.faultsOnly, rng: rand.New(rand.NewPCG(seed, 0x5eed)), hrng: rand.New(rand.NewPCG(seed, 0x405711e)),
		grng:  rand.New(rand.NewPCG(seed, 0x6e7)),
		start: time.Now(), bad: map[int]bool{}, down: map[int]bool{},
		charges: map[swarmChargeKey]*swarmCharge{}, certSeen: map[uint64]time.Time{}, chainOf: map[uint64]map[int]bool{}}
	w.net = memnet.New(memnet.Link{Latency: time.Millisecond}, seed)
	m, n := 3+w.rng.IntN(3), 4+w.rng.IntN(9)
	if os.Getenv("RIFFLE_SWARM_BIG") != "" {
		m, n = 3+w.rng.IntN(6), 8+w.rng.IntN(57)
	}
	if sd.m > 0 {
		m, n = sd.m, sd.n
		w.sized = sd
	}
	if v := os.Getenv("RIFFLE_SWARM_M"); v != "" {
		m, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("RIFFLE_SWARM_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	// A client per server and one more, so that every server is some
	// client's primary and a file is fetched by another than its sharer.
	n = max(n, m+1)
	w.p = testParams([]int{8, 16}[w.rng.IntN(2)])
	steps := 60 + w.rng.IntN(60)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.ctx = ctx
	w.logf("m=%d n=%d R=%d steps=%d", m, n, w.p.Rounds, steps)
	// One run in four founds its group (ServerConfig.Founders) and
	// meets outsiders voting numbers ahead before its first epoch
	// (TestOutsidersCertifyAhead): a group with no founders is open to
	// them by design (§3).
	// RIFFLE_SWARM_HOSTILE=a,b draws only those (off: none).
	w.hostiles = swarmHostiles
	if only := os.Getenv("RIFFLE_SWARM_HOSTILE"); only != "" && only != "off" {
		w.hostiles = nil
		for _, h := range append(append(swarmHostiles, swarmRelayHostiles...), hostileAhead) {
			if slices.Contains(strings.Split(only, ","), h.name) {
				w.hostiles = append(w.hostiles, h)
			}
		}
		if len(w.hostiles) == 0 {
			t.Fatalf("RIFFLE_SWARM_HOSTILE=%q names no hostile party", only)
		}
	}
	ahead := w.hrng.IntN(4) == 0 && !w.faultsOnly
	if only := os.Getenv("RIFFLE_SWARM_HOSTILE"); only != "" {
		ahead = strings.Contains(only, hostileAhead.name)
	}
	dirs := make([]string, m)
	var founders []peer.ID
	for i := range dirs {
		dirs[i] = t.TempDir()
		if ahead {
			priv, err := LoadIdentity(dirs[i])
			if err != nil {
				t.Fatal(err)
			}
			id, _ := peer.IDFromPrivateKey(priv)
			founders = append(founders, id)
		}
	}

	var peers []string
	for i := range m {
		cfg := ServerConfig{DataDir: dirs[i], Founders: founders, Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: append([]string(nil), peers...),
			Nick: fmt.Sprintf("s%d", i), MinServers: DefaultMinServers, MinClients: 2, NoLAN: true, Params: w.p,
			Logger: anonLogger().With("seed", seed, "srv", fmt.Sprintf("s%d", i)), Network: w.net}
		s, err := NewServer(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		addr := s.Addrs()[0]
		// A restart listens where the server did.
		cfg.Listen = []string{strings.TrimSuffix(addr.String(), "/p2p/"+s.ID().String())}
		sv := &swarmServer{cfg: cfg, id: s.ID(), addr: addr.String()}
		sv.cur.Store(s)
		w.servers = append(w.servers, sv)
		peers = append(peers, addr.String())
	}
	// Every server knows every other, so that a restart finds the group.
	for _, sv := range w.servers {
		sv.cfg.Peers = peers
	}
	if ahead {
		w.startHostile(hostileAhead)
	}
	for i := range n {
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: peers[i%m], Logger: anonLogger().With("seed", seed, "cli", fmt.Sprintf("c%d", i)), Network: w.net,
			Progress: &w.progress})
		if err != nil {
			t.Fatal(err)
		}
		w.clients = append(w.clients, c)
	}
	defer w.close()

	var faults []fault
	lastFault := time.Now() // the start counts as a fault: the group forms
	lastEpochs, lastProgress := 0, time.Now()
	for step := range steps {
		time.Sleep(swarmStep)
		now := time.Now()
		// Faults end.
		kept := faults[:0]
		for _, f := range faults {
			if now.Before(f.until) {
				kept = append(kept, f)
				continue
			}
			w.endFault(f)
			lastFault = now
		}
		faults = kept
		if h := w.hostile; h != nil && !now.Before(h.until) {
			w.endHostile()
			lastFault = now
		}
		// New work and new faults.
		switch r := w.rng.Float64(); {
		case r < 0.25:
			w.share()
		case r < 0.45:
			w.get()
		case r < 0.60 && len(faults) == 0 && step < steps-30:
			faults = append(faults, w.startFault())
			lastFault = now
		}
		// A hostile party, on its own track.
		if w.hostile == nil && !w.faultsOnly && step < steps-30 && w.hrng.IntN(6) == 0 {
			if w.startHostile(w.hostiles[w.hrng.IntN(len(w.hostiles))]) {
				lastFault = now
			}
		}
		w.check()
		if step%10 == 0 {
			w.t.Logf("step %d/%d at %v: %d epochs, %d faults in force", step, steps, now.Sub(w.start).Round(time.Second), w.epochs(), len(faults))
		}
		// Liveness: epochs complete once the faults have ended.
		if e := w.epochs(); e > lastEpochs {
			lastEpochs, lastProgress = e, now
		}
		if len(faults) == 0 && w.hostile == nil && now.Sub(lastFault) > swarmProgress && now.Sub(lastProgress) > swarmProgress {
			w.fail("no epoch completed for %v, %v after the last fault ended", now.Sub(lastProgress), now.Sub(lastFault))
		}
	}
	for _, f := range faults {
		w.endFault(f)
	}
	if w.hostile != nil {
		w.endHostile()
	}
	// Once every fault has ended, epochs complete again.
	e0 := w.epochs()
	if err := wait.Until(w.ctx, swarmProgress, func() bool { return w.epochs() > e0 }); err != nil {
		w.fail("no epoch completed in the %v after the last fault ended", swarmProgress)
	}
	w.jobs.Wait()
	w.check()
	w.fetchAll()
	w.mu.Lock()
	if testing.Verbose() {
		// The faults and hostile parties the run met.
		for _, e := range w.events {
			if !strings.Contains(e, " share by ") && !strings.Contains(e, " get by ") {
				t.Log(e)
			}
		}
	}
	t.Logf("seed %d: m=%d n=%d R=%d, %d epochs in %v of virtual time: %d shares acknowledged of %d (%d warned incomplete), %d gets, %d faults, %d restarts, %d hostile parties; charges of %d numbers compared, %d pairs of servers",
		seed, m, n, w.p.Rounds, w.epochs(), time.Since(w.start).Round(time.Second), len(w.acked), w.shares, w.warned, w.gets, w.faults, w.restarts, w.hostileRuns, len(w.agreed), w.pairs)
	w.mu.Unlock()
}

// epochs is the most epochs any client has taken part in.
func (w *swarm) epochs() int {
	best := 0
	for _, c := range w.clients {
		best = max(best, c.Stats().Epochs)
	}
	return best
}

func (w *swarm) close() {
	for _, c := range w.clients {
		c.Close()
	}
	for _, sv := range w.servers {
		if s := sv.s(); s != nil {
			s.Close()
		}
	}
}

// share starts a share of a random file from a random client; a share
// that returns its link is acknowledged.
func (w *swarm) share() {
	by := w.rng.IntN(len(w.clients))
	size := w.rng.IntN(3*int(w.p.ChunkSize) + 1)
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(w.rng.Uint32())
	}
	name := fmt.Sprintf("f%d.bin", w.rng.Uint32())
	w.mu.Lock()
	w.shares++
	w.mu.Unlock()
	w.jobs.Add(1)
	go func() {
		defer w.jobs.Done()
		ctx, cancel := context.WithTimeout(w.ctx, 5*time.Minute)
		defer cancel()
		// A share whose chunks went out in an epoch that a fault broke
		// (no closing record) counts them as published after three syncs
		// and warns that the file may be incomplete (§5.2 v3): a warned
		// share is not acknowledged.
		link, err := w.clients[by].Share(ctx, bytes.NewReader(data), name, false)
		if err != nil {
			w.logf("share by c%d of %d B: %v", by, size, err)
			return
		}
		if w.progress.warned(name) {
			w.mu.Lock()
			w.warned++
			w.mu.Unlock()
			w.logf("share by c%d of %d B: linked with the warning that it may be incomplete", by, size)
			return
		}
		w.mu.Lock()
		w.acked = append(w.acked, swarmFile{link: link, data: data, by: by})
		w.mu.Unlock()
		w.logf("share by c%d of %d B acknowledged", by, size)
	}()
}

// get fetches an acknowledged file through another client; a fetch that
// completes must be byte-exact (one that times out under faults is not a
// fault of the network: fetchAll checks every file at the end).
//
// It draws from w.grng, never w.rng: whether and when a share is
// acknowledged follows the order of goroutines, and draws that depended on
// it made the schedule of faults after them differ from run to run of one
// seed (seed 3 drew a crash of the server it had made lossy in about one
// run in five, the run that failed).
func (w *swarm) get() {
	pick, off := w.grng.Uint64(), w.grng.IntN(len(w.clients)-1)
	w.mu.Lock()
	if len(w.acked) == 0 {
		w.mu.Unlock()
		return
	}
	f := w.acked[pick%uint64(len(w.acked))]
	w.gets++
	w.mu.Unlock()
	by := (f.by + 1 + off) % len(w.clients)
	w.jobs.Add(1)
	go func() {
		defer w.jobs.Done()
		ctx, cancel := context.WithTimeout(w.ctx, swarmFetch)
		defer cancel()
		if err := w.fetch(ctx, by, f); err != nil {
			w.logf("get by c%d: %v", by, err)
		}
	}()
}

func (w *swarm) fetch(ctx context.Context, by int, f swarmFile) error {
	path, err := w.clients[by].Get(ctx, f.link, w.t.TempDir())
	if err != nil {
		return err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, f.data) {
		w.fail("client %d fetched %d bytes that differ from the %d shared", by, len(got), len(f.data))
	}
	return nil
}

// fetchAll fetches every acknowledged file through a client of every
// server, byte-exact, once the faults have ended.
func (w *swarm) fetchAll() {
	w.mu.Lock()
	files := append([]swarmFile(nil), w.acked...)
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, swarmFetch)
	defer cancel()
	m := len(w.servers)
	var wg sync.WaitGroup
	errs := make([]error, len(files)*m)
	for i, f := range files {
		for j := range m {
			// Clients are spread over the servers (client c has primary
			// c mod m): client j+m·k has server j as its primary.
			by := j
			if by == f.by && by+m < len(w.clients) {
				by += m
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i*m+j] = w.fetch(ctx, by, f)
			}()
		}
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			w.fail("acknowledged file %d not fetched through server %d: %v\n%s", k/m, k%m, err, w.where(files[k/m]))
		}
	}
}

// startFault draws a fault on one server.
func (w *swarm) startFault() fault {
	i := w.rng.IntN(len(w.servers))
	sv := w.servers[i]
	f := fault{server: i, until: time.Now().Add(time.Duration(5+w.rng.IntN(40)) * time.Second)}
	w.faults++
	k := w.rng.IntN(4 + len(swarmOutsiders))
	if only := os.Getenv("RIFFLE_SWARM_FAULTS"); only != "" {
		// Only the kinds named (a comma-separated list of crash,
		// partition, slow, lossy and outsiders' names).
		names := append([]string{"crash", "partition", "slow", "lossy"}, outsiderNames()...)
		var allowed []int
		for x, n := range names {
			if slices.Contains(strings.Split(only, ","), n) {
				allowed = append(allowed, x)
			}
		}
		if len(allowed) == 0 {
			w.fail("RIFFLE_SWARM_FAULTS=%q names no fault of %v", only, names)
		}
		k = allowed[w.rng.IntN(len(allowed))]
	}
	switch k {
	case 0:
		f.kind = "crash"
		sv.s().Crash()
		sv.cur.Store(nil)
	case 1:
		f.kind = "partition"
		var others []peer.ID
		for _, id := range w.net.Hosts() {
			if id != sv.id {
				others = append(others, id)
			}
		}
		w.net.Partition([]peer.ID{sv.id}, others)
	case 2:
		f.kind = "slow"
		w.setLinks(sv.id, memnet.Link{Latency: time.Duration(50+w.rng.IntN(250)) * time.Millisecond, Bandwidth: 4 << 20})
	case 3:
		f.kind = "lossy"
		w.setLinks(sv.id, memnet.Link{Latency: time.Millisecond, Loss: 0.01 + 0.04*w.rng.Float64()})
	default:
		o := swarmOutsiders[k-4]
		f.kind, f.server = o.name, -1
		f.stop = o.start(w)
	}
	if f.server >= 0 {
		w.mu.Lock()
		w.down[f.server] = true
		w.spans = append(w.spans, swarmSpan{server: f.server, kind: f.kind, from: time.Now()})
		w.mu.Unlock()
	}
	w.logf("fault: %s of s%d until %.1fs", f.kind, f.server, f.until.Sub(w.start).Seconds())
	return f
}

func (w *swarm) setLinks(id peer.ID, l memnet.Link) {
	for _, o := range w.net.Hosts() {
		if o != id {
			w.net.SetLink(id, o, l)
			w.net.SetLink(o, id, l)
		}
	}
}

func (w *swarm) endFault(f fault) {
	if f.stop != nil {
		f.stop()
		w.logf("outsider ends: %s", f.kind)
		return
	}
	sv := w.servers[f.server]
	switch f.kind {
	case "crash":
		s, err := NewServer(w.ctx, sv.cfg)
		if err != nil {
			w.fail("restart of s%d: %v", f.server, err)
		}
		sv.cur.Store(s)
		w.restarts++
	case "partition":
		w.net.Heal()
	case "slow", "lossy":
		w.setLinks(sv.id, memnet.Link{Latency: time.Millisecond})
	}
	w.mu.Lock()
	delete(w.down, f.server)
	for k := range w.spans {
		if sp := &w.spans[k]; sp.server == f.server && sp.to.IsZero() {
			sp.to = time.Now()
		}
	}
	w.mu.Unlock()
	w.logf("fault ends: %s of s%d", f.kind, f.server)
}

// check holds the invariants every step: no honest server named a culprit,
// charged an honest server but as judgeCharges allows, charged the last
// server for an early abort or void, or refused a client (every client of
// the swarm is honest); no certificate holds a party that is not a server
// of the swarm; and bounded memory and disk. A server that was ever
// hostile may be charged and named, and judges nobody.
func (w *swarm) check() {
	w.mu.Lock()
	bad := maps.Clone(w.bad)
	framed := slices.Clone(w.framed)
	w.mu.Unlock()
	ids := map[string]bool{}
	index := map[peer.ID]int{}
	for j, sv := range w.servers {
		ids[string(sv.id)] = true
		index[sv.id] = j
	}
	for i, a := range w.servers {
		s := a.s()
		if s == nil {
			continue
		}
		if !bad[i] {
			w.judgeCharges(i, s, bad, index)
			for j, b := range w.servers {
				if i == j || bad[j] {
					continue
				}
				if s.rb.Has(b.id) {
					w.fail("s%d excludes honest s%d as a culprit", i, j)
				}
				for _, f := range framed {
					if f.last == b.id && s.chargedFor(b.id, f.number, f.round) {
						w.fail("s%d charged s%d, the last server, for the early %s of number %d: %s", i, j, f.kind, f.number, s.refusalReasons(b.id))
					}
				}
			}
		}
		top, all := s.cert.All()
		for n, cb := range all {
			if n <= a.checked {
				continue
			}
			var c wire.Cert
			if c.Unmarshal(cb) != nil {
				continue
			}
			if _, ok := w.certSeen[n]; !ok {
				w.certSeen[n] = time.Now()
			}
			for _, p := range c.Chain {
				if !ids[string(p)] {
					w.fail("s%d: certificate of %d (kind %d) over a chain with %s, not a server of the swarm", i, n, c.Kind, peer.ID(p).ShortString())
				}
				if w.chainOf[n] == nil {
					w.chainOf[n] = map[int]bool{}
				}
				w.chainOf[n][index[peer.ID(p)]] = true
			}
		}
		a.checked = top
		if b := s.Banned(); len(b) > 0 {
			w.fail("s%d refuses %d honest clients", i, len(b))
		}
		if pb := s.PoolBytes(); pb > swarmPoolMax {
			w.fail("s%d holds %d B of free round buffers", i, pb)
		}
		if kept, prep := s.EpochsHeld(); kept+prep > swarmEpochsMax {
			w.fail("s%d holds %d epochs and %d prepared", i, kept, prep)
		}
		if d := dirBytes(a.cfg.DataDir); d > swarmDiskMax {
			w.fail("s%d's data directory holds %d B", i, d)
		}
	}
	w.checkAgree(bad)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > swarmHeapMax {
		w.fail("the process holds %d B of heap", ms.HeapInuse)
	}
}

// swarmSpan is a time a fault touched server: from its start to its end
// (to, zero while in force).
type swarmSpan struct {
	server   int
	kind     string
	from, to time.Time
}

type swarmChargeKey struct {
	observer int
	key      string // the evidence (refusal.Key)
}

type swarmCharge struct {
	seen   time.Time
	judged bool
}

// The charges of honest servers (issue 23: no honest party charged). A
// server is touched at epoch number N when a fault of the schedule was in
// force on it (crash and restart, partition, slow or lossy links, a
// hostile's restart) at some time between N's start and the charge, or
// ended less than swarmSettle before N's start. A charge of an honest
// server at N holds only when
//   - that server was touched at N: an absence may be counted against it;
//   - or the charge is its own signed claim (an abort it signed, a void it
//     proposed as S_0, an absence it claimed that the others did not
//     back) and another server of N's chain was touched at N: §3 charges
//     a refusal on private grounds to its signer, so a peer that a fault
//     made slow or silent makes an honest server time out and pay (the
//     limit §3 states of a silent malicious server), once an epoch.
// Any other charge of an honest server fails the run: one charged with no
// fault in its epoch's chain, or charged by the others' attestations
// while untouched. A charge is judged once the grace in which its count
// may still move is over (swarmChargeSettle): one first seen in a run's
// last swarmChargeSettle is not judged.

// swarmChargeSettle is how long a charge may still move once first seen:
// the attestations of a departure come as the other servers' probes fail,
// and evidence is relayed whenever it grows.
const swarmChargeSettle = 20 * time.Second

// swarmSettle is how long after a fault ends an epoch it broke may still
// end with a charge: a lack is declared at the round limit at most.
func (w *swarm) swarmSettle() time.Duration {
	return time.Duration(w.p.RoundLimitMs)*time.Millisecond + 2*swarmStep
}

// touched reports whether a fault touched server j between from and to.
func (w *swarm) touched(j int, from, to time.Time) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// The latest such fault: the likeliest cause.
	for _, sp := range slices.Backward(w.spans) {
		end := sp.to
		if end.IsZero() {
			end = to
		}
		if sp.server == j && !sp.from.After(to) && !end.Add(w.swarmSettle()).Before(from) {
			return fmt.Sprintf("%s of s%d %.1fs to %.1fs", sp.kind, j, sp.from.Sub(w.start).Seconds(), end.Sub(w.start).Seconds()), true
		}
	}
	return "", false
}

// epochStart is a bound below the start of number n: the swarm's first
// sight of an earlier number's certificate, a step before.
func (w *swarm) epochStart(n uint64) time.Time {
	best := w.start
	for k, t := range w.certSeen {
		if k < n && t.After(best) {
			best = t
		}
	}
	if best.Equal(w.start) {
		return best
	}
	return best.Add(-swarmStep)
}

// judgeCharges holds the charges counted at honest server i (s) against
// honest servers to the rule above.
func (w *swarm) judgeCharges(i int, s *Server, bad map[int]bool, index map[peer.ID]int) {
	now := time.Now()
	for _, h := range s.heldCharges() {
		j, ok := index[h.peer]
		if !ok || bad[j] {
			continue
		}
		k := swarmChargeKey{i, h.key}
		c := w.charges[k]
		if c == nil {
			w.charges[k] = &swarmCharge{seen: now}
			continue
		}
		if c.judged || now.Sub(c.seen) < swarmChargeSettle+swarmStep {
			continue
		}
		c.judged = true
		from := w.epochStart(h.number)
		what := fmt.Sprintf("s%d charged s%d at number %d (%s, first seen at %.1fs)", i, j, h.number, h.reason, c.seen.Sub(w.start).Seconds())
		why, ok := w.chargeHolds(j, h.own, w.chainOf[h.number], from, c.seen)
		if !ok {
			w.fail("%s: %s", what, why)
		}
		w.logf("%s: %s", what, why)
	}
}

// chargeHolds reports whether a charge of honest server j holds (the rule
// above) and why: own, whether it is j's own claim; chain, the servers of
// the charged number's chains (nil: unknown, any server); from and to,
// the charged epoch's start and the charge's first sight.
func (w *swarm) chargeHolds(j int, own bool, chain map[int]bool, from, to time.Time) (string, bool) {
	if f, ok := w.touched(j, from, to); ok {
		return fmt.Sprintf("s%d touched (%s)", j, f), true
	}
	if !own {
		return fmt.Sprintf("by the others' attestations, s%d untouched since %.1fs", j, from.Sub(w.start).Seconds()), false
	}
	for x := range w.servers {
		if x == j || (chain != nil && !chain[x]) {
			continue
		}
		if f, ok := w.touched(x, from, to); ok {
			return fmt.Sprintf("its own claim, a fault in its chain (%s)", f), true
		}
	}
	return fmt.Sprintf("its own claim, with no fault on a server of its chain %v since %.1fs", slices.Sorted(maps.Keys(chain)), from.Sub(w.start).Seconds()), false
}

// heldCharge is a charge counted at a server.
type heldCharge struct {
	peer   peer.ID
	number uint64
	key    string
	reason string
	// own: the charge is the charged server's own signed claim, not
	// the others' attestations (chargeOf).
	own bool
}

// heldCharges lists the charges counted here.
func (s *Server) heldCharges() []heldCharge {
	var out []heldCharge
	for _, r := range s.ref.Records(true) {
		p, err := peer.Decode(r.Peer)
		if err != nil {
			continue
		}
		own := !strings.Contains(r.Reason, "(attested)")
		var ev wire.Charge
		var a wire.Abort
		if own && ev.Unmarshal(r.Ev) == nil && ev.Kind == wire.EvAbort && a.Unmarshal(ev.Item) == nil {
			own = peer.ID(a.Signer) == p
		}
		key := r.Key
		if key == "" {
			key = fmt.Sprint(r.Number, r.Epoch, r.Reason)
		}
		out = append(out, heldCharge{peer: p, number: r.Number, key: key, reason: r.Reason, own: own})
	}
	return out
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// An outsider is a party with no role: hosts of its own on the swarm's
// network, doing what any peer may try. Each runs while its fault lasts.
type swarmOutsider struct {
	name  string
	start func(w *swarm) (stop func())
}

// swarmOutsiders are drawn with the faults: every strategy in it leaves an
// honest group live and every honest party unnamed. The strategies of
// swarmOpen, found by review and not yet defended (issue 25's
// control-plane log), run only with RIFFLE_SWARM_OPEN=1. The hostile
// parties of swarmHostiles have a track of their own.
var swarmOutsiders = []swarmOutsider{
	{"headers", outsiderHeaders},
}

func outsiderNames() []string {
	var out []string
	for _, o := range swarmOutsiders {
		out = append(out, o.name)
	}
	return out
}

func init() {
	if os.Getenv("RIFFLE_SWARM_OPEN") != "" {
		swarmOutsiders = append(swarmOutsiders, swarmOpen...)
	}
}

var swarmOpen = []swarmOutsider{
	{"live-hello-flood", outsiderHelloFlood},
}

// outsiderTimeoutVotes starts 8 ids that say hello as servers and, every
// half step, vote "timeout" for the next 8 numbers of every server over
// chains of themselves and that server, never as the number's leader
// (issue 25 points 1 and 2): no vote of theirs may be stored, nor any
// certificate made over their chains.
func outsiderTimeoutVotes(w *swarm) func() {
	type voter struct {
		h    transport.Host
		priv crypto.PrivKey
	}
	var vs []voter
	for range 8 {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			w.fail("outsider key: %v", err)
		}
		h, err := w.net.NewHost(k, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			w.fail("outsider host: %v", err)
		}
		vs = append(vs, voter{h, k})
	}
	hello := func(h transport.Host) []byte {
		hl := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte("outsider")}
		for _, a := range h.Addrs() {
			hl.Addrs = append(hl.Addrs, a.Bytes())
		}
		return hl.Marshal()
	}
	stop := outsiderLoop(w, func(ctx context.Context) {
		for _, v := range vs {
			for _, sv := range w.servers {
				// Read once: a crash sets it to nil meanwhile (a nil
				// dereference in one run of seeds 25 to 74).
				s := sv.s()
				if s == nil {
					continue
				}
				v.h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
				transport.Call(ctx, v.h, sv.id, transport.Request{Proto: ProtoRoster, Type: wire.TypeHello, Body: hello(v.h), Timeout: transport.ShortTimeout})
				top := s.cert.Top()
				for n := top + 1; n <= top+8; n++ {
					chain := []peer.ID{v.h.ID(), sv.id}
					sortChain(chain)
					if proto.LeaderOf(n, chain) == v.h.ID() {
						continue
					}
					ids := proto.ChainIDs(chain)
					sig, err := proto.Sign(v.priv, proto.TimeoutDigest(n, ids))
					if err != nil {
						continue
					}
					pos := uint16(0)
					if chain[1] == v.h.ID() {
						pos = 1
					}
					vote := wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: ids, Sigs: []wire.CertSig{{Index: pos, Sig: sig}}}
					transport.Call(ctx, v.h, sv.id, transport.Request{Proto: ProtoEpoch, Type: wire.TypeTimeoutVote, Body: vote.Marshal(), Timeout: transport.ShortTimeout})
				}
			}
		}
		for i, sv := range w.servers {
			s := sv.s()
			if s == nil {
				continue
			}
			var bad []uint64
			_, all := s.cert.All()
			for n, b := range all {
				var c wire.Cert
				if c.Unmarshal(b) != nil {
					continue
				}
				for _, p := range c.Chain {
					for _, v := range vs {
						if peer.ID(p) == v.h.ID() {
							bad = append(bad, n)
						}
					}
				}
			}
			if len(bad) > 0 {
				// Not the test's goroutine: an error, not a Fatal.
				w.logf("s%d: certificates over an outsider's chain: %v", i, bad)
				w.t.Errorf("seed %d: s%d: certificates of %v hold an outsider's chain", w.seed, i, bad)
			}
		}
	})
	return func() {
		stop()
		for _, v := range vs {
			v.h.Close()
		}
	}
}

// outsiderLoop runs f every swarmStep/2 on its own goroutine until stop.
func outsiderLoop(w *swarm, f func(ctx context.Context)) (stop func()) {
	return pollLoop(w, swarmStep/2, f)
}

// pollLoop runs f every d on its own goroutine until stop. An early abort
// waits for a round a few rounds into an epoch, which at R = 8 lasts well
// under a step: it looks every 20 ms.
func pollLoop(w *swarm, d time.Duration, f func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// outsiderHeaders opens streams to the servers whose frame headers
// declare bodies at their caps (client submissions, from a peer with no
// role) and sends a few bytes of each, holding them open: the servers
// must read as bytes arrive and keep serving (§3 "Identify first").
func outsiderHeaders(w *swarm) func() {
	h, err := w.net.NewHost(nil, nil)
	if err != nil {
		w.fail("outsider host: %v", err)
	}
	var open []transport.Stream
	stop := outsiderLoop(w, func(ctx context.Context) {
		// What libp2p lets one peer hold open on a client protocol
		// (transport.LimitClientPeerStreams); memnet has no such limit.
		for len(open) > transport.LimitClientPeerStreams*len(w.servers) {
			open[0].Reset()
			open = open[1:]
		}
		for _, sv := range w.servers {
			s := sv.s()
			if s == nil {
				continue
			}
			h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
			for range 8 {
				st, err := h.NewStream(ctx, sv.id, ProtoClient)
				if err != nil {
					return
				}
				hd := []byte{byte(wire.TypeSubmit), 0, 0, 0, 0}
				binary.BigEndian.PutUint32(hd[1:], uint32(clientCaps(wire.TypeSubmit)))
				st.Write(append(hd, make([]byte, 1000)...))
				open = append(open, st)
			}
		}
	})
	return func() {
		stop()
		for _, st := range open {
			st.Reset()
		}
		h.Close()
	}
}

// outsiderHelloFlood starts 16 fresh ids that say hello as servers to
// every server and answer hellos, so that each looks like a live server,
// and take no part in any epoch.
func outsiderHelloFlood(w *swarm) func() {
	var hosts []transport.Host
	for range 16 {
		h, err := w.net.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
		if err != nil {
			w.fail("outsider host: %v", err)
		}
		hello := func() []byte {
			hl := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte("outsider")}
			for _, a := range h.Addrs() {
				hl.Addrs = append(hl.Addrs, a.Bytes())
			}
			return hl.Marshal()
		}
		var g transport.Gate
		transport.Serve(w.ctx, h, &g, quietLogger(), ProtoRoster, transport.ShortTimeout, func(peer.ID, wire.Type) int { return 64 << 10 },
			func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
				return wire.TypeHello, hello(), nil
			})
		hosts = append(hosts, h)
	}
	stop := outsiderLoop(w, func(ctx context.Context) {
		for _, h := range hosts {
			for _, sv := range w.servers {
				if sv.s() == nil {
					continue
				}
				h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
				hl := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte("outsider")}
				for _, a := range h.Addrs() {
					hl.Addrs = append(hl.Addrs, a.Bytes())
				}
				transport.Call(ctx, h, sv.id, transport.Request{Proto: ProtoRoster, Type: wire.TypeHello, Body: hl.Marshal(), Timeout: transport.ShortTimeout})
			}
		}
	})
	return func() {
		stop()
		for _, h := range hosts {
			h.Close()
		}
	}
}

type framedLast struct {
	kind   string
	number uint64
	round  uint32
	last   peer.ID
}

// chargedFor reports whether s counts against p an abort or void of
// round q of epoch number n (its reason names the round: "round q void",
// "round q: no publication"). A charge of p at n for another cause (a
// server that left, say) is not the framing the early void or abort
// tries; the swarm logs it as a charge of an honest server.
func (s *Server) chargedFor(p peer.ID, n uint64, q uint32) bool {
	pre := fmt.Sprintf("round %d", q)
	for _, r := range s.ref.Records(false) {
		if r.Peer == p.String() && r.Number == n && (r.Reason == pre+" void" || strings.HasPrefix(r.Reason, pre+":")) {
			return true
		}
	}
	return false
}

// refusalReasons lists the reasons of the aborts counted at s against p.
func (s *Server) refusalReasons(p peer.ID) string {
	var out []string
	for _, r := range s.ref.Records(false) {
		if r.Peer == p.String() {
			out = append(out, fmt.Sprintf("%d: %s", r.Number, r.Reason))
		}
	}
	return strings.Join(out, "; ")
}

// where says which servers hold a file's root manifest and index it.
func (w *swarm) where(f swarmFile) string {
	var b strings.Builder
	for i, sv := range w.servers {
		s := sv.s()
		if s == nil {
			fmt.Fprintf(&b, "s%d down\n", i)
			continue
		}
		held, err := s.store.HasChunk(f.link.ID)
		idx, ierr := s.store.Index()
		indexed := false
		for _, e := range idx {
			indexed = indexed || e.FileID == f.link.ID
		}
		fmt.Fprintf(&b, "s%d: root held %v (%v), indexed %v of %d entries (%v)\n", i, held, err, indexed, len(idx), ierr)
	}
	return b.String()
}

// swarmProgressLog keeps the share names that a client's progress warned
// may be incomplete.
type swarmProgressLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (p *swarmProgressLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range strings.Split(string(b), "\n") {
		if name, rest, ok := strings.Cut(strings.TrimPrefix(l, "share "), ": "); ok && strings.HasPrefix(l, "share ") && strings.Contains(rest, "may be incomplete") {
			if p.seen == nil {
				p.seen = map[string]bool{}
			}
			p.seen[name] = true
		}
	}
	return len(b), nil
}

func (p *swarmProgressLog) warned(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[name]
}

// A hostile party misbehaves for a while, on a track of its own beside
// the faults (w.hrng): an outsider, a peer with no role, or an insider,
// one server of the swarm, which the invariants then hold to nothing
// (w.bad). Each is an attack of issue 25 that is defended
// (node/control_attack_test.go): the swarm checks it against every
// invariant, with faults beside it.
type swarmHostile struct {
	name string
	// insider: start is given a live server that no fault touches now,
	// which is bad from then on.
	insider bool
	start   func(w *swarm, i int) (stop func())
}

type hostileRun struct {
	name  string
	until time.Time
	stop  func()
}

var swarmHostiles = []swarmHostile{
	{"hello-churn", false, func(w *swarm, _ int) func() { return outsiderHelloChurn(w) }},
	{"timeout-votes", false, func(w *swarm, _ int) func() { return outsiderTimeoutVotes(w) }},
	{"hold-open", true, insiderHoldOpen},
	{"prepare-refuser", true, insiderPrepareRefuser},
	{"early-abort", false, func(w *swarm, _ int) func() { return insiderEarly(w, "abort") }},
	{"early-void", false, func(w *swarm, _ int) func() { return insiderEarly(w, "void") }},
}

// swarmRelayHostiles: insiders that keep their batch from their successor
// (TestRelayedBatch): one hands it to the rest of the chain only, which
// relays it (no void, nobody charged), one keeps it from everyone (a void
// charged to it), one hands it to the rest and keeps its root from the
// successor too (the others hand the root on, then relay the batch); and a
// silent primary. Drawn only when RIFFLE_SWARM_HOSTILE names them, so
// that the seeds of make test and make swarm draw as before.
var swarmRelayHostiles = []swarmHostile{
	{"refuse-successor", true, func(w *swarm, i int) func() {
		return insiderHooks(w, i, &serverHooks{refuseSucc: func(uint32) bool { return true }})
	}},
	{"withhold-batch", true, func(w *swarm, i int) func() {
		return insiderHooks(w, i, &serverHooks{hideOut: func(uint32) bool { return true }})
	}},
	{"withhold-root", true, func(w *swarm, i int) func() {
		return insiderHooks(w, i, &serverHooks{refuseSucc: func(uint32) bool { return true },
			rootTo: func(_ uint32, _ peer.ID, receiver bool) bool { return !receiver }})
	}},
	// As a primary it keeps every onion it receipts from S_0 and answers
	// no ask for its dry statements or its account (a silent primary,
	// TestHeldOnionEndsUncharged "says nothing").
	{"silent-primary", true, func(w *swarm, i int) func() {
		all := func([32]byte, uint32) bool { return true }
		return insiderHooks(w, i, &serverHooks{holdSubs: all, drySilent: all})
	}},
}

// insiderHooks sets h on server i for the hostile's time.
func insiderHooks(w *swarm, i int, h *serverHooks) func() {
	s := w.servers[i].s()
	s.hooks.Store(h)
	return func() { s.hooks.Store(nil) }
}

// hostileAhead: outsiders vote numbers ahead of a founded group before
// its first epoch (TestOutsidersCertifyAhead).
var hostileAhead = swarmHostile{"certify-ahead", false, func(w *swarm, _ int) func() { return outsiderTimeoutVotes(w) }}

// startHostile starts h for 5 to 45 s; it reports whether it did (an
// insider drawn on a server that is down or under a fault waits).
func (w *swarm) startHostile(h swarmHostile) bool {
	i := -1
	if h.insider {
		i = w.hrng.IntN(len(w.servers))
	}
	until := time.Now().Add(time.Duration(5+w.hrng.IntN(40)) * time.Second)
	if i >= 0 {
		w.mu.Lock()
		down := w.down[i]
		w.mu.Unlock()
		if down || w.servers[i].s() == nil {
			return false
		}
		w.markBad(i)
	}
	w.mu.Lock()
	w.hostileRuns++
	w.mu.Unlock()
	w.logf("hostile: %s (s%d) until %.1fs", h.name, i, until.Sub(w.start).Seconds())
	w.hostile = &hostileRun{name: h.name, until: until, stop: h.start(w, i)}
	return true
}

func (w *swarm) endHostile() {
	h := w.hostile
	h.stop()
	w.hostile = nil
	w.logf("hostile ends: %s", h.name)
}

func (w *swarm) markBad(i int) {
	w.mu.Lock()
	w.bad[i] = true
	w.mu.Unlock()
}

// outsiderHelloChurn: every half step 32 fresh ids say hello as servers
// to every server and go, answering nothing (issue 25 point 7): none of
// them is in a chain (probation; the check holds every certificate's
// chain to the swarm's servers), and each roster stays within maxRoster.
func outsiderHelloChurn(w *swarm) func() {
	return outsiderLoop(w, func(ctx context.Context) {
		for range 32 {
			h, err := w.net.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
			if err != nil {
				w.fail("outsider host: %v", err)
			}
			hl := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte("outsider")}
			for _, a := range h.Addrs() {
				hl.Addrs = append(hl.Addrs, a.Bytes())
			}
			for _, sv := range w.servers {
				if s := sv.s(); s != nil {
					h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
					transport.Call(ctx, h, sv.id, transport.Request{Proto: ProtoRoster, Type: wire.TypeHello, Body: hl.Marshal(), Timeout: transport.ShortTimeout})
				}
			}
			h.Close()
		}
		for i, sv := range w.servers {
			if s := sv.s(); s != nil {
				n := s.roster.Len()
				if n > maxRoster {
					w.logf("s%d: %d roster members", i, n)
					w.t.Errorf("seed %d: s%d holds %d roster members, over %d", w.seed, i, n, maxRoster)
				}
			}
		}
	})
}

// insiderHoldOpen: server i, as leader, opens its epochs and never closes
// their registration (TestLeaderHoldsOpen).
func insiderHoldOpen(w *swarm, i int) func() {
	s := w.servers[i].s()
	s.hooks.Store(&serverHooks{holdOpen: func() bool { return true }})
	return func() { s.hooks.Store(nil) }
}

// insiderPrepareRefuser: server i restarts with another client cap than
// the group's, so that it refuses every Prepare, and back with the
// group's at the end (TestPrepareRefuser).
func insiderPrepareRefuser(w *swarm, i int) func() {
	sv := w.servers[i]
	sv.s().Crash()
	w.restarted(i, "restart as a Prepare refuser")
	cfg := sv.cfg
	cfg.Params.MaxClients *= 2
	s, err := NewServer(w.ctx, cfg)
	if err != nil {
		w.fail("restart of s%d as a Prepare refuser: %v", i, err)
	}
	sv.cur.Store(s)
	return func() {
		if sv.s() != s {
			return // a crash restarted it meanwhile, with the group's cap
		}
		s.Crash()
		w.restarted(i, "restart with the group's cap")
		s, err := NewServer(w.ctx, sv.cfg)
		if err != nil {
			w.fail("restart of s%d: %v", i, err)
		}
		sv.cur.Store(s)
	}
}

// restarted notes a hostile's restart of server i: the epochs it was in
// break there, as at a crash.
func (w *swarm) restarted(i int, kind string) {
	now := time.Now()
	w.mu.Lock()
	w.spans = append(w.spans, swarmSpan{server: i, kind: kind, from: now, to: now})
	w.mu.Unlock()
}

// insiderEarly: S_0 of an epoch in its rounds signs a "no publication"
// abort, or proposes a void, for a round not yet due
// (TestEarlyNoPubCharged): it is charged, the last server never. Once a
// run.
func insiderEarly(w *swarm, kind string) func() {
	done := false
	return pollLoop(w, 20*time.Millisecond, func(context.Context) {
		for i, sv := range w.servers {
			s := sv.s()
			w.mu.Lock()
			down := w.down[i]
			w.mu.Unlock()
			if done || s == nil || down {
				continue
			}
			s.mu.Lock()
			var e *sepoch
			for _, x := range s.epochs {
				if x.final != nil && x.setupDone && !x.ended && x.listHigh >= 1 && x.final.Chain[0] == sv.id {
					e = x
					break
				}
			}
			if e == nil {
				s.mu.Unlock()
				continue
			}
			q := e.listHigh + uint32(e.final.Desc.Params.W) + roundsAhead - 1
			if q >= e.final.Desc.Params.Rounds {
				s.mu.Unlock()
				continue
			}
			w.markBad(i)
			done = true
			w.mu.Lock()
			w.framed = append(w.framed, framedLast{kind, e.v.Desc.Number, q, e.final.Chain[len(e.final.Chain)-1]})
			w.mu.Unlock()
			w.logf("s%d: early %s of round %d of number %d", i, kind, q, e.v.Desc.Number)
			if kind == "abort" {
				s.endNoPub(e, q, fmt.Sprintf("round %d: no publication", q))
				s.mu.Unlock()
			} else {
				s.mu.Unlock()
				s.voidRound(e, q)
			}
		}
	})
}

// TestSwarmChargeRule checks the rule judgeCharges holds the swarm's
// charges of honest servers to, on a made-up schedule (no network): s0
// lossy from 10 s to 20 s, s1 restarted at 100 s, s2 and s3 never
// touched.
func TestSwarmChargeRule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w := &swarm{start: t0, p: testParams(8), servers: make([]*swarmServer, 4), spans: []swarmSpan{
		{server: 0, kind: "lossy", from: at(10), to: at(20)},
		{server: 1, kind: "restart", from: at(100), to: at(100)},
	}}
	settle := int(w.swarmSettle() / time.Second)
	all := map[int]bool{0: true, 1: true, 2: true, 3: true}
	for _, c := range []struct {
		name     string
		j        int
		own      bool
		chain    map[int]bool
		from, to int
		holds    bool
	}{
		{"the lossy server itself, attested", 0, false, all, 15, 30, true},
		{"the lossy server, an epoch after its settle", 0, false, all, 20 + settle + 1, 60, false},
		{"its own abort, the lossy server in the chain", 2, true, all, 15, 30, true},
		{"its own abort, an epoch within the settle", 2, true, all, 20 + settle - 1, 60, true},
		{"its own abort, the lossy server not in the chain", 2, true, map[int]bool{1: true, 2: true, 3: true}, 15, 30, false},
		{"its own abort, no fault then", 2, true, all, 50, 90, false},
		{"its own abort, a restart in the chain", 3, true, all, 90, 101, true},
		{"attested, a fault in its chain", 2, false, all, 15, 30, false},
		{"its own abort, chain unknown", 2, true, nil, 15, 30, true},
	} {
		_, got := w.chargeHolds(c.j, c.own, c.chain, at(c.from), at(c.to))
		if got != c.holds {
			t.Errorf("%s: holds %v, want %v", c.name, got, c.holds)
		}
	}
}
