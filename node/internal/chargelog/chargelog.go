// Package chargelog is a server's evidence log (docs/protocol.md §3,
// "Charges from evidence" and "The refusal budget"): the signed evidence
// of aborts, voids and equivocations it holds, one record a claimant's
// slot, each record's charge recomputed from the evidence and the
// certificate of its number (blame.ChargeOf), and the refusal budget those
// charges count: two counted aborts less than m epoch numbers apart leave
// a server out of the next m chains. It also remembers which signed
// aborts of recent epochs it handled, so that each is relayed once.
//
// The log is kept in the data directory (File), so that a restart does
// not reset it. Log has its own lock; it takes the certificates' lock
// (through the lookup it is given) after its own, never the server's, and
// does no I/O but its file.
//
//   - chargelog.go: the records, the budget's counts and the seen aborts.
//   - log.go: evidence merged into the log and judged (LogCharge,
//     Rejudge), one record a slot.
package chargelog

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

const (
	// File holds the counted aborts in a data directory (JSON).
	File = "refusals"
	// Keep is how many numbers a server is charged for are kept (two
	// decide; a few more for the operator), and how many records a
	// signer's abort kind and epoch.
	Keep = 4
	// SeenKeep is how many epoch numbers back the relay memory reaches.
	SeenKeep = 16
)

// Record is one counted abort.
type Record struct {
	Peer   string `json:"peer"`
	Number uint64 `json:"number"` // the aborted epoch's number
	Window uint64 `json:"window"` // m of its chain
	Epoch  string `json:"epoch"`  // hex
	Reason string `json:"reason"`
	// Key names the evidence (blame.ChargeKey) and Ev is the evidence itself
	// (wire.Charge: the signed object and the attestations held here), of
	// which Peer is blame.ChargeOf; a leader that leaves the server
	// out hands it to the servers that missed it (BudgetEvidence). Peer
	// is empty when the evidence charges nobody.
	Key string `json:"key,omitempty"`
	Ev  []byte `json:"ev,omitempty"`
	// Waived: a count taken back by a server's own view of its epoch's
	// cause (records written before causes were log entries); kept.
	Waived bool `json:"waived,omitempty"`
	// Cause: the evidence is a public cause of its epoch
	// (blame.PublicCause): it counts, and the other records of its epoch
	// do not.
	Cause bool `json:"cause,omitempty"`
}

// Log is a server's memory of aborts and their evidence, with its own
// lock (the chain is computed without the server's).
type Log struct {
	// dir and log are the server's data directory (File) and log.
	dir string
	log *slog.Logger
	// cert is the certificate of a number kept here, whose context a
	// charge is judged in when it is written (LogCharge).
	cert   func(n uint64) (*wire.Cert, bool)
	mu     sync.Mutex
	loaded sync.Once
	recs   []Record
	// seen: (epoch, signer) aborts already handled here, by the epoch's
	// number for pruning.
	seen map[[32]byte]map[peer.ID]bool
	num  map[[32]byte]uint64
	// pending is evidence waiting for its number's certificate (Pend).
	pending []pend
	// causes: the epochs (hex) with a blame record (Cause).
	causes map[string]bool
}

// Init sets the log's data directory, logger and certificate lookup
// (nil: none kept); the records are read at first use.
func (rs *Log) Init(dir string, log *slog.Logger, cert func(n uint64) (*wire.Cert, bool)) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rs.dir, rs.log, rs.cert = dir, log, cert
}

func (rs *Log) load() { rs.loaded.Do(rs.loadRefusals) }

// FirstSight records that signer's abort of epoch id (of the given
// number) is handled here and reports whether it was new; the memory
// reaches SeenKeep numbers back.
func (rs *Log) FirstSight(id [32]byte, number uint64, signer peer.ID) bool {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.seen == nil {
		rs.seen, rs.num = map[[32]byte]map[peer.ID]bool{}, map[[32]byte]uint64{}
	}
	if rs.seen[id][signer] {
		return false
	}
	if rs.seen[id] == nil {
		rs.seen[id] = map[peer.ID]bool{}
		rs.num[id] = number
		for old, n := range rs.num {
			if n+SeenKeep < number {
				delete(rs.seen, old)
				delete(rs.num, old)
			}
		}
	}
	rs.seen[id][signer] = true
	return true
}

// AbortedByOther reports whether a server other than self aborted epoch
// id here.
func (rs *Log) AbortedByOther(id [32]byte, self peer.ID) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for p := range rs.seen[id] {
		if p != self {
			return true
		}
	}
	return false
}

// BudgetEvidence is the signed fault aborts counted here against the
// servers but self that out reports out for their refusal budget: a
// leader that leaves them out hands these to its chain (§3).
func (rs *Log) BudgetEvidence(self peer.ID, out func(peer.ID) bool) [][]byte {
	rs.load()
	rs.mu.Lock()
	by := map[string][][]byte{}
	for _, r := range rs.recs {
		if r.Ev != nil && r.Peer != "" && !r.Waived && (r.Cause || !rs.causeOf(r.Epoch)) {
			by[r.Peer] = append(by[r.Peer], r.Ev)
		}
	}
	rs.mu.Unlock()
	var ev [][]byte
	for id, aborts := range by {
		p, err := peer.Decode(id)
		if err == nil && p != self && out(p) {
			ev = append(ev, aborts...)
		}
	}
	return ev
}

// Cause notes a blame record of epoch id, the public cause of its end:
// the counts of its epoch's other evidence are taken back, whenever either
// came (a function of what the log holds, never of a clock; the server
// adds its stored blame records at its start).
func (rs *Log) Cause(id [32]byte) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.causes == nil {
		rs.causes = map[string]bool{}
	}
	rs.causes[hex.EncodeToString(id[:])] = true
}

// causeOf reports whether the log holds a public cause of epoch (hex): a
// blame record, or evidence that is one (Record.Cause). Call with rs.mu
// held.
func (rs *Log) causeOf(epoch string) bool {
	if epoch == "" {
		return false
	}
	if rs.causes[epoch] {
		return true
	}
	for i := range rs.recs {
		if r := &rs.recs[i]; r.Cause && r.Epoch == epoch {
			return true
		}
	}
	return false
}

// prune bounds the log: at most Keep records a claimant's abort kind
// and epoch (an honest signer signs one; rounds make the others), the
// smallest keys; for each server charged, every record of its newest
// Keep numbers; of the evidence that charges nobody, the newest Keep an
// abort's signer and the newest SeenKeep of the rest.
// A server's own evidence of more rounds of a number never pushes out
// its older charges (TestSelfFloodKeepsOldCharge), and only the number
// bound reads a record's charge, so that evidence whose charge a
// certificate or an attestation still moves is kept whole. It reads the
// records alone, ordered by number then key, so servers holding the same
// evidence and certificates keep the same whatever the order it came in.
// Call with rs.mu held.
func (rs *Log) prune() {
	sort.SliceStable(rs.recs, func(i, j int) bool {
		a, b := &rs.recs[i], &rs.recs[j]
		if a.Number != b.Number {
			return a.Number < b.Number
		}
		return a.Key < b.Key
	})
	keep := make([]bool, len(rs.recs))
	claims := map[string]int{}
	byKey := make([]int, len(rs.recs))
	for i := range byKey {
		byKey[i] = i
	}
	sort.SliceStable(byKey, func(i, j int) bool { return rs.recs[byKey[i]].Key < rs.recs[byKey[j]].Key })
	for _, i := range byKey {
		c := claimant(&rs.recs[i])
		claims[c]++
		keep[i] = c == "" || claims[c] <= Keep
	}
	// A server's numbers, and evidence charging nobody, from the newest.
	type seen struct {
		last  uint64
		count int
	}
	numbers := map[string]seen{}
	nobody := map[string]int{}
	for i := len(rs.recs) - 1; i >= 0; i-- {
		r := &rs.recs[i]
		if !keep[i] {
			continue
		}
		if r.Peer == "" {
			// Kept to relay and to judge as attestations come: an
			// abort Keep its signer, so that one signer's flood of
			// aborts nobody can attest yet evicts only its own
			// (TestUnchargedFloodEvictsOnlyItsSigner); voids, which
			// carry the whole chain's signatures, share SeenKeep
			// (TestUnchargedVoidsBounded); a silent primary's
			// receipts Keep that primary an epoch.
			k, budget := abortSigner(r), Keep
			if k == "" {
				k, budget = silentPrimary(r), Keep
			}
			if k == "" {
				budget = SeenKeep
			}
			nobody[k]++
			keep[i] = nobody[k] <= budget
			continue
		}
		ns := numbers[r.Peer]
		if ns.count == 0 || ns.last != r.Number {
			ns = seen{r.Number, ns.count + 1}
			numbers[r.Peer] = ns
		}
		keep[i] = ns.count <= Keep
	}
	kept := rs.recs[:0]
	for i, r := range rs.recs {
		if keep[i] {
			kept = append(kept, r)
		}
	}
	rs.recs = kept
}

// abortSigner is the signer of a record's abort; "" for other evidence.
func abortSigner(r *Record) string {
	var ev wire.Charge
	var a wire.Abort
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil || ev.Kind != wire.EvAbort || a.Unmarshal(ev.Item) != nil {
		return ""
	}
	return string(a.Signer)
}

// silentPrimary names the primary and epoch of a record's receipt of a
// silent primary (wire.EvSilent), "" for other evidence: its receipts,
// however many rounds, evict only its own (one record a round).
func silentPrimary(r *Record) string {
	var ev wire.Charge
	var rc wire.OnionReceipt
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil || ev.Kind != wire.EvSilent || rc.Unmarshal(ev.Item) != nil {
		return ""
	}
	return fmt.Sprintf("silent/%x/%d", rc.Epoch, rc.Server)
}

// claimant names who made a record's claim, in which epoch and of what
// kind: its slot without the round (blame.EvidenceSlot); "" but for an
// abort.
func claimant(r *Record) string {
	var ev wire.Charge
	var a wire.Abort
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil || ev.Kind != wire.EvAbort || a.Unmarshal(ev.Item) != nil {
		return ""
	}
	return fmt.Sprintf("%x/%x/%d", a.Epoch, a.Signer, a.Kind)
}

// counted reports whether recs[i] counts: it charges someone, is not
// waived, its epoch has no public cause in the log unless it is that
// cause, and no earlier record charges that server for that epoch (once
// an epoch). Call with rs.mu held.
func (rs *Log) counted(i int) bool {
	r := &rs.recs[i]
	if r.Peer == "" || r.Waived || !r.Cause && rs.causeOf(r.Epoch) {
		return false
	}
	for j := range i {
		q := &rs.recs[j]
		if q.Peer == r.Peer && !q.Waived && (q.Epoch == r.Epoch && r.Epoch != "" || q.Number == r.Number) {
			return false
		}
	}
	return true
}

// OutUntil returns the epoch number up to which p is left out of chains
// (0 if it is not): two counted aborts less than m epoch numbers apart
// leave it out of the m chains after the second.
func (rs *Log) OutUntil(p peer.ID) uint64 {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var prev *Record
	var until uint64
	id := p.String()
	for i := range rs.recs {
		r := &rs.recs[i]
		if r.Peer != id || !rs.counted(i) {
			continue
		}
		if prev != nil && r.Number > prev.Number && r.Number-prev.Number < r.Window {
			until = max(until, r.Number+r.Window)
		}
		prev = r
	}
	return until
}

// OutAt reports whether p is out of the chain of number n for its
// refusal budget: two counted aborts of numbers below n, less than m
// numbers apart, the second less than m before n. It reads nothing but
// the records (their numbers, not this server's own), so servers that
// hold the same evidence agree at every number, whichever number each
// has reached (TestLogReplayAgrees).
func (rs *Log) OutAt(p peer.ID, n uint64) bool {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var prev *Record
	id := p.String()
	for i := range rs.recs {
		r := &rs.recs[i]
		if r.Peer != id || r.Number >= n || !rs.counted(i) {
			continue
		}
		if prev != nil && r.Number > prev.Number && r.Number-prev.Number < r.Window && n <= r.Number+r.Window {
			return true
		}
		prev = r
	}
	return false
}

// RefusalCounts returns how many aborts are counted here against each
// server (tests, operators).
func (rs *Log) RefusalCounts() map[peer.ID]int {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[peer.ID]int{}
	for i, r := range rs.recs {
		if !rs.counted(i) {
			continue
		}
		if p, err := peer.Decode(r.Peer); err == nil {
			out[p]++
		}
	}
	return out
}

// Records returns a copy of the records, all or only those that count
// (tests, operators).
func (rs *Log) Records(counted bool) []Record {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []Record
	for i, r := range rs.recs {
		if !counted || rs.counted(i) {
			out = append(out, r)
		}
	}
	return out
}

// Add appends records as they are, unsaved (tests).
func (rs *Log) Add(recs ...Record) {
	rs.load()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.recs = append(rs.recs, recs...)
}

// Save writes the records (tests).
func (rs *Log) Save() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.saveRefusalsLocked()
}

// Forget drops every record charging p and p's aborts seen (tests).
func (rs *Log) Forget(p peer.ID) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	kept := rs.recs[:0]
	for _, r := range rs.recs {
		if r.Peer != p.String() {
			kept = append(kept, r)
		}
	}
	rs.recs = kept
	for _, m := range rs.seen {
		delete(m, p)
	}
}

// loadRefusals reads the counted aborts of the data directory.
func (rs *Log) loadRefusals() {
	if rs.dir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(rs.dir, File))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		var recs []Record
		if err = json.Unmarshal(b, &recs); err == nil {
			rs.mu.Lock()
			rs.recs = append(recs, rs.recs...)
			rs.prune()
			rs.mu.Unlock()
			return
		}
	}
	rs.log.Error("refusal counts unreadable", "err", err)
}

// saveRefusalsLocked writes the counted aborts durably: a temporary file,
// synced, renamed (a crash leaves the old or the new). Call with rs.mu
// held (one writer at a time, newest last).
func (rs *Log) saveRefusalsLocked() {
	if rs.dir == "" {
		return
	}
	b, err := json.Marshal(rs.recs)
	if err == nil {
		err = proto.WriteFileDurably(filepath.Join(rs.dir, File), b)
	}
	if err != nil {
		rs.log.Error("refusal counts not saved", "err", err)
	}
}
