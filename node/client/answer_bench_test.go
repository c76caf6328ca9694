package client

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/node/transport/memnet"
)

// answerMax is the cap of a PIR answer at k = 1, b = 256 KiB.
const answerMax = 64 + 1*(8+256<<10)

// answerNet starts a server on the in-memory network that answers every
// PIR query with answerMax bytes. run makes each step's queries at once
// (askPIR with the free list free), as a client's rounds do when their
// answers overlap or not; the queries of a step read their answers only
// once each holds its buffer, so that those of a pair overlap.
func answerNet(tb testing.TB) (run func(free chan []byte, steps []int)) {
	n := memnet.New(memnet.Link{}, 1)
	srv, err := n.NewHost(nil, []string{"/ip4/127.0.0.1/tcp/0"})
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := n.NewHost(nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cl.AddAddrs(srv.ID(), srv.Addrs(), time.Hour)
	answer := make([]byte, answerMax)
	for i := range answer {
		answer[i] = byte(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	caps := func(peer.ID, wire.Type) int { return 1 << 10 }
	transport.ServeSegments(ctx, srv, &transport.Gate{}, slog.New(slog.NewTextHandler(io.Discard, nil)), transport.ProtoPIR, time.Minute, caps,
		nil, func(context.Context, peer.ID, wire.Type, []byte) (wire.Type, [][]byte, error) {
			return wire.TypeAnswer, [][]byte{answer[:answerMax/2], answer[answerMax/2:]}, nil
		})
	var step sync.WaitGroup // the step's queries that hold no buffer yet
	held := func() {
		step.Done()
		step.Wait()
	}
	call := func(ctx context.Context, r transport.Request) ([]byte, error) {
		if r.Bufs == nil { // read into a buffer it already holds
			held()
			return transport.Call(ctx, cl, srv.ID(), r)
		}
		get := r.Bufs.Get
		first := true
		r.Bufs = &wire.Buffers{Get: func(n int) []byte {
			b := get(n)
			if first {
				first = false
				held()
			}
			return b
		}, Put: r.Bufs.Put}
		return transport.Call(ctx, cl, srv.ID(), r)
	}
	query := make([]byte, 100)
	return func(free chan []byte, steps []int) {
		for _, s := range steps {
			step.Add(s)
			var wg sync.WaitGroup
			for range s {
				wg.Go(func() {
					rep, release, err := askPIR(ctx, call, free, query, answerMax)
					defer release()
					if err != nil || len(rep) != answerMax || rep[answerMax-1] != answer[answerMax-1] {
						tb.Errorf("answer of %d bytes: %v", len(rep), err)
					}
				})
			}
			wg.Wait()
		}
	}
}

// TestAnswerBuffersReused: answers read alone, in overlapping pairs and a
// pair then one alone reuse the epoch's free list: past the first
// answers, a client allocates nothing of an answer's size, and the list
// holds at most queriesInFlight buffers of the answer's cap.
func TestAnswerBuffersReused(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's own allocations swamp the count; the full pass runs it")
	}
	run := answerNet(t)
	free := make(chan []byte, queriesInFlight)
	steps := []int{1, 2, 1, 2, 2, 1}
	run(free, steps)
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	const times = 10
	for range times {
		run(free, steps)
	}
	runtime.ReadMemStats(&b)
	per := (b.TotalAlloc - a.TotalAlloc) / uint64(times*9)
	t.Logf("%d bytes allocated an answer of %d bytes", per, answerMax)
	if per > answerMax/8 {
		t.Fatalf("%d bytes allocated an answer of %d bytes: its buffer is not reused", per, answerMax)
	}
	if len(free) > queriesInFlight {
		t.Fatalf("%d free answer buffers", len(free))
	}
	for range len(free) {
		if b := <-free; len(b) != answerMax {
			t.Fatalf("a free answer buffer of %d bytes", len(b))
		}
	}
}

// BenchmarkAnswerRead reads PIR answers of k = 1, b = 256 KiB through one
// epoch's free list, alone, in an overlapping pair and a pair then one
// alone (answerNet): what a client allocates per answer.
func BenchmarkAnswerRead(b *testing.B) {
	run := answerNet(b)
	for _, bc := range []struct {
		name  string
		steps []int
	}{{"alone", []int{1}}, {"pair", []int{2}}, {"pair-then-alone", []int{2, 1}}} {
		b.Run(bc.name, func(b *testing.B) {
			free := make(chan []byte, queriesInFlight)
			answers := 0
			for _, s := range bc.steps {
				answers += s
			}
			b.SetBytes(int64(answers * answerMax))
			b.ReportAllocs()
			for b.Loop() {
				run(free, bc.steps)
			}
		})
	}
}
