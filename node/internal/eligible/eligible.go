// Package eligible is who may serve with a server (docs/protocol.md §3
// (v3) "Who may serve"; docs/proto-node.md "Who may serve"): the
// operator's pins, the probation of a peer id new to the group's chains
// (counted from the certified log alone: the chains and candidacies its
// certificates record), the founders of number 1, the chains this server
// signed (kept in its data directory, for the known servers of
// internal/certs) and the servers that withdrew from a chain it proposed
// lately. Table has its own lock, a leaf: the log is read with it
// released. It does no I/O but the chains file. Network-free tests.
package eligible

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
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
	// DefaultProbation is P_prob, a group constant: the numbers from the
	// first certificate of the last SeenWindow that records a peer id as
	// a candidate to the first chain it may join, when no chain of those
	// numbers held it. A Sybil that changes its peer id waits this long
	// each time; 8 epochs of R = 256 rounds are hours.
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
	// log is the certificate of a number kept here (the certified log):
	// eligibility is a function of it alone, the same on every server
	// that holds the same certificates.
	roles func(n uint64, p peer.ID) (kept, inChain, cand bool)
	// since is this server's epoch number when it first saw each peer in
	// its roster, when it last did, and the last candidacy of it read in
	// the log: only the order in which its turns as leader record
	// candidates (Order), never who may serve.
	since map[peer.ID]sighting
	// withdrawn are servers that withdrew from a chain this server
	// proposed, until a time.
	withdrawn map[peer.ID]time.Time
	// clock, if set, replaces time.Now (tests).
	clock func() time.Time
}

// sighting is a peer's first epoch number here, its last hello and the
// last number whose certificate recorded it as a candidate (0: none seen).
// The record outlives the window, so that a peer whose candidacy lapsed
// (it never joined a chain) goes behind every peer never recorded.
type sighting struct {
	number   uint64
	last     time.Time
	recorded uint64
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

// SetLog sets the certified log eligibility reads as the certificates
// of each number (tests; a server sets SetRoles).
func (w *Table) SetLog(of func(n uint64) (*wire.Cert, bool)) {
	w.SetRoles(func(n uint64, p peer.ID) (kept, inChain, cand bool) {
		c, ok := of(n)
		if !ok {
			return false, false, false
		}
		is := func(q []byte) bool { return peer.ID(q) == p }
		return true, slices.ContainsFunc(c.Chain, is), slices.ContainsFunc(c.Cands, is)
	})
}

// SetRoles sets the certified log eligibility reads (certs.Certs.Roles:
// whether the certificate of n is kept, holds p in its chain, records p
// as a candidate), indexed so that refusing a peer decodes nothing.
func (w *Table) SetRoles(roles func(n uint64, p peer.ID) (kept, inChain, cand bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roles = roles
}

// Check says why p may not serve with this server in the chain of epoch
// number n, or nil. self is this server. pins: whether the operator's
// pins count (the leader rotation follows the group's rules alone, never
// one operator's taste). Past the pins, the answer is a function of n and
// the certified log (Recorded), never of this server's own sightings: two
// servers that hold the same certificates agree on it.
func (w *Table) Check(self, p peer.ID, n uint64, pins bool) error {
	return w.CheckPrev(self, p, n, pins, nil)
}

// CheckPrev is Check for the chain of a Prepare of n whose previous
// certificate has chain prev: a server of it serves no probation (that
// certificate is checked after, and may not be kept here yet); the pins
// still count.
func (w *Table) CheckPrev(self, p peer.ID, n uint64, pins bool, prev [][]byte) error {
	if p == self {
		return nil
	}
	w.mu.Lock()
	notAllowed := pins && w.allow != nil && !w.allow[p]
	notFounder := w.founders != nil && !w.founders[p]
	prob := uint64(w.probation)
	w.mu.Unlock()
	if notAllowed {
		return fmt.Errorf("node: %s: server %s not allowed here (--allow-server)", WithdrawMark, p.ShortString())
	}
	if slices.ContainsFunc(prev, func(b []byte) bool { return peer.ID(b) == p }) {
		return nil
	}
	// Number 1: only founders, when the group has them, so that outsiders
	// that said hello before the first epoch hold no seat (nor vote) in
	// it; without founders nobody is on probation, so that a brand-new
	// group forms.
	if n <= 1 {
		if notFounder {
			return fmt.Errorf("node: %s: server %s is not a founder of this group", WithdrawMark, p.ShortString())
		}
		return nil
	}
	if prob == 0 {
		return nil
	}
	inChain, candAt := w.Recorded(p, n)
	if inChain || (candAt != 0 && candAt+prob <= n) {
		return nil
	}
	if candAt != 0 {
		return fmt.Errorf("node: %s: server %s on probation until epoch %d (a candidate certified at %d)", WithdrawMark, p.ShortString(), candAt+prob, candAt)
	}
	return fmt.Errorf("node: %s: server %s on probation: no chain nor candidacy of it certified in the %d numbers before %d", WithdrawMark, p.ShortString(), SeenWindow, n)
}

// Recorded reads the certified log for p at number n: whether it is in
// the chain of a certificate of the SeenWindow numbers before n (the
// founders count as the chain of number 0), and the first of those
// certificates that records it as a candidate (0: none). A certificate
// not held here records nothing.
func (w *Table) Recorded(p peer.ID, n uint64) (inChain bool, candAt uint64) {
	w.mu.Lock()
	founder := w.founders[p]
	roles := w.roles
	w.mu.Unlock()
	if founder && n <= SeenWindow {
		return true, 0
	}
	if roles == nil {
		return false, 0
	}
	from := uint64(1)
	if n > SeenWindow {
		from = n - SeenWindow
	}
	var lastCand uint64
	for c := from; c < n; c++ {
		kept, inChain, cand := roles(c, p)
		if !kept {
			continue
		}
		if inChain {
			return true, 0
		}
		if cand {
			if candAt == 0 {
				candAt = c
			}
			lastCand = c
		}
	}
	if lastCand != 0 {
		w.noteRecorded(p, lastCand)
	}
	return false, candAt
}

// noteRecorded remembers that the certificate of c recorded p as a
// candidate, for a peer sighted here (the table stays bounded by since).
func (w *Table) noteRecorded(p peer.ID, c uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.since[p]; ok && c > s.recorded {
		s.recorded = c
		w.since[p] = s
	}
}

// Probation is P_prob (0: none).
func (w *Table) Probation() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.probation
}

// Order sorts ids by the last candidacy of each this server read in the
// log (never recorded first), then by its first sighting (never sighted
// last), then by peer id: the order in which a leader records candidates,
// so that servers sighted after a waiting one never push it out, and a
// peer whose record lapsed (it never joined a chain) takes one turn per
// lapse, behind every peer never recorded.
func (w *Table) Order(ids []peer.ID) {
	type key struct{ recorded, first uint64 }
	w.mu.Lock()
	keys := make(map[peer.ID]key, len(ids))
	for _, p := range ids {
		k := key{first: ^uint64(0)}
		if s, ok := w.since[p]; ok {
			k = key{recorded: s.recorded, first: s.number}
		}
		keys[p] = k
	}
	w.mu.Unlock()
	slices.SortFunc(ids, func(a, b peer.ID) int {
		ka, kb := keys[a], keys[b]
		if c := cmp.Compare(ka.recorded, kb.recorded); c != 0 {
			return c
		}
		if c := cmp.Compare(ka.first, kb.first); c != 0 {
			return c
		}
		return strings.Compare(string(a), string(b))
	})
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
