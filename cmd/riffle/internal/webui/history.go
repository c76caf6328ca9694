package webui

import (
	"fmt"
	"html/template"
	"strings"
	"sync"
	"time"
)

// maxSamples is how many round times the chart shows.
const maxSamples = 120

// sampleEvery is how often a UI reads its node's counters to time rounds:
// rounds take a few hundred milliseconds at the smallest.
const sampleEvery = 100 * time.Millisecond

// roundSample is one observed round: when it ended and how long it took.
type roundSample struct {
	At   time.Time     `json:"at"`
	Time time.Duration `json:"round_time_ns"`
	PIR  time.Duration `json:"pir_time_ns,omitempty"` // server UI only
}

// history times rounds from a counter read every sampleEvery: a change of
// d rounds over t gives d samples of t/d. It also remembers where the
// current epoch began, to tell the round within it.
type history struct {
	mu         sync.Mutex
	samples    []roundSample
	have       bool
	last       int
	lastAt     time.Time
	epoch      string
	epochStart int
	// server side: PIR time and the rounds it was summed over.
	lastPIR       time.Duration
	lastPIRRounds int
}

// observe records the counter of rounds seen at now in epoch.
func (h *history) observe(now time.Time, rounds int, epoch string) {
	h.observePIR(now, rounds, epoch, 0, 0)
}

// observePIR is observe with a server's summed PIR time over pirRounds.
func (h *history) observePIR(now time.Time, rounds int, epoch string, pir time.Duration, pirRounds int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The gap between epochs (registration, setup) is not a round: a new
	// epoch starts the timing afresh.
	if epoch != h.epoch {
		h.epoch, h.epochStart = epoch, rounds
		h.have = false
	}
	if !h.have || rounds < h.last {
		h.have, h.last, h.lastAt = true, rounds, now
		h.lastPIR, h.lastPIRRounds = pir, pirRounds
		return
	}
	d := rounds - h.last
	if d == 0 {
		return
	}
	per := now.Sub(h.lastAt) / time.Duration(d)
	var pirPer time.Duration
	if dp := pirRounds - h.lastPIRRounds; dp > 0 {
		pirPer = (pir - h.lastPIR) / time.Duration(dp)
	}
	for range min(d, maxSamples) {
		h.samples = append(h.samples, roundSample{At: now, Time: per, PIR: pirPer})
	}
	if len(h.samples) > maxSamples {
		h.samples = append(h.samples[:0], h.samples[len(h.samples)-maxSamples:]...)
	}
	h.last, h.lastAt = rounds, now
	h.lastPIR, h.lastPIRRounds = pir, pirRounds
}

// snapshot returns the samples and the round within the current epoch.
func (h *history) snapshot(rounds int) ([]roundSample, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]roundSample(nil), h.samples...), rounds - h.epochStart
}

// lastRoundTime returns the newest sample's round time, 0 if none.
func lastRoundTime(s []roundSample) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1].Time
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 600, 140
	chartPad       = 30
)

// chartSVG draws the round times as an inline SVG line chart. Only numbers
// enter it (formatted here), so it is safe to mark as HTML.
func chartSVG(s []roundSample) template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="round times">`, chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`, chartW, chartH)
	if len(s) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" fill="#666">no rounds timed yet</text></svg>`, chartPad, chartH/2)
		return template.HTML(b.String())
	}
	var top time.Duration
	for _, x := range s {
		top = max(top, x.Time)
	}
	top = max(top, time.Millisecond)
	plotW, plotH := float64(chartW-2*chartPad), float64(chartH-2*chartPad/2)
	fmt.Fprintf(&b, `<text x="4" y="14" font-size="11" fill="#666">%s</text>`, fmtDur(top))
	fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11" fill="#666">0</text>`, chartH-4)
	b.WriteString(`<polyline fill="none" stroke="#2a6" stroke-width="2" points="`)
	for i, x := range s {
		px := float64(chartPad)
		if len(s) > 1 {
			px += plotW * float64(i) / float64(len(s)-1)
		}
		py := float64(chartPad/2) + plotH*(1-float64(x.Time)/float64(top))
		fmt.Fprintf(&b, "%.1f,%.1f ", px, py)
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String())
}

// fmtDur prints a duration to milliseconds.
func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
