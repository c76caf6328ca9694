package status

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRosterJoinedLeft: each sample says who came and who went since the
// last, once.
func TestRosterJoinedLeft(t *testing.T) {
	var w Watch
	j, l := w.Roster(map[string]string{"a": "alice", "b": "bob"})
	if len(j) != 2 || len(l) != 0 {
		t.Fatalf("first sample: joined %v left %v", j, l)
	}
	j, l = w.Roster(map[string]string{"b": "bob", "c": "carol"})
	if len(j) != 1 || j["c"] != "carol" || len(l) != 1 || l["a"] != "alice" {
		t.Fatalf("second sample: joined %v left %v, want carol in, alice out", j, l)
	}
	if j, l = w.Roster(map[string]string{"b": "bob", "c": "carol"}); len(j)+len(l) != 0 {
		t.Fatalf("same roster: joined %v left %v", j, l)
	}
}

// TestRateFromFirstSeen: the round time and throughput count only the
// rounds seen after the epoch's first sample, and a new epoch starts
// afresh.
func TestRateFromFirstSeen(t *testing.T) {
	var w Watch
	t0 := time.Unix(1000, 0)
	e1, e2 := [32]byte{1}, [32]byte{2}
	w.Rounds(e1, 5, t0) // five rounds before the watch began: not timed
	if d, tp := w.Rate(e1, 4, 100); d != 0 || tp != 0 {
		t.Fatalf("no round seen yet: %v %v", d, tp)
	}
	w.Rounds(e1, 5, t0.Add(time.Second))   // no new round: not a change
	w.Rounds(e1, 9, t0.Add(2*time.Second)) // four rounds in 2 s
	w.Rounds(e1, 9, t0.Add(5*time.Second))
	d, tp := w.Rate(e1, 4, 100)
	if d != 500*time.Millisecond || tp != 4*4*100/2.0 {
		t.Fatalf("rate %v %v, want 500ms and 800 B/s", d, tp)
	}
	if d, _ := w.Rate(e2, 4, 100); d != 0 {
		t.Fatalf("another epoch's rate %v", d)
	}
	w.Rounds(e2, 3, t0.Add(6*time.Second))
	if d, _ := w.Rate(e2, 4, 100); d != 0 {
		t.Fatalf("a new epoch kept the old timing: %v", d)
	}
}

type sampler struct {
	live  map[string]string
	epoch [32]byte
	high  uint32
	ok    bool
}

func (s *sampler) Live() map[string]string           { return s.live }
func (s *sampler) Current() ([32]byte, uint32, bool) { return s.epoch, s.high, s.ok }

// TestSample: a sample logs each server that joined or left the roster
// once, and times the current epoch's rounds only while one runs.
func TestSample(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var w Watch
	s := &sampler{live: map[string]string{"a": "A"}}
	w.Sample(s, log, 3)
	w.Sample(s, log, 3)
	s.live = map[string]string{}
	w.Sample(s, log, 3)
	if j, l := strings.Count(buf.String(), "server joined the roster"), strings.Count(buf.String(), "server left the roster"); j != 1 || l != 1 {
		t.Fatalf("joined logged %d times, left %d:\n%s", j, l, buf.String())
	}
	if d, _ := w.Rate([32]byte{}, 1, 1); d != 0 {
		t.Fatalf("rounds timed with no epoch running: %v", d)
	}
	s.epoch, s.high, s.ok = [32]byte{1}, 2, true
	w.Sample(s, log, 3)
	if w.epoch != s.epoch || w.rounds != 2 {
		t.Fatalf("current epoch not timed: %x %d", w.epoch[:1], w.rounds)
	}
}
