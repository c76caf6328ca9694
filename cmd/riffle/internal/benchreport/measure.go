package benchreport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// SetupPoint is one epoch setup (docs/proto-shuffle.md) timed in this
// process: Prove[s] is server s's SetupStep plus encoding, Verify[s] one
// other server parsing and verifying it. Critical is Σ (prove + verify),
// the setup's length when the servers are separate machines (the m−1
// verifications of a step run at once); AllInOne is Σ (prove + (m−1)·
// verify), its length when every server shares this machine.
type SetupPoint struct {
	Servers, Clients   int
	Prove, Verify      []time.Duration
	Critical, AllInOne time.Duration
}

// MeasureSetup runs a whole setup of m servers over n fresh registrations
// by calling mix's setup functions directly, as the node does.
func MeasureSetup(m, n int) (SetupPoint, error) {
	var epoch mix.EpochID
	if _, err := rand.Read(epoch[:]); err != nil {
		return SetupPoint{}, err
	}
	sks := make([]*mix.ServerSecret, m)
	X := make([]*group.Element, m)
	for s := range m {
		var err error
		if sks[s], err = mix.NewServerSecret(rand.Reader); err != nil {
			return SetupPoint{}, err
		}
		defer sks[s].Close()
		X[s] = sks[s].Public()
	}
	regs := make([]*mix.Registration, n)
	for i := range regs {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return SetupPoint{}, err
		}
		cs, reg, err := mix.Register(epoch, pub, X, rand.Reader)
		if err != nil {
			return SetupPoint{}, fmt.Errorf("register: %w", err)
		}
		cs.Close()
		// Servers receive registrations as bytes and parse them.
		enc, err := reg.MarshalBinary()
		if err != nil {
			return SetupPoint{}, err
		}
		if regs[i], err = mix.ParseRegistration(enc, m); err != nil {
			return SetupPoint{}, err
		}
	}
	p := SetupPoint{Servers: m, Clients: n, Prove: make([]time.Duration, m), Verify: make([]time.Duration, m)}
	in := mix.InitialVectors(regs)
	for s := range m {
		t0 := time.Now()
		res, sec, err := mix.SetupStep(epoch, s, X, sks[s], in, rand.Reader)
		if err != nil {
			return p, fmt.Errorf("setup step %d: %w", s, err)
		}
		enc, err := res.MarshalBinary()
		if err != nil {
			return p, err
		}
		p.Prove[s] = time.Since(t0)
		sec.Close()
		t1 := time.Now()
		pub, err := mix.ParseStepResult(enc, n, m, s)
		if err != nil {
			return p, fmt.Errorf("parse step %d: %w", s, err)
		}
		if err := mix.VerifyStep(epoch, s, X, in, pub, rand.Reader); err != nil {
			return p, fmt.Errorf("verify step %d: %w", s, err)
		}
		p.Verify[s] = time.Since(t1)
		p.Critical += p.Prove[s] + p.Verify[s]
		p.AllInOne += p.Prove[s] + time.Duration(m-1)*p.Verify[s]
		in = pub.Next()
	}
	return p, nil
}

// PIRPoint is one PIR round answered by the engine and by the reference:
// Q queries over L rows of B bytes, answers per second.
type PIRPoint struct {
	Q, L, B             int
	Engine, Reference   float64
	EngineT, ReferenceT time.Duration
}

// MeasurePIR answers Q random queries over L random rows of b bytes with
// pir's engine (all cores) and with its reference (one core).
func MeasurePIR(ctx context.Context, Q, L, b int) (PIRPoint, error) {
	db := make(pir.SliceRows, L)
	for i := range db {
		db[i] = make([]byte, b)
		rand.Read(db[i])
	}
	masks, out := make([][]byte, Q), make([][]byte, Q)
	for q := range masks {
		masks[q] = make([]byte, pir.MaskBytes(L))
		rand.Read(masks[q])
		if r := L % 8; r != 0 {
			masks[q][len(masks[q])-1] &= byte(1)<<r - 1
		}
		out[q] = make([]byte, b)
	}
	p := PIRPoint{Q: Q, L: L, B: b}
	e := pir.NewEngine(pir.Options{})
	// One round to warm the engine's scratch, then the timed one.
	if err := e.AnswerContext(ctx, db, b, masks, out); err != nil {
		return p, err
	}
	t0 := time.Now()
	if err := e.AnswerContext(ctx, db, b, masks, out); err != nil {
		return p, err
	}
	p.EngineT = time.Since(t0)
	t1 := time.Now()
	if err := pir.Reference(db, b, masks, out); err != nil {
		return p, err
	}
	p.ReferenceT = time.Since(t1)
	p.Engine = float64(Q) / p.EngineT.Seconds()
	p.Reference = float64(Q) / p.ReferenceT.Seconds()
	return p, nil
}

// Machine describes the machine a report was measured on.
type Machine struct {
	CPU                 string
	Cores               int
	MemTotal            string
	OS, Arch, GoVersion string
	LoadStart, LoadEnd  string // /proc/loadavg's first three fields
}

// DescribeMachine reads the CPU model, memory and load from /proc where
// there is one.
func DescribeMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(),
		CPU: "unknown", MemTotal: "unknown", LoadStart: LoadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// LoadAvg is the 1, 5 and 15 minute load averages ("unknown" without
// /proc).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
