package presence

import (
	"crypto/rand"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestPresenceDraw (§5.4 v3): the wait before a job and before leaving is
// 2 + G full epochs, G geometric with p = ½, capped at 8: every value's
// frequency within 5 standard deviations of its probability, whatever
// the client does (the draw reads only random bytes).
func TestPresenceDraw(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const draws = 64000
		count := map[int]int{}
		for range draws {
			w, err := Draw(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if w < Min || w > Max {
				t.Fatalf("wait %d outside [%d, %d]", w, Min, Max)
			}
			count[w]++
		}
		for w := Min; w <= Max; w++ {
			p := math.Pow(0.5, float64(w-Min+1))
			if w == Max {
				p *= 2 // the cap takes the tail
			}
			mean, sd := draws*p, math.Sqrt(draws*p*(1-p))
			if math.Abs(float64(count[w])-mean) > 5*sd {
				t.Fatalf("wait %d drawn %d times, want about %.0f", w, count[w], mean)
			}
		}
	})
}

// TestCountRules (§5.4 v3): jobs wait the drawn full epochs (not with
// now); a client may leave once idle and, if it had a job, w full epochs
// after the last epoch with one; a job queued at an epoch's end counts as
// one. The holding line says how far along the wait is and about how long
// is left.
func TestCountRules(t *testing.T) {
	if !New(true, Max).Ready() {
		t.Fatal("now: jobs wait")
	}
	p := New(false, 2)
	if p.Ready() {
		t.Fatal("jobs ready before the wait")
	}
	if got := p.Holding(10 * time.Minute); !strings.Contains(got, "present 0 of the 2") || !strings.Contains(got, "about 20m0s more") {
		t.Fatalf("holding line %q", got)
	}
	p.Full(false)
	p.Full(false)
	if !p.Ready() || p.Epochs() != 2 || p.Holding(time.Minute) != "" {
		t.Fatalf("after the wait: ready %v, %d epochs, line %q", p.Ready(), p.Epochs(), p.Holding(time.Minute))
	}
	if !p.MayLeave(false, Max) || p.MayLeave(true, 0) {
		t.Fatal("leave: a client that never had a job waits, or a busy one goes")
	}
	p.Sent()
	p.Full(false) // epoch 3 carried a job
	for full := 3; full < 5; full++ {
		if p.MayLeave(false, 2) {
			t.Fatalf("left %d full epochs after its job's, want 2", full-3)
		}
		p.Full(false)
	}
	if !p.MayLeave(false, 2) {
		t.Fatal("not free to leave 2 full epochs after its job")
	}
	p.Full(true) // a job queued at the end counts
	if p.MayLeave(false, 1) {
		t.Fatal("a job queued at an epoch's end did not count")
	}
}
