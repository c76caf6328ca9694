//go:build riffletest

package node

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/store"
)

// TestJobEpochsCount (§5.4 v3): a job counts the epochs in which it sent
// real traffic, each once however many rounds; within its allowance it
// goes on, a new epoch beyond it pauses it (its chunks are skipped, a job
// queued behind it still goes), and a resume allows J more.
func TestJobEpochsCount(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		c := &Client{cfg: ClientConfig{ClientHookCfg: ClientHookCfg{JobEpochs: 3}}}
		if ep := c.newJobEpochs(0); ep.limit != 3 {
			t.Fatalf("default allowance %d, want J = 3", ep.limit)
		}
		if ep := c.newJobEpochs(7); ep.limit != 3 {
			t.Fatalf("allowance above J: %d, want 3", ep.limit)
		}
		if ep := (&Client{}).newJobEpochs(0); ep.limit != JobEpochs {
			t.Fatalf("allowance %d, want JobEpochs", ep.limit)
		}
		long := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{}), ep: c.newJobEpochs(2)}
		other := &shareJob{left: map[[32]byte]bool{}, done: make(chan struct{}), ep: c.newJobEpochs(0)}
		for i := 0; i < 10; i++ {
			c.upQ = append(c.upQ, upItem{c: store.Chunk{ID: [32]byte{1, byte(i)}}, job: long})
		}
		c.upQ = append(c.upQ, upItem{c: store.Chunk{ID: [32]byte{2}}, job: other})
		epoch := func(n byte) *cepoch { return &cepoch{v: &view{ID: [32]byte{n}}, ups: map[uint32]*upItem{}} }
		// Two chunks in each of epochs 1 and 2: two epochs counted.
		for n := byte(1); n <= 2; n++ {
			e := epoch(n)
			for r := uint32(0); r < 2; r++ {
				if u := sendRound(c, e, r); u == nil || u.job != long {
					t.Fatalf("epoch %d round %d: the long job's chunk did not go", n, r)
				}
			}
		}
		if long.ep.used != 2 || long.ep.paused {
			t.Fatalf("after 2 epochs: used %d paused %v", long.ep.used, long.ep.paused)
		}
		// Epoch 3 would be its third: it pauses; the other job goes on.
		e3 := epoch(3)
		if u := sendRound(c, e3, 0); u == nil || u.job != other {
			t.Fatal("epoch 3: the job queued behind the paused one did not go")
		}
		if u := sendRound(c, e3, 1); u != nil {
			t.Fatal("epoch 3: a paused job's chunk went out")
		}
		if !long.ep.paused || long.ep.used != 2 {
			t.Fatalf("not paused: used %d", long.ep.used)
		}
		c.mu.Lock()
		p := c.pausedJobs()
		c.mu.Unlock()
		if len(p) != 1 || p[0].Kind != "share" || p[0].Epochs != 2 || !strings.Contains(p[0].Reason, "sent real traffic in 2 epochs") {
			t.Fatalf("paused jobs: %+v", p)
		}
		c.changed = make(chan struct{})
		if n := c.Resume(""); n != 1 {
			t.Fatalf("resumed %d jobs, want 1", n)
		}
		if long.ep.paused || long.ep.limit != 2+3 {
			t.Fatalf("after resume: paused %v, allowance %d, want 5", long.ep.paused, long.ep.limit)
		}
		if u := sendRound(c, e3, 2); u == nil || u.job != long || long.ep.used != 3 {
			t.Fatal("resumed job did not go on")
		}
		if n := c.Resume(""); n != 0 {
			t.Fatalf("resumed %d jobs, none paused", n)
		}
	})
}

// TestLongJobPauses (§5.4 v3), end to end with J = 1: a get whose file
// needs more than one epoch of requests asks for chunks in one epoch, then
// pauses, says why, and requests nothing (its slot carries cover) for the
// epochs it waits; resumed, it finishes with the file's bytes.
func TestLongJobPauses(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	long(t)
	tn := startAnonNet(t, 3, 1, 2, testParams(8), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := tn.clients[0]
	var mu sync.Mutex
	reqEpochs := map[[32]byte]int{} // requests of the get's job, by epoch
	var order [][32]byte            // epochs in the order first seen
	o := &ClientObserver{Requested: func(epoch [32]byte, _ uint32, ids [][32]byte) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := reqEpochs[epoch]; !ok {
			order = append(order, epoch)
		}
		reqEpochs[epoch] += len(ids)
	}}
	down, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger(), ClientHookCfg: ClientHookCfg{Observe: o, JobEpochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	// 24 data chunks; k = 2 requests a round, 8 rounds: more than an
	// epoch of requests.
	data := anonRand(t, 24*(16<<10)-300)
	link, err := up.Share(ctx, bytes.NewReader(data), "long.bin", false)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var lmu sync.Mutex
	gctx := WithProgress(ctx, func(e JobEvent) {
		lmu.Lock()
		lines = append(lines, e.Line())
		lmu.Unlock()
	})
	type res struct {
		path string
		err  error
	}
	done := make(chan res, 1)
	go func() {
		p, err := down.Get(gctx, link, t.TempDir())
		done <- res{p, err}
	}()
	// Paused, and said so.
	until(t, ctx, 90*time.Second, func() bool { return len(down.Status().Paused) == 1 }, "the get did not pause")
	st := down.Status().Paused[0]
	if st.Kind != "get" || st.Epochs != 1 || st.ID != link.ID.String() {
		t.Fatalf("paused job %+v", st)
	}
	until(t, ctx, 10*time.Second, func() bool {
		lmu.Lock()
		defer lmu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "paused: this job sent real traffic in 1 epochs") && strings.Contains(l, "riffle resume "+link.ID.String()) {
				return true
			}
		}
		return false
	}, "no progress line says the job paused and what to run")
	// Two more epochs go by while it waits: no request of the job.
	mu.Lock()
	seen := len(order)
	mu.Unlock()
	until(t, ctx, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= seen+2
	}, "no two epochs while paused")
	mu.Lock()
	with := 0
	for _, e := range order {
		if reqEpochs[e] > 0 {
			with++
		}
	}
	mu.Unlock()
	if with != 1 {
		t.Fatalf("the job requested chunks in %d epochs, J = 1 (and paused)", with)
	}
	select {
	case r := <-done:
		t.Fatalf("get ended while paused: %v", r.err)
	default:
	}
	// Resumed the way `riffle resume` does it through the local API
	// (GET /api/client, POST /api/resume): the status lists the paused
	// job.
	cst := down.Status()
	if len(cst.Paused) != 1 || cst.Paused[0].ID != link.ID.String() {
		t.Fatalf("client status: %+v", cst)
	}
	if n := down.Resume(link.ID.String()); n != 1 {
		t.Fatalf("resumed %d jobs", n)
	}
	// J = 1 more epoch at each resume: the job may pause again before
	// it is done, and is resumed again.
	var r res
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	resumes := 1
	for got := false; !got; {
		select {
		case r = <-done:
			got = true
		case <-tick.C:
			if down.Resume("") > 0 {
				resumes++
			}
		case <-ctx.Done():
			t.Fatal("resumed get did not finish")
		}
	}
	t.Logf("resumed %d times", resumes)
	if r.err != nil {
		t.Fatal(r.err)
	}
	got, err := os.ReadFile(r.path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched file differs (%v)", err)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	if len(down.pausedJobs()) != 0 {
		t.Fatal("a job still paused")
	}
}

// until fails t with msg unless cond holds within timeout.
func until(t *testing.T, ctx context.Context, timeout time.Duration, cond func() bool, msg string) {
	t.Helper()
	if err := wait.Until(ctx, timeout, cond); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
}
