package status

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestCheckHandover: a job goes to a running client only if that client
// runs under flags at least as strict as the job's: its primary, every
// required server, a minimum anonymity set as large, and budget drops
// taken only if the job takes them.
func TestCheckHandover(t *testing.T) {
	p, r, x := peer.ID("p"), peer.ID("r"), peer.ID("x")
	st := &ClientStatus{Primary: p.String(), Require: []string{r.String()}, MinAnonymity: 5}
	for _, tc := range []struct {
		name    string
		primary peer.ID
		req     []peer.ID
		min     int
		ok      bool
	}{
		{"same flags", p, []peer.ID{r}, 5, true},
		{"any primary, the primary required, a smaller set", "", []peer.ID{p}, 3, true},
		{"a larger set", p, nil, 6, false},
		{"another primary", x, nil, 5, false},
		{"a server the client does not require", p, []peer.ID{r, x}, 5, false},
	} {
		if err := CheckHandover(st, tc.primary, tc.req, tc.min); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if CheckBudgetHandover(st, false) != nil || CheckBudgetHandover(st, true) != nil {
		t.Error("a client that takes no budget drops refused a job")
	}
	st.AcceptBudgetDrops = true
	if CheckBudgetHandover(st, false) == nil || CheckBudgetHandover(st, true) != nil {
		t.Error("budget drops: a job that does not take them went to a client that does")
	}
}

// TestStatusJSON: the status's keys are snake_case, as every status the
// CLI and the web UI print.
func TestStatusJSON(t *testing.T) {
	b, err := json.Marshal(ClientStatus{Paused: []PausedJob{{ID: "i"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"min_anonymity"`, `"bad_answers"`, `"cover_attacks"`, `"sent_bytes_per_hour"`, `"paused":[{"id":"i"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("%s lacks %s", b, k)
		}
	}
}
