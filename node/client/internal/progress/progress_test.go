package progress

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/client/internal/waitline"
)

// A job's events read as the progress lines `riffle share` and `get`
// print (and their tests look for), and survive the local API's JSON.
func TestJobEventLine(t *testing.T) {
	for _, tc := range []struct {
		e    JobEvent
		want string
	}{
		{Moving("share", "f.bin", 3, 10, 7, 1024, 3*time.Second), "share f.bin: 3/10 chunks, round 7, 1.0 KiB/s, eta 7s"},
		{Moving("get", "g.bin", 0, 10, 2, 1024, time.Second), "get g.bin: 0/10 chunks, round 2, 0.0 KiB/s, eta ?"},
		{JobEvent{Kind: "share", Phase: PhaseWaiting, Name: "a.bin", Waiting: waitline.Hint, Elapsed: 5200 * time.Millisecond}, "share a.bin: " + waitline.Hint + " (5s)"},
		{JobEvent{Kind: "get", Phase: PhasePaused, Name: "x", Paused: "paused: this job sent real traffic in 1 epochs"}, "get x: paused: this job sent real traffic in 1 epochs"},
		{JobEvent{Kind: "share", Phase: PhaseResuming, Name: "r.bin", Done: 4, Total: 10}, "share r.bin: resuming: 4 of 10 chunks went out in an earlier run; sending the other 6"},
		{JobEvent{Kind: "share", Phase: PhaseShared, Name: "s.bin", Bytes: 40000, Total: 10, Earlier: 4, Elapsed: 3 * time.Second}, "shared s.bin: 40000 bytes in 10 uploads (data and manifest chunks, 4 of them in an earlier run), 3s"},
		{JobEvent{Kind: "share", Phase: PhaseShared, Name: "u.bin", Bytes: 40000, Total: 10, Earlier: 4, Unconfirmed: 1, Elapsed: 3 * time.Second}, "shared u.bin: 40000 bytes in 10 uploads (data and manifest chunks, 4 of them in an earlier run), 3s; 1 of them never seen published: the link may not fetch the whole file (warning below)"},
		{JobEvent{Kind: "get", Phase: PhaseFetched, Name: "f.bin", Elapsed: 1500 * time.Millisecond}, "fetched f.bin in 1.5s"},
		{JobEvent{Kind: "share", Phase: PhaseWarning, Note: "share v.bin: 2 chunks count as published"}, "warning: share v.bin: 2 chunks count as published"},
		{JobEvent{Kind: "get", Phase: PhaseDone, Path: "/p"}, ""},
	} {
		if got := tc.e.Line(); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.e, got, tc.want)
		}
		b, err := json.Marshal(tc.e)
		var back JobEvent
		if err != nil || json.Unmarshal(b, &back) != nil || back != tc.e {
			t.Errorf("%+v does not survive JSON: %s", tc.e, b)
		}
	}
}
