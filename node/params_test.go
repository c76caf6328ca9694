package node

import (
	"strings"
	"testing"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestCheckParams: the defaults fit; parameters whose PIR work (§9) cannot
// fit the round limit at the assumed XOR rate are refused, naming the work.
func TestCheckParams(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		if err := proto.CheckParams(DefaultParams().Wire(), DefaultPIRRate); err != nil {
			t.Fatalf("defaults refused: %v", err)
		}
		p := DefaultParams()
		p.MaxClients, p.K, p.MaxRows, p.ChunkSize = 4096, 16, 1<<16, 4<<20
		err := proto.CheckParams(p.Wire(), DefaultPIRRate)
		if err == nil || !strings.Contains(err.Error(), "PIR work") {
			t.Fatalf("oversized PIR work accepted: %v", err)
		}
		// Work of about a minute passes with a round limit long enough
		// for it, and no limit above MaxRoundLimitMs passes.
		p.MaxClients, p.K, p.MaxRows, p.ChunkSize = 4096, 1, 1<<10, 1<<20
		need := proto.PIRWork(int(p.MaxClients), int(p.K), int(p.MaxRows), int(p.ChunkSize)) / DefaultPIRRate
		if need < 10 || need*1000 > MaxRoundLimitMs-1000 {
			t.Fatalf("the work of %.0f s is not between 10 s and the ceiling", need)
		}
		if proto.CheckParams(p.Wire(), DefaultPIRRate) == nil {
			t.Fatalf("work of %.0f s accepted in a round limit of %d ms", need, p.RoundLimitMs)
		}
		p.RoundLimitMs = uint32(need*1000) + 1000
		if err := proto.CheckParams(p.Wire(), DefaultPIRRate); err != nil {
			t.Fatalf("work that fits refused: %v", err)
		}
		for _, ms := range []uint32{MinRoundLimitMs, MaxRoundLimitMs} {
			q := DefaultParams()
			q.MaxRows = 8 // PIR work that fits the shortest limit
			q.RoundLimitMs = ms
			if err := proto.CheckParams(q.Wire(), DefaultPIRRate); err != nil {
				t.Fatalf("round limit %d ms refused: %v", ms, err)
			}
		}
		// The pace's range is closed at both ends.
		for _, iv := range []uint32{MinRoundIntervalMs, MaxRoundIntervalMs} {
			q := DefaultParams()
			q.RoundIntervalMs = iv
			if err := proto.CheckParams(q.Wire(), DefaultPIRRate); err != nil {
				t.Fatalf("round interval %d ms refused: %v", iv, err)
			}
		}
		for _, bad := range []func(*Params){
			func(p *Params) { p.ChunkSize = 100 },
			func(p *Params) { p.K = 0 },
			func(p *Params) { p.Rounds = MaxRounds + 1 },
			func(p *Params) { p.W = 0 },
			func(p *Params) { p.MaxRows = 0 },
			func(p *Params) { p.MaxClients = MinClientCap - 1 }, // (v3) no n−1 by a small cap
			func(p *Params) { p.RoundIntervalMs = 0 },           // a group without a pace
			func(p *Params) { p.RoundIntervalMs = MinRoundIntervalMs - 1 },
			func(p *Params) { p.RoundIntervalMs = MaxRoundIntervalMs + 1 },
			func(p *Params) { p.RoundLimitMs = MinRoundLimitMs - 1 },
			// A leader's limit of hours would hold every round it stalls.
			func(p *Params) { p.RoundLimitMs = MaxRoundLimitMs + 1 },
			func(p *Params) { p.RoundLimitMs = 1 << 30 },
		} {
			q := DefaultParams()
			bad(&q)
			if proto.CheckParams(q.Wire(), DefaultPIRRate) == nil {
				t.Fatalf("bad parameters accepted: %+v", q)
			}
		}
	})
}
