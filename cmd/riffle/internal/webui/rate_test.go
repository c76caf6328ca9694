package webui

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// TestJobRateInBytes: a job's page gives its progress and rate in bytes
// of the file, not chunks a second, and no rate on the first report,
// which may count chunks held or queued before (issue 27 point 9: 83085
// chunks/s on the first tick).
func TestJobRateInBytes(t *testing.T) {
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	u := newTestUI(t, newFake(), func(o *Options) { o.Now = clock })
	j := &job{ID: "j1", Kind: "get", Name: "big.bin", State: stateRunning, Started: t0, fileID: chunker.ID{1}, size: 4 << 20}
	u.jobs.add(j)
	// The first report: 1 of 4 chunks already held, 10 ms in.
	mu.Lock()
	now = t0.Add(10 * time.Millisecond)
	mu.Unlock()
	u.jobs.update("j1", func(j *job) { j.observe(clock(), 1, 4) })
	page := get(t, u, "/jobs/j1").Body.String()
	if strings.Contains(page, "B/s") || !strings.Contains(page, "1.0 MiB of 4.0 MiB") {
		t.Errorf("first report: %s", page)
	}
	// Two more chunks (2 MiB) in the next 2 s: 1 MiB/s.
	mu.Lock()
	now = t0.Add(2*time.Second + 10*time.Millisecond)
	mu.Unlock()
	u.jobs.update("j1", func(j *job) { j.observe(clock(), 3, 4) })
	w := get(t, u, "/jobs/j1")
	wantCode(t, w, http.StatusOK, "job page")
	page = w.Body.String()
	if !strings.Contains(page, "3.0 MiB of 4.0 MiB") || !strings.Contains(page, "1.0 MiB/s") || strings.Contains(page, "chunks/s") || !strings.Contains(page, "about 1s left") {
		t.Errorf("job page: %s", page)
	}
	v, _ := u.jobs.get("j1")
	if v.ByteRate != 1<<20 || v.BytesDone != 3<<20 || v.Size != 4<<20 {
		t.Errorf("job %+v", v)
	}
}
