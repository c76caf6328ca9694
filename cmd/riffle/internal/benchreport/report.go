package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// kib is a KiB, in the figures of the report and the plots.
const kib = 1024.0

// PaperGoodput is the Riffle paper's figure for file sharing: just over
// 100 KB/s per client at 200 clients, servers and clients on separate
// machines.
const (
	PaperGoodput = 100e3
	PaperClients = 200
)

// rate formats bytes per second.
func rate(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB/s", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB/s", v/(1<<20))
	default:
		return fmt.Sprintf("%.1f KiB/s", v/kib)
	}
}

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// report writes the Markdown report of d.
func report(out io.Writer, d PaperData) error {
	w := bufio.NewWriter(out)
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("# riffle against the Riffle paper, measured on one machine")
	p("")
	if d.Quick {
		p("**Quick run (tiny sizes, for tests): the figures below say nothing about performance.**")
		p("")
	}
	p("Produced by `%s` in %s.", d.Command, d.Elapsed.Round(time.Second))
	p("")
	p("## Machine")
	p("")
	p("Every server and client ran in one process on one machine, over 127.0.0.1 (TCP, TLS 1.3, yamux):")
	p("")
	p("| CPU | cores | memory | Go | load average (1, 5, 15 min) at start | at end |")
	p("| --- | --- | --- | --- | --- | --- |")
	p("| %s | %d | %s | %s %s/%s | %s | %s |", d.Machine.CPU, d.Machine.Cores, d.Machine.MemTotal, d.Machine.GoVersion, d.Machine.OS, d.Machine.Arch, d.Machine.LoadStart, d.Machine.LoadEnd)
	p("")
	if busy(d.Machine.LoadStart, d.Machine.Cores) || busy(d.Machine.LoadEnd, d.Machine.Cores) {
		p("**The machine was busy:** its load average (%s at start, %s at end) exceeded its %d cores, so this run got a fraction of them and every figure below is lower than the same code gives on an idle machine.",
			first(d.Machine.LoadStart), first(d.Machine.LoadEnd), d.Machine.Cores)
	} else {
		p("A load average above the core count would mean other work shared the cores during the run.")
	}
	if d.Note != "" {
		p("")
		p("%s", d.Note)
	}
	p("")
	p("Compare rows of one run, not runs.")
	p("")
	p("## Ceilings")
	p("")
	p("The machine's throughputs in the same run, one goroutine per core (the loopback stream is one libp2p stream):")
	p("")
	p("| ceiling | rate |")
	p("| --- | --- |")
	for _, r := range d.Ceilings.Rows() {
		p("| %s | %s |", r[0], rate(r[1].(float64)))
	}
	p("")
	p("## Beside the paper")
	p("")
	p("| | the Riffle paper | riffle, this run |")
	p("| --- | --- | --- |")
	var at *GoodputPoint
	for i := range d.ByN {
		if at == nil || abs(d.ByN[i].Clients-PaperClients) < abs(at.Clients-PaperClients) {
			at = &d.ByN[i]
		}
	}
	if at != nil {
		p("| per-client goodput at n = %d | just over 100 KB/s | steady %s, share %s, get %s (n = %d, b = %g KiB) |",
			PaperClients, rate(at.Steady), rate(at.Share), rate(at.Get), at.Clients, float64(at.ChunkSize)/kib)
		p("| against the paper | 1 | %.2f× (steady) |", at.Steady/PaperGoodput)
	}
	p("| hardware | separate machines for servers and clients, each with its own cores and network link | 3 servers and every client in one process on %d shared cores; loopback instead of a network |", d.Machine.Cores)
	p("")
	p("On separate machines each server would have its own cores and link; here the chain's three servers and all clients share the cores, so the figures are a floor for the same software on a testbed, while the loopback network is faster than a real link.")
	p("")
	p("## Goodput against n")
	p("")
	p("![goodput against n](goodput_n.svg)")
	p("")
	goodputTable(p, d.ByN, d.Ceilings)
	p("")
	p("## Goodput against b")
	p("")
	p("![goodput against b](goodput_b.svg)")
	p("")
	goodputTable(p, d.ByB, d.Ceilings)
	p("")
	p("## A round's time split")
	p("")
	p("![round split](round_split.svg)")
	p("")
	p("Per server and round, chain mix summed over the chain's layers; PIR of round r overlaps the mixing of r+1. Each stage beside its ceiling (rate = the stage's bytes over its time; PIR's bytes are the reference's XOR volume, so the engine can pass 1):")
	p("")
	p("| n | chain mix (m·n·b vs AES-GCM) | verify (n·b vs SHA-256) | store (n·b vs memcpy) | PIR (n·k·n/2·b vs XOR) | network (n·b·(1+k) vs loopback) |")
	p("| --- | --- | --- | --- | --- | --- |")
	for _, g := range d.ByN {
		st := Stages(g.Round, d.Ceilings)
		row := fmt.Sprintf("| %d |", g.Clients)
		for _, s := range st {
			row += fmt.Sprintf(" %s ms, %s = %.3f |", msf(s.Time), rate(s.Rate), s.Ratio)
		}
		p("%s", row)
	}
	p("")
	p("## Setup time")
	p("")
	p("![setup against n](setup_n.svg) ![setup against m](setup_m.svg)")
	p("")
	p("The verifiable shuffle of the layer keys, by mix's setup functions in this process. Critical path: Σ over servers of (prove + one verify), the length when servers are separate machines; all in one: Σ (prove + (m−1)·verify).")
	p("")
	p("| m | n | critical path | all in one |")
	p("| --- | --- | --- | --- |")
	for _, s := range append(append([]SetupPoint(nil), d.SetupN...), d.SetupM...) {
		p("| %d | %d | %.2f s | %.2f s |", s.Servers, s.Clients, s.Critical.Seconds(), s.AllInOne.Seconds())
	}
	p("")
	p("## PIR")
	p("")
	p("![PIR against Q](pir_q.svg) ![PIR against L](pir_l.svg)")
	p("")
	p("Answers per second of one round, random masks; the engine on all cores, the reference (pir.Reference, one row XOR per set bit) on one.")
	p("")
	p("| Q | L | b | engine | reference | engine / reference |")
	p("| --- | --- | --- | --- | --- | --- |")
	for _, q := range append(append([]PIRPoint(nil), d.PIRQ...), d.PIRL...) {
		p("| %d | %d | %g KiB | %.0f | %.0f | %.1f× |", q.Q, q.L, float64(q.B)/kib, q.Engine, q.Reference, q.Engine/q.Reference)
	}
	p("")
	p("data.json holds every figure of this report.")
	return w.Flush()
}

func goodputTable(p func(string, ...any), pts []GoodputPoint, c Ceilings) {
	p("| n | b | share/client | get/client | steady/client | round | plain libp2p/client | riffle / plain |")
	p("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, g := range pts {
		p("| %d | %g KiB | %s | %s | %s | %s ms | %s | %.3f |", g.Clients, float64(g.ChunkSize)/kib, rate(g.Share), rate(g.Get),
			rate(g.Steady), msf(g.RoundTime), rate(g.Baseline), g.Steady/g.Baseline)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// first is the first field of a load average ("1.00 0.50 0.20").
func first(load string) string {
	if f := strings.Fields(load); len(f) > 0 {
		return f[0]
	}
	return load
}

// busy says whether a load average's 1-minute figure exceeds the cores.
func busy(load string, cores int) bool {
	v, err := strconv.ParseFloat(first(load), 64)
	return err == nil && v > float64(cores)
}
