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
)

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
	if len(down.Inspect().PausedJobs()) != 0 {
		t.Fatal("a job still paused")
	}
}
