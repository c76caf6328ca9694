package node

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A job is handed to a running client only if that client runs under the
// user's primary, every server the user requires and at least the user's
// minimum anonymity set.
func TestCheckHandover(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		ids := make([]peer.ID, 3)
		for i := range ids {
			ids[i] = peer.ID(strings.Repeat(string(rune('a'+i)), 8))
		}
		st := &ClientStatus{Primary: ids[0].String(), Require: []string{ids[1].String()}, MinAnonymity: 4}
		for _, tc := range []struct {
			primary peer.ID
			req     []peer.ID
			min     int
			want    string // "" when handed over
		}{
			{"", nil, 0, ""},
			{ids[0], []peer.ID{ids[0], ids[1]}, 4, ""},
			{ids[1], nil, 0, "joins through server"},
			{"", []peer.ID{ids[2]}, 0, "does not require server"},
			{"", nil, 5, "anonymity set of at least 4"},
		} {
			err := CheckHandover(st, tc.primary, tc.req, tc.min)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckHandover(%q, %q, %d) = %v, want %q", tc.primary, tc.req, tc.min, err, tc.want)
			}
		}
	})
}

// A job that does not take chains that dropped a server for its refusal
// budget is not handed to a running client that takes them; the other
// way round it is.
func TestCheckBudgetHandover(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		for _, tc := range []struct{ running, job, ok bool }{{false, false, true}, {false, true, true}, {true, true, true}, {true, false, false}} {
			err := CheckBudgetHandover(&ClientStatus{AcceptBudgetDrops: tc.running}, tc.job)
			if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "--accept-budget-drops") {
				t.Errorf("running %v, job %v: %v", tc.running, tc.job, err)
			}
		}
	})
}
