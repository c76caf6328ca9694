package mix

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/group"
)

// Benchmarks. The machine is shared: every figure should be read against a
// baseline measured in the same run (the raw primitives' throughput, the
// unit cost of a scalar multiplication).

// opCounts counts the group operations of setup (docs/proto-shuffle.md §7 for the
// shuffle, this package for the rest).
type opCounts struct {
	base, varBase   int // fixed-base and variable-base constant-time multiplications
	msmCT           int // points of constant-time MSMs
	msmVT, msmVT128 int // points of variable-time MSMs, full and 128-bit scalars
	decode          int // element decodings
}

func (c *opCounts) add(d opCounts) {
	c.base += d.base
	c.varBase += d.varBase
	c.msmCT += d.msmCT
	c.msmVT += d.msmVT
	c.msmVT128 += d.msmVT128
	c.decode += d.decode
}

// proveCounts: step s with n vectors of remaining width w.
func proveCounts(n, w int) opCounts {
	return opCounts{
		base:     n*w + (n + 2) + 1,
		varBase:  n + n*w + n*w + 2,
		msmCT:    4*n + (2*w+1)*(n+1),
		msmVT128: n * (w + 1),
	}
}

// verifyCounts: checking step s, decoding included.
func verifyCounts(n, w int) opCounts {
	return opCounts{
		msmVT:    4*n*w + 4*n + 3*w + 5,
		msmVT128: 2 * n * (w + 1),
		decode:   n*(1+3*w) + 3*n + 2*w + 3,
	}
}

type unitCosts struct{ base, varBase, msmCT, msmVT, msmVT128, decode time.Duration }

func (u unitCosts) floor(c opCounts) time.Duration {
	return time.Duration(c.base)*u.base + time.Duration(c.varBase)*u.varBase +
		time.Duration(c.msmCT)*u.msmCT + time.Duration(c.msmVT)*u.msmVT +
		time.Duration(c.msmVT128)*u.msmVT128 + time.Duration(c.decode)*u.decode
}

// measureUnits times each operation class on one core.
func measureUnits() unitCosts {
	rand := newDetRand("units")
	const k = 512
	sc := make([]*group.Scalar, k)
	sc128 := make([]*group.Scalar, k)
	pts := make([]*group.Element, k)
	enc := make([][]byte, k)
	for i := range k {
		sc[i], _ = group.RandomScalar(rand)
		sc128[i], _ = group.RandomWeight(rand)
		pts[i] = group.NewElement().ScalarBaseMult(sc[i])
		enc[i] = pts[i].Bytes()
	}
	per := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start) / k
	}
	var u unitCosts
	e := group.NewElement()
	u.base = per(func() {
		for i := range k {
			e.ScalarBaseMult(sc[i])
		}
	})
	u.varBase = per(func() {
		for i := range k {
			e.ScalarMult(sc[i], pts[i])
		}
	})
	u.msmCT = per(func() { e.MultiScalarMult(sc, pts) })
	u.msmVT = per(func() { e.VarTimeMultiScalarMult(sc, pts) })
	u.msmVT128 = per(func() { e.VarTimeMultiScalarMult(sc128, pts) })
	u.decode = per(func() {
		for i := range k {
			if _, err := group.DecodeElement(enc[i]); err != nil {
				panic(err)
			}
		}
	})
	return u
}

// BenchmarkSetup times the whole epoch setup (§4.2) for m = 3.
//
// prove_s is server s's SetupStep plus encoding its result; verify_s is one
// other server decoding and verifying it (VerifyStep). As deployed, the
// servers are separate machines: step s+1 starts when every server has
// verified step s, and the m−1 verifications of a step run at once on
// different machines, so the critical path is Σ_s (prove_s + verify_s). The
// all-in-one-process total runs every verification of every other server
// one after another on this machine: Σ_s (prove_s + (m−1)·verify_s).
// floor_crit is the critical path's group operations (counted, times unit
// costs measured in the same run on one core) divided by the 2 cores.
func BenchmarkSetup(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("m=3/n=%d", n), func(b *testing.B) {
			if n > 1000 && os.Getenv("RIFFLE_LONG") != "1" {
				b.Skip("set RIFFLE_LONG=1")
			}
			benchSetup(b, 3, n)
		})
	}
}

func benchSetup(b *testing.B, m, n int) {
	rand := newDetRand("bench setup")
	epoch := testEpoch("bench")
	sks, X := testServers(b, m, rand)
	_, _, regs := testClients(b, epoch, X, n, rand)
	// Servers receive registrations as bytes (§4.1) and parse them,
	// as the node does.
	for i, reg := range regs {
		enc, err := reg.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		if regs[i], err = ParseRegistration(enc, m); err != nil {
			b.Fatal(err)
		}
	}
	initial := InitialVectors(regs)
	units := measureUnits()
	cores := runtime.GOMAXPROCS(0)
	var prove, verify []time.Duration
	var cpuCrit time.Duration
	var counts opCounts
	b.ResetTimer()
	for range b.N {
		prove, verify = make([]time.Duration, m), make([]time.Duration, m)
		counts = opCounts{}
		cpu0 := cpuTime()
		in := initial
		for s := range m {
			t0 := time.Now()
			res, sec, err := SetupStep(epoch, s, X, sks[s], in, rand)
			if err != nil {
				b.Fatal(err)
			}
			enc, err := res.MarshalBinary()
			if err != nil {
				b.Fatal(err)
			}
			prove[s] = time.Since(t0)
			sec.Close()
			t1 := time.Now()
			pub, err := ParseStepResult(enc, n, m, s)
			if err != nil {
				b.Fatal(err)
			}
			if err := VerifyStep(epoch, s, X, in, pub, rand); err != nil {
				b.Fatal(err)
			}
			verify[s] = time.Since(t1)
			counts.add(proveCounts(n, m-s))
			counts.add(verifyCounts(n, m-s))
			in = pub.Next()
		}
		cpuCrit = cpuTime() - cpu0
	}
	b.StopTimer()
	var crit, total time.Duration
	for s := range m {
		crit += prove[s] + verify[s]
		total += prove[s] + time.Duration(m-1)*verify[s]
		b.ReportMetric(float64(prove[s].Milliseconds()), fmt.Sprintf("prove_s%d_ms", s))
		b.ReportMetric(float64(verify[s].Milliseconds()), fmt.Sprintf("verify_s%d_ms", s))
	}
	floor := units.floor(counts) / time.Duration(cores)
	b.ReportMetric(float64(crit.Milliseconds()), "critical_ms")
	b.ReportMetric(float64(total.Milliseconds()), "all_in_one_ms")
	b.ReportMetric(float64(floor.Milliseconds()), "floor_crit_ms")
	b.ReportMetric(float64(crit)/float64(floor), "crit/floor")
	b.ReportMetric(float64(cpuCrit.Milliseconds()), "cpu_crit_ms")
	b.ReportMetric(float64(units.varBase.Microseconds()), "unit_varbase_us")
	b.Logf("critical path: %d fixed-base, %d variable-base mults, %d CT-MSM, %d VT-MSM, %d VT-MSM(128-bit) points, %d decodes",
		counts.base, counts.varBase, counts.msmCT, counts.msmVT, counts.msmVT128, counts.decode)
	b.Logf("unit costs (one core): base %v, var-base %v, CT-MSM/pt %v, VT-MSM/pt %v, VT-MSM-128/pt %v, decode %v",
		units.base, units.varBase, units.msmCT, units.msmVT, units.msmVT128, units.decode)
}

// cpuTime is the process's user and system CPU time so far: on a loaded
// machine, the CPU a phase used is steadier than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOpenLayer opens one layer of 200 onions of 256 KiB chunks (k =
// 4) against the raw primitives: AES-256-CTR over the same bytes plus GMAC
// over them, on the same number of cores, in the same run. raw/open is the
// fraction of the primitives' throughput that OpenLayer reaches.
func BenchmarkOpenLayer(b *testing.B) {
	const n, chunk, k, m = 200, 256 << 10, 4, 3
	f := newRoundFixture(b, m, n, 1, "bench open")
	size := OnionSize(chunk, k, m)
	onions := make([][]byte, n)
	payload := make([]byte, PayloadSize(chunk, k))
	for i := range n {
		onions[i] = f.seal(b, i, 0, payload)
	}
	keys, err := ServerLayerKeys(f.epoch, 0, 0, f.rks[0], f.U[0])
	if err != nil {
		b.Fatal(err)
	}
	outs := make([][]byte, n)
	for i := range outs {
		outs[i] = make([]byte, size-TagSize)
	}
	// raw is the baseline: per onion, AES-256-CTR from the onion into a
	// preallocated output and GMAC over the same bytes, on all cores.
	raw := func() {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					p := int(next.Add(1) - 1)
					if p >= n {
						return
					}
					eb, _ := aes.NewCipher(keys[p].Enc[:])
					mb, _ := aes.NewCipher(keys[p].MAC[:])
					g, _ := cipher.NewGCM(mb)
					body := onions[p][:size-TagSize]
					var iv [16]byte
					cipher.NewCTR(eb, iv[:]).XORKeyStream(outs[p], body)
					g.Seal(nil, iv[:12], nil, body)
				}
			}()
		}
		wg.Wait()
	}
	// The two alternate within every iteration, so that the load of the
	// shared machine falls on both alike.
	reuse := make([][]byte, n)
	for i := range reuse {
		reuse[i] = make([]byte, size-TagSize)
	}
	var tOpen, tInto, tRaw time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		raw()
		t1 := time.Now()
		if _, err := OpenLayer(f.epoch, 0, 0, keys, onions); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := OpenLayerInto(reuse, f.epoch, 0, 0, keys, onions); err != nil {
			b.Fatal(err)
		}
		tRaw += t1.Sub(t0)
		tOpen += t2.Sub(t1)
		tInto += time.Since(t2)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(tOpen), "open_ms")
	b.ReportMetric(ms(tInto), "into_ms")
	b.ReportMetric(ms(tRaw), "raw_ms")
	b.ReportMetric(float64(tRaw)/float64(tOpen), "raw/open")
	b.ReportMetric(float64(tRaw)/float64(tInto), "raw/into")
}

// BenchmarkServerLayerKeys derives one round's keys for 200 positions.
func BenchmarkServerLayerKeys(b *testing.B) {
	f := newRoundFixture(b, 1, 200, 1, "bench keys")
	b.ResetTimer()
	for range b.N {
		if _, err := ServerLayerKeys(f.epoch, 0, 0, f.rks[0], f.U[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyPayloads checks 200 pseudonym signatures over 256 KiB
// payloads (§5.3).
func BenchmarkVerifyPayloads(b *testing.B) {
	const n, chunk, k = 200, 256 << 10, 4
	epoch, cs, P := testPayloadClients(b, n)
	rand := newDetRand("bench payloads")
	raws := make([][]byte, n)
	for i := range n {
		var err error
		raws[i], err = EncodePayload(&Payload{Kind: KindChunk, Length: chunk, Chunk: make([]byte, chunk)}, chunk, k, epoch, 0, cs[i], rand)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(n * len(raws[0])))
	b.ResetTimer()
	for range b.N {
		if bad := VerifyPayloads(epoch, 0, P, raws, chunk, k, rand); len(bad) != 0 {
			b.Fatal(bad)
		}
	}
}

// BenchmarkVerifyRegistrations checks 1000 registrations for m = 3 one by
// one and batched, in the same run.
func BenchmarkVerifyRegistrations(b *testing.B) {
	const n, m = 1000, 3
	rand := newDetRand("bench registrations")
	epoch := testEpoch("bench registrations")
	_, X := testServers(b, m, rand)
	_, keys, regs := testClients(b, epoch, X, n, rand)
	pubs := make([]ed25519.PublicKey, n)
	for i, k := range keys {
		pubs[i] = k.Public().(ed25519.PublicKey)
	}
	b.Run("one-by-one", func(b *testing.B) {
		for range b.N {
			for i, reg := range regs {
				if err := VerifyRegistration(epoch, pubs[i], X, reg); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("batched", func(b *testing.B) {
		for range b.N {
			if bad, err := VerifyRegistrations(epoch, pubs, X, regs, rand); err != nil || len(bad) != 0 {
				b.Fatal(bad, err)
			}
		}
	})
	// As servers get them: parsed from their bytes, whose challenges hash
	// those bytes instead of encoding every element again.
	parsed := make([]*Registration, n)
	for i, reg := range regs {
		enc, err := reg.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		if parsed[i], err = ParseRegistration(enc, m); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("batched-parsed", func(b *testing.B) {
		for range b.N {
			if bad, err := VerifyRegistrations(epoch, pubs, X, parsed, rand); err != nil || len(bad) != 0 {
				b.Fatal(bad, err)
			}
		}
	})
}

// BenchmarkSubmitDigest: what a client hashes and signs for one onion of
// b = 256 KiB and then checks its primary's receipt against: the onion
// hashed twice (signed from the onion, the receipt's digest hashed again)
// against once (the digest signed and kept).
func BenchmarkSubmitDigest(b *testing.B) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		b.Fatal(err)
	}
	var epoch EpochID
	onion := make([]byte, OnionSize(256<<10, 1, 3))
	for _, c := range []struct {
		name string
		run  func() [32]byte
	}{
		{"twice", func() [32]byte {
			_ = SignSubmission(key, epoch, 3, 7, onion)
			return SubmissionDigest(onion)
		}},
		{"once", func() [32]byte {
			d := SubmissionDigest(onion)
			_ = SignSubmissionDigest(key, epoch, 3, 7, d)
			return d
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(onion)))
			for b.Loop() {
				_ = c.run()
			}
		})
	}
}
