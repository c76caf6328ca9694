// Package status is what a client reports about itself to the local API
// (cmd/riffle/internal/webui, docs/webui.md): ClientStatus with its
// counters (Stats) and paused jobs, and the checks that a job handed to a
// running client runs under the flags its user gave (CheckHandover,
// CheckBudgetHandover); the paused jobs are §5.4's (v3), the budget drops
// §3's "Who may serve". Nothing in it names a slot, a chunk or a request.
// Pure: no I/O, no lock.
package status

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// ClientStatus is what a client reports about itself: the flags it runs
// under and the epoch it takes part in. Nothing in it names a slot, a
// chunk or a request.
type ClientStatus struct {
	Server  string   `json:"server"`  // the primary's multiaddr
	Primary string   `json:"primary"` // the primary's peer id
	Require []string `json:"require"` // required peer ids besides the primary
	// MinAnonymity: jobs wait for epochs of at least this many clients.
	MinAnonymity int    `json:"min_anonymity"`
	DataDir      string `json:"data_dir,omitempty"`
	// AcceptBudgetDrops: the client takes chains that dropped a server of
	// its previous chain for its refusal budget (node/client's client_budget.go).
	AcceptBudgetDrops bool `json:"accept_budget_drops,omitempty"`

	Epoch        string              `json:"epoch,omitempty"` // hex id of the current epoch, "" between epochs
	Chain        []proto.ChainServer `json:"chain,omitempty"`
	AnonymitySet int                 `json:"anonymity_set"`
	ChunkSize    int                 `json:"chunk_size"`
	EpochRounds  int                 `json:"epoch_rounds"`  // rounds run in the current epoch
	RoundTime    time.Duration       `json:"round_time_ns"` // mean round time of the current epoch
	// Throughput is the chunk bytes a second this client's slot carries
	// in the current epoch, one upload and k requests a round, cover
	// included; Goodput counts only the chunks of its jobs.
	Throughput float64 `json:"throughput_bytes_per_s"`
	Goodput    float64 `json:"goodput_bytes_per_s"`
	Waiting    string  `json:"waiting,omitempty"` // why no epoch runs, if none does
	// What this client moves an hour: the group's worst case from its
	// constants (GroupCost; 0 before the first descriptor), and what it
	// sent and received since it started (every request and reply).
	GroupSendPerHour float64 `json:"group_send_bytes_per_hour"`
	GroupRecvPerHour float64 `json:"group_recv_bytes_per_hour"`
	SentPerHour      float64 `json:"sent_bytes_per_hour"`
	RecvPerHour      float64 `json:"recv_bytes_per_hour"`
	// MaxRate is --max-rate, bytes a second each way (0: none).
	MaxRate float64 `json:"max_rate_bytes_per_s,omitempty"`
	Stats   Stats   `json:"stats"`
	// Paused are the jobs paused after their allowance of epochs with
	// real traffic (§5.4 v3), waiting for their user.
	Paused []PausedJob `json:"paused,omitempty"`
}

// Stats counts what a client did.
// Its JSON keys are snake_case, as every status the CLI and the web UI
// print.
type Stats struct {
	Epochs     int `json:"epochs"`
	Rounds     int `json:"rounds"`
	Uploaded   int `json:"uploaded"`
	Fetched    int `json:"fetched"`
	BadAnswers int `json:"bad_answers"`
	// CoverAttacks counts corrupted answers to cover queries (random
	// rows and decoys the client does not want): targeted attacks.
	CoverAttacks int `json:"cover_attacks"`
	// IndexGaps counts manifests that a signed request list of an epoch
	// named and the primary's copy of the index lacked at a sync of that
	// epoch, a checkpoint's or its end check, or that the pool of an
	// epoch of the decoy window named and the copy lacked after an
	// epoch's start sync (§6.4 v3): the primary left them out.
	// IndexFilled counts those of them that the chain's other servers
	// then gave. Both are added at the epoch's end check and its start.
	IndexGaps   int `json:"index_gaps"`
	IndexFilled int `json:"index_filled"`
	// Checkpoints counts the checkpoints of the epochs taken part in
	// (node/client's checkpoint.go); CheckpointMissed, of the current epoch, the
	// manifests its lists named that no checkpoint brought in time
	// (they wait for the next epoch).
	Checkpoints      int `json:"checkpoints"`
	CheckpointMissed int `json:"checkpoint_missed"`
	// Unconfirmed counts chunks that went out in a round that ended
	// without a signed record of it, counted as published (§5.2 v3).
	Unconfirmed int `json:"unconfirmed"`
}

// PausedJob is a job paused after its allowance of epochs.
type PausedJob struct {
	ID     string `json:"id"`     // the file's id (its link's id)
	Kind   string `json:"kind"`   // "share" or "get"
	Name   string `json:"name"`   // the file's name, if known
	Epochs int    `json:"epochs"` // epochs in which it sent real traffic
	Reason string `json:"reason"`
}

// CheckHandover reports why a job asking for primary (a peer id, "" for
// any), the required servers req and a minimum anonymity set must not be
// handed to a client of status st: it would run under other flags than the
// user gave.
func CheckHandover(st *ClientStatus, primary peer.ID, req []peer.ID, minAnonymity int) error {
	if minAnonymity > st.MinAnonymity {
		return fmt.Errorf("node: the running client asks for an anonymity set of at least %d clients, not %d", st.MinAnonymity, minAnonymity)
	}
	if primary != "" && primary.String() != st.Primary {
		return fmt.Errorf("node: the running client joins through server %s, not %s", st.Primary, primary)
	}
	for _, r := range req {
		ok := r.String() == st.Primary
		for _, s := range st.Require {
			ok = ok || s == r.String()
		}
		if !ok {
			return fmt.Errorf("node: the running client does not require server %s (it requires %v)", r, append([]string{st.Primary}, st.Require...))
		}
	}
	return nil
}

// CheckBudgetHandover reports why a job that does (accept) or does not
// take chains that dropped a server for its refusal budget may not go to
// the running client of status st: a client that takes them would run the
// job in chains its user did not accept (node/client's client_budget.go).
func CheckBudgetHandover(st *ClientStatus, accept bool) error {
	if st.AcceptBudgetDrops && !accept {
		return errors.New("node: the running client takes chains that dropped a server for its refusal budget (--accept-budget-drops); this job does not")
	}
	return nil
}
