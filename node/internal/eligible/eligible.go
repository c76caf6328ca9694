// Package eligible is who may serve with a server (docs/protocol.md §3
// (v3) "Who may serve"; docs/proto-node.md "Who may serve"): the
// operator's pins, the probation of a peer id new to the group's chains,
// the founders of number 1, the chains this server signed (kept in its
// data directory) and the servers that withdrew from a chain it proposed
// lately. Table has its own lock, a leaf; it does no I/O but the chains
// file. Network-free tests.
package eligible

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roster"
)

// Who may serve (§3 (v3) "Who may serve"; docs/proto-node.md "Who may
// serve"). A live roster server is eligible for a chain this server joins
// when the operator's pins allow it (--allow-server) and it is past its
// probation. A server refuses to prepare an epoch whose chain holds a
// server not eligible here, and says so as a withdrawal (the leader leaves
// the withdrawer out of its next attempts); it is not a fault of anyone.
const (
	// DefaultProbation is P_prob, a group constant: the epochs a peer id
	// absent from every chain of the last SeenWindow epochs spends in the
	// roster before it joins a chain. A Sybil that changes its peer id
	// waits this long each time; 8 epochs of R = 256 rounds are hours.
	DefaultProbation = 8
	// SeenWindow is 4·m_max epochs (m_max = 8, §3): a peer id in a chain
	// of one of the last SeenWindow epochs serves no probation.
	SeenWindow = 4 * 8
	// ChainsFile holds, in a data directory, the chains of the last
	// SeenWindow epochs this server signed an open descriptor for, one a
	// line: the number, then the peer ids in chain order.
	ChainsFile = "chains"
	// WithdrawMark begins every withdrawal's reason.
	WithdrawMark = "withdraws from the chain"
)

// SeenChain is a chain of an epoch this server signed.
type SeenChain struct {
	Number uint64
	IDs    []peer.ID
}

// Table is what eligibility needs, under its own lock (a leaf: it calls
// nothing while held).
type Table struct {
	mu        sync.Mutex
	allow     map[peer.ID]bool // nil: every server allowed
	founders  map[peer.ID]bool // nil: none configured
	probation int              // P_prob; 0: none
	chains    []SeenChain      // oldest first, at most SeenWindow
	// since is this server's epoch number when it first saw each peer in
	// its roster, and when it last did: probation counts from the first
	// (kept in memory only; after a restart, or once the peer was not seen
	// for roster.Forget, probation starts again, which only errs on the
	// safe side).
	since map[peer.ID]sighting
	// withdrawn are servers that withdrew from a chain this server
	// proposed, until a time.
	withdrawn map[peer.ID]time.Time
	// clock, if set, replaces time.Now (tests).
	clock func() time.Time
}

// sighting is a peer's first epoch number here and its last hello.
type sighting struct {
	number uint64
	last   time.Time
}

// MaxSince bounds the peers whose first sighting is kept (the roster
// admits only authenticated hellos, yet peer ids are free). A full table
// makes room by forgetting the peers not seen the longest, so that a
// genuine newcomer, seen at every hello, always gets its entry.
const MaxSince = 4096

func (w *Table) now() time.Time {
	if w.clock != nil {
		return w.clock()
	}
	return time.Now()
}

// Prune forgets the sightings of peers not seen for roster.Forget and the
// withdrawals that ended.
func (w *Table) Prune() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(w.now())
}

func (w *Table) pruneLocked(now time.Time) {
	for p, s := range w.since {
		if now.Sub(s.last) >= roster.Forget {
			delete(w.since, p)
		}
	}
	for p, until := range w.withdrawn {
		if now.After(until) {
			delete(w.withdrawn, p)
		}
	}
}

// sightLocked records a first sighting of p at n, making room if the
// table is full: the stale first, then the one not seen the longest.
func (w *Table) sightLocked(p peer.ID, n uint64, now time.Time) {
	if len(w.since) >= MaxSince {
		w.pruneLocked(now)
	}
	if len(w.since) >= MaxSince {
		var oldest peer.ID
		var at time.Time
		for q, s := range w.since {
			if oldest == "" || s.last.Before(at) {
				oldest, at = q, s.last
			}
		}
		delete(w.since, oldest)
	}
	w.since[p] = sighting{number: n, last: now}
}

// Init sets the operator's pins (allow; none: every server allowed),
// P_prob (0: DefaultProbation; negative: none), the group's founders (none:
// not configured) and the chains signed on record (LoadChains).
func (w *Table) Init(allow []peer.ID, probation int, founders []peer.ID, chains []SeenChain) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(allow) > 0 {
		w.allow = map[peer.ID]bool{}
		for _, p := range allow {
			w.allow[p] = true
		}
	}
	switch {
	case probation == 0:
		w.probation = DefaultProbation
	case probation > 0:
		w.probation = probation
	}
	if len(founders) > 0 {
		w.founders = map[peer.ID]bool{}
		for _, p := range founders {
			w.founders[p] = true
		}
	}
	w.chains = chains
	w.since = map[peer.ID]sighting{}
	w.withdrawn = map[peer.ID]time.Time{}
}

// Saw records a hello of p at epoch number n: its first sighting, or the
// last one of a peer already sighted.
func (w *Table) Saw(p peer.ID, n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if s, ok := w.since[p]; ok {
		s.last = now
		w.since[p] = s
		return
	}
	w.sightLocked(p, n, now)
}

// Check says why p may not serve with this server at epoch number n (this
// server's last number), or nil. self is this server. pins: whether the
// operator's pins count (the leader rotation follows the group's rules
// alone, never one operator's taste).
func (w *Table) Check(self, p peer.ID, n uint64, pins bool) error {
	if p == self {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pins && w.allow != nil && !w.allow[p] {
		return fmt.Errorf("node: %s: server %s not allowed here (--allow-server)", WithdrawMark, p.ShortString())
	}
	// Number 1 (no number signed or certified here): only founders,
	// when the group has them, so that outsiders that said hello before
	// the first epoch hold no seat (nor vote) in it.
	if n == 0 && w.founders != nil && !w.founders[p] {
		return fmt.Errorf("node: %s: server %s is not a founder of this group", WithdrawMark, p.ShortString())
	}
	// Bootstrap: a server that never signed an epoch with a chain puts
	// nobody on probation, so that a brand-new group (every server new)
	// forms; from its first chain on, newcomers wait.
	if w.probation == 0 || len(w.chains) == 0 {
		return nil
	}
	// The founders are the group certified for number 1, the same list in
	// every configuration: a chain of number 0. A founder that number 1
	// left out by the order of the first hellos is no newcomer (probation
	// from this server's own sighting kept it out for P_prob epochs).
	if w.founders[p] && n < SeenWindow {
		return nil
	}
	for _, c := range w.chains {
		if c.Number+SeenWindow <= n {
			continue
		}
		for _, q := range c.IDs {
			if q == p {
				return nil
			}
		}
	}
	s, ok := w.since[p]
	if !ok {
		s.number = n
		w.sightLocked(p, n, w.now())
	}
	if end := s.number + uint64(w.probation); n < end {
		return fmt.Errorf("node: %s: server %s on probation here until epoch %d", WithdrawMark, p.ShortString(), end)
	}
	return nil
}

// Withdraw notes that p withdrew from a chain this server proposed, for
// ttl.
func (w *Table) Withdraw(p peer.ID, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if len(w.withdrawn) >= MaxSince {
		w.pruneLocked(now)
	}
	if len(w.withdrawn) < MaxSince {
		w.withdrawn[p] = now.Add(ttl)
	}
}

// HasWithdrawn reports whether p withdrew recently.
func (w *Table) HasWithdrawn(p peer.ID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.withdrawn[p]
	if ok && w.now().After(until) {
		delete(w.withdrawn, p)
		return false
	}
	return ok
}

// Record adds the chain of epoch n and writes the window to dir.
func (w *Table) Record(dir string, n uint64, chain []peer.ID) error {
	w.mu.Lock()
	w.chains = append(w.chains, SeenChain{Number: n, IDs: append([]peer.ID(nil), chain...)})
	if len(w.chains) > SeenWindow {
		w.chains = w.chains[len(w.chains)-SeenWindow:]
	}
	var b bytes.Buffer
	for _, c := range w.chains {
		b.WriteString(strconv.FormatUint(c.Number, 10))
		for _, p := range c.IDs {
			b.WriteByte(' ')
			b.WriteString(p.String())
		}
		b.WriteByte('\n')
	}
	w.mu.Unlock()
	return proto.WriteFileDurably(filepath.Join(dir, ChainsFile), b.Bytes())
}

// maxChainsFile bounds the chains file read at start (SeenWindow lines of
// at most wire.MaxServers peer ids).
const maxChainsFile = 1 << 20

// LoadChains reads dir's chains file (none: no chain on record).
func LoadChains(dir string) ([]SeenChain, error) {
	path := filepath.Join(dir, ChainsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("node: read chains: %w", err)
	}
	if len(b) > maxChainsFile {
		return nil, fmt.Errorf("node: chains file %s larger than %d bytes", path, maxChainsFile)
	}
	var out []SeenChain
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxChainsFile)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("node: chains file %s: %w", path, err)
		}
		c := SeenChain{Number: n}
		for _, s := range f[1:] {
			p, err := peer.Decode(s)
			if err != nil {
				return nil, fmt.Errorf("node: chains file %s: %w", path, err)
			}
			c.IDs = append(c.IDs, p)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("node: chains file %s: %w", path, err)
	}
	if len(out) > SeenWindow {
		out = out[len(out)-SeenWindow:]
	}
	return out, nil
}

// CheckFounding is the rule of number 1's chain when the group has
// founders: founders only, more than half of them (so that its
// certificate verifies against them everywhere).
func (w *Table) CheckFounding(chain []peer.ID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.founders
	if f == nil {
		return nil
	}
	for _, p := range chain {
		if !f[p] {
			return fmt.Errorf("node: epoch 1's chain holds %s, not a founder", p.ShortString())
		}
	}
	if 2*len(chain) <= len(f) {
		return fmt.Errorf("node: epoch 1's chain holds %d of the %d founders, not more than half", len(chain), len(f))
	}
	return nil
}

// Founders is the group's founders (nil: none configured); not to be
// changed.
func (w *Table) Founders() map[peer.ID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.founders
}

// SignedChains is the chains this server signed in the probation window,
// oldest first.
func (w *Table) SignedChains() [][]peer.ID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][]peer.ID, 0, len(w.chains))
	for _, c := range w.chains {
		out = append(out, c.IDs)
	}
	return out
}

// Filter is the servers of chain that may serve with self at epoch number
// n (Check), in chain order; pins as Check's.
func (w *Table) Filter(self peer.ID, chain []peer.ID, n uint64, pins bool) []peer.ID {
	var ids []peer.ID
	for _, p := range chain {
		if w.Check(self, p, n, pins) == nil {
			ids = append(ids, p)
		}
	}
	return ids
}

// Pinned is chain less the servers the operator's pins leave out (self
// stays).
func (w *Table) Pinned(self peer.ID, chain []peer.ID) []peer.ID {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []peer.ID
	for _, p := range chain {
		if p == self || w.allow == nil || w.allow[p] {
			out = append(out, p)
		}
	}
	return out
}

// Proposed is the chain a leader proposes: the eligible chain less the
// servers that withdrew lately (self stays).
func (w *Table) Proposed(self peer.ID, eligible []peer.ID) []peer.ID {
	var out []peer.ID
	for _, p := range eligible {
		if p == self || !w.HasWithdrawn(p) {
			out = append(out, p)
		}
	}
	return out
}

// SetFounders replaces the founders (tests).
func (w *Table) SetFounders(f map[peer.ID]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.founders = f
}

// SetClock replaces time.Now (tests).
func (w *Table) SetClock(now func() time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clock = now
}

// Sizes is how many sightings and withdrawals are kept (tests).
func (w *Table) Sizes() (sightings, withdrawals int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.since), len(w.withdrawn)
}

// FirstSeen is p's first epoch number here (tests).
func (w *Table) FirstSeen(p peer.ID) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.since[p]
	return s.number, ok
}
