package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// The swarm: seeded, reproducible runs of a whole network in virtual time
// under a random schedule of faults (kill -9 and restart, partitions, slow
// and lossy links), checking after every step that no honest party is
// excluded or struck, that epochs keep completing once the faults end,
// that each server's memory stays bounded, and at the end that every
// acknowledged file comes back byte-exact through every server.
//
// `go test -run TestSwarm ./node/` runs swarmCISeeds; RIFFLE_SWARM_SEEDS=N
// runs seeds 1..N (make swarm), RIFFLE_SWARM_SEED=S replays one, and
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

// swarmCISeeds are the seeds `make test` runs: a quick one that found
// nothing, and each seed that found a fault, once it is fixed. `make swarm`
// runs the others.
//
// Seed 3 (a server out of the chains of epochs after a lossy link never
// got their files: server catch-up, catchup.go) is out of this list while
// it fails about one run in five under load ("acknowledged file not
// fetched through server 2"; RIFFLE_SWARM_SEED=3 replays it): a finding
// open in issue 23.
var swarmCISeeds = []uint64{1,
	6, // one open-descriptor signature lost to a lossy link held the group at its number for good: the leader aborts (TestOpenSignatureLost)
}

func swarmSeeds(t *testing.T) []uint64 {
	if s := os.Getenv("RIFFLE_SWARM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RIFFLE_SWARM_SEED=%q: %v", s, err)
		}
		return []uint64{v}
	}
	if s := os.Getenv("RIFFLE_SWARM_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("RIFFLE_SWARM_SEEDS=%q: want a count", s)
		}
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(i + 1)
		}
		return out
	}
	return swarmCISeeds
}

func TestSwarm(t *testing.T) {
	long(t)
	for _, seed := range swarmSeeds(t) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// Seeds share nothing but the process: run them side by side.
			t.Parallel()
			start := time.Now()
			synctest.Test(t, func(t *testing.T) { runSwarm(t, seed) })
			t.Logf("seed %d: %v of wall time", seed, time.Since(start).Round(time.Millisecond))
		})
	}
}

// swarm is one seeded run.
type swarm struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
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
}

type swarmServer struct {
	cfg  ServerConfig
	s    *Server // nil while down
	id   peer.ID
	addr string
}

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
	w.t.Fatalf("seed %d: %s\nevents:\n%s\nreplay: RIFFLE_SWARM_SEED=%d go test -count=1 -run 'TestSwarm' ./node/",
		w.seed, fmt.Sprintf(format, args...), ev, w.seed)
}

func runSwarm(t *testing.T, seed uint64) {
	w := &swarm{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), start: time.Now()}
	w.net = memnet.New(memnet.Link{Latency: time.Millisecond}, seed)
	m, n := 3+w.rng.IntN(3), 4+w.rng.IntN(9)
	if os.Getenv("RIFFLE_SWARM_BIG") != "" {
		m, n = 3+w.rng.IntN(6), 8+w.rng.IntN(57)
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

	var peers []string
	for i := range m {
		cfg := ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, Peers: append([]string(nil), peers...),
			Nick: fmt.Sprintf("s%d", i), MinServers: DefaultMinServers, MinClients: 2, NoLAN: true, Params: w.p,
			Logger: anonLogger(), Network: w.net}
		s, err := NewServer(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		addr := s.Addrs()[0]
		// A restart listens where the server did.
		cfg.Listen = []string{strings.TrimSuffix(addr.String(), "/p2p/"+s.ID().String())}
		w.servers = append(w.servers, &swarmServer{cfg: cfg, s: s, id: s.ID(), addr: addr.String()})
		peers = append(peers, addr.String())
	}
	// Every server knows every other, so that a restart finds the group.
	for _, sv := range w.servers {
		sv.cfg.Peers = peers
	}
	for i := range n {
		c, err := NewClient(ctx, ClientConfig{MinAnonymity: 1, Now: true, Server: peers[i%m], Logger: anonLogger(), Network: w.net,
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
		w.check()
		if step%10 == 0 {
			w.t.Logf("step %d/%d at %v: %d epochs, %d faults in force", step, steps, now.Sub(w.start).Round(time.Second), w.epochs(), len(faults))
		}
		// Liveness: epochs complete once the faults have ended.
		if e := w.epochs(); e > lastEpochs {
			lastEpochs, lastProgress = e, now
		}
		if len(faults) == 0 && now.Sub(lastFault) > swarmProgress && now.Sub(lastProgress) > swarmProgress {
			w.fail("no epoch completed for %v, %v after the last fault ended", now.Sub(lastProgress), now.Sub(lastFault))
		}
	}
	for _, f := range faults {
		w.endFault(f)
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
	t.Logf("seed %d: m=%d n=%d R=%d, %d epochs in %v of virtual time: %d shares acknowledged of %d (%d warned incomplete), %d gets, %d faults, %d restarts",
		seed, m, n, w.p.Rounds, w.epochs(), time.Since(w.start).Round(time.Second), len(w.acked), w.shares, w.warned, w.gets, w.faults, w.restarts)
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
		if sv.s != nil {
			sv.s.Close()
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
func (w *swarm) get() {
	w.mu.Lock()
	if len(w.acked) == 0 {
		w.mu.Unlock()
		return
	}
	f := w.acked[w.rng.IntN(len(w.acked))]
	w.gets++
	w.mu.Unlock()
	by := (f.by + 1 + w.rng.IntN(len(w.clients)-1)) % len(w.clients)
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
		sv.s.Crash()
		sv.s = nil
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
		sv.s = s
		w.restarts++
	case "partition":
		w.net.Heal()
	case "slow", "lossy":
		w.setLinks(sv.id, memnet.Link{Latency: time.Millisecond})
	}
	w.logf("fault ends: %s of s%d", f.kind, f.server)
}

// check holds the invariants every step: no honest server named a culprit
// or client refused (every party of the swarm is honest), and bounded
// memory and disk.
func (w *swarm) check() {
	for i, a := range w.servers {
		if a.s == nil {
			continue
		}
		for j, b := range w.servers {
			if i != j && a.s.serverExcluded(b.id) {
				w.fail("s%d excludes honest s%d as a culprit", i, j)
			}
		}
		if b := a.s.Banned(); len(b) > 0 {
			w.fail("s%d refuses %d honest clients", i, len(b))
		}
		if pb := a.s.PoolBytes(); pb > swarmPoolMax {
			w.fail("s%d holds %d B of free round buffers", i, pb)
		}
		if kept, prep := a.s.EpochsHeld(); kept+prep > swarmEpochsMax {
			w.fail("s%d holds %d epochs and %d prepared", i, kept, prep)
		}
		if d := dirBytes(a.cfg.DataDir); d > swarmDiskMax {
			w.fail("s%d's data directory holds %d B", i, d)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > swarmHeapMax {
		w.fail("the process holds %d B of heap", ms.HeapInuse)
	}
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

// swarmOutsiders is the catalog the swarm draws from: every strategy in
// it leaves an honest group live and every honest party unnamed. The
// strategies of swarmOpen, found by review and not yet defended (issue
// 25's control-plane log), run only with RIFFLE_SWARM_OPEN=1.
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

// swarmControl are the control-plane attacks of issue 25 that are
// defended (docs/testing.md, "Attacks on the control plane"), drawn only
// with RIFFLE_SWARM_CONTROL=1 so that the seeds' schedules of the other
// kinds stay as they were.
var swarmControl = []swarmOutsider{
	{"timeout-votes", outsiderTimeoutVotes},
}

func init() {
	if os.Getenv("RIFFLE_SWARM_CONTROL") != "" {
		swarmOutsiders = append(swarmOutsiders, swarmControl...)
	}
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
				if sv.s == nil {
					continue
				}
				v.h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
				call(ctx, v.h, sv.id, request{Proto: ProtoRoster, Type: wire.TypeHello, Body: hello(v.h), Timeout: shortTimeout})
				top := sv.s.certTop()
				for n := top + 1; n <= top+8; n++ {
					chain := []peer.ID{v.h.ID(), sv.id}
					sortChain(chain)
					if leaderOf(n, chain) == v.h.ID() {
						continue
					}
					ids := chainIDs(chain)
					sig, err := sign(v.priv, timeoutDigest(n, ids))
					if err != nil {
						continue
					}
					pos := uint16(0)
					if chain[1] == v.h.ID() {
						pos = 1
					}
					vote := wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: ids, Sigs: []wire.CertSig{{Index: pos, Sig: sig}}}
					call(ctx, v.h, sv.id, request{Proto: ProtoEpoch, Type: wire.TypeTimeoutVote, Body: vote.Marshal(), Timeout: shortTimeout})
				}
			}
		}
		for i, sv := range w.servers {
			if sv.s == nil {
				continue
			}
			sv.s.cert.mu.Lock()
			var bad []uint64
			for n, b := range sv.s.cert.certs {
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
			sv.s.cert.mu.Unlock()
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
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(swarmStep / 2):
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
			if sv.s == nil {
				continue
			}
			h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
			for range 8 {
				st, err := h.NewStream(ctx, sv.id, ProtoClient)
				if err != nil {
					return
				}
				hd := []byte{byte(wire.TypeSubmit), 0, 0, 0, 0}
				binary.BigEndian.PutUint32(hd[1:], uint32(sv.s.clientCaps(wire.TypeSubmit)))
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
		var g gate
		serve(w.ctx, h, &g, quietLogger(), ProtoRoster, shortTimeout, func(peer.ID, wire.Type) int { return 64 << 10 },
			func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, []byte, error) {
				return wire.TypeHello, hello(), nil
			})
		hosts = append(hosts, h)
	}
	stop := outsiderLoop(w, func(ctx context.Context) {
		for _, h := range hosts {
			for _, sv := range w.servers {
				if sv.s == nil {
					continue
				}
				h.AddAddrs(sv.id, []ma.Multiaddr{ma.StringCast(sv.cfg.Listen[0])}, time.Hour)
				hl := &wire.Hello{Version: ProtocolVersion, Role: roleServer, Nick: []byte("outsider")}
				for _, a := range h.Addrs() {
					hl.Addrs = append(hl.Addrs, a.Bytes())
				}
				call(ctx, h, sv.id, request{Proto: ProtoRoster, Type: wire.TypeHello, Body: hl.Marshal(), Timeout: shortTimeout})
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

// where says which servers hold a file's root manifest and index it.
func (w *swarm) where(f swarmFile) string {
	var b strings.Builder
	for i, sv := range w.servers {
		if sv.s == nil {
			fmt.Fprintf(&b, "s%d down\n", i)
			continue
		}
		held, err := sv.s.store.HasChunk(f.link.ID)
		idx, ierr := sv.s.store.Index()
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
