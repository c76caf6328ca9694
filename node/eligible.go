package node

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
)

// Who may serve (§3 (v3) "Who may serve"; docs/proto-node.md "Who may
// serve"). A live roster server is eligible for a chain this server joins
// when the operator's pins allow it (--allow-server) and it is past its
// probation. A server refuses to prepare an epoch whose chain holds a
// server not eligible here, and says so as a withdrawal (the leader leaves
// the withdrawer out of its next attempts); it is not a fault of anyone.
const (
	// DefaultProbation is P_prob, a group constant: the epochs a peer id
	// absent from every chain of the last seenWindow epochs spends in the
	// roster before it joins a chain. A Sybil that changes its peer id
	// waits this long each time; 8 epochs of R = 256 rounds are hours.
	DefaultProbation = 8
	// seenWindow is 4·m_max epochs (m_max = 8, §3): a peer id in a chain
	// of one of the last seenWindow epochs serves no probation.
	seenWindow = 4 * 8
	// ChainsFile holds, in a data directory, the chains of the last
	// seenWindow epochs this server signed an open descriptor for, one a
	// line: the number, then the peer ids in chain order.
	ChainsFile = "chains"
	// withdrawMark begins every withdrawal's reason.
	withdrawMark = "withdraws from the chain"
)

// seenChain is a chain of an epoch this server signed.
type seenChain struct {
	number uint64
	ids    []peer.ID
}

// whoState is what eligibility needs; mu guards it (never take Server.mu
// while holding it).
type whoState struct {
	mu        sync.Mutex
	allow     map[peer.ID]bool // nil: every server allowed
	founders  map[peer.ID]bool // nil: none configured (ServerConfig.Founders)
	probation int              // P_prob; 0: none
	chains    []seenChain      // oldest first, at most seenWindow
	// since is this server's epoch number when it first saw each peer in
	// its roster, and when it last did: probation counts from the first
	// (kept in memory only; after a restart, or once the peer was not seen
	// for rosterForget, probation starts again, which only errs on the
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

// maxSince bounds the peers whose first sighting is kept (the roster
// admits only authenticated hellos, yet peer ids are free). A full table
// makes room by forgetting the peers not seen the longest, so that a
// genuine newcomer, seen at every hello, always gets its entry.
const maxSince = 4096

func (w *whoState) now() time.Time {
	if w.clock != nil {
		return w.clock()
	}
	return time.Now()
}

// prune forgets the sightings of peers not seen for rosterForget and the
// withdrawals that ended.
func (w *whoState) prune() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneLocked(w.now())
}

func (w *whoState) pruneLocked(now time.Time) {
	for p, s := range w.since {
		if now.Sub(s.last) >= rosterForget {
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
func (w *whoState) sightLocked(p peer.ID, n uint64, now time.Time) {
	if len(w.since) >= maxSince {
		w.pruneLocked(now)
	}
	if len(w.since) >= maxSince {
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

func (w *whoState) init(cfg *ServerConfig, chains []seenChain) {
	if len(cfg.AllowServers) > 0 {
		w.allow = map[peer.ID]bool{}
		for _, p := range cfg.AllowServers {
			w.allow[p] = true
		}
	}
	switch {
	case cfg.Probation == 0:
		w.probation = DefaultProbation
	case cfg.Probation > 0:
		w.probation = cfg.Probation
	}
	if len(cfg.Founders) > 0 {
		w.founders = map[peer.ID]bool{}
		for _, p := range cfg.Founders {
			w.founders[p] = true
		}
	}
	w.chains = chains
	w.since = map[peer.ID]sighting{}
	w.withdrawn = map[peer.ID]time.Time{}
}

// saw records a hello of p at epoch number n: its first sighting, or the
// last one of a peer already sighted.
func (w *whoState) saw(p peer.ID, n uint64) {
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

// check says why p may not serve with this server at epoch number n (this
// server's last number), or nil. self is this server. pins: whether the
// operator's pins count (the leader rotation follows the group's rules
// alone, never one operator's taste).
func (w *whoState) check(self, p peer.ID, n uint64, pins bool) error {
	if p == self {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pins && w.allow != nil && !w.allow[p] {
		return fmt.Errorf("node: %s: server %s not allowed here (--allow-server)", withdrawMark, p.ShortString())
	}
	// Number 1 (no number signed or certified here): only founders,
	// when the group has them, so that outsiders that said hello before
	// the first epoch hold no seat (nor vote) in it.
	if n == 0 && w.founders != nil && !w.founders[p] {
		return fmt.Errorf("node: %s: server %s is not a founder of this group", withdrawMark, p.ShortString())
	}
	// Bootstrap: a server that never signed an epoch with a chain puts
	// nobody on probation, so that a brand-new group (every server new)
	// forms; from its first chain on, newcomers wait.
	if w.probation == 0 || len(w.chains) == 0 {
		return nil
	}
	for _, c := range w.chains {
		if c.number+seenWindow <= n {
			continue
		}
		for _, q := range c.ids {
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
		return fmt.Errorf("node: %s: server %s on probation here until epoch %d", withdrawMark, p.ShortString(), end)
	}
	return nil
}

// withdraw notes that p withdrew from a chain this server proposed, for
// ttl.
func (w *whoState) withdraw(p peer.ID, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if len(w.withdrawn) >= maxSince {
		w.pruneLocked(now)
	}
	if len(w.withdrawn) < maxSince {
		w.withdrawn[p] = now.Add(ttl)
	}
}

// hasWithdrawn reports whether p withdrew recently.
func (w *whoState) hasWithdrawn(p peer.ID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.withdrawn[p]
	if ok && w.now().After(until) {
		delete(w.withdrawn, p)
		return false
	}
	return ok
}

// record adds the chain of epoch n and writes the window to dir.
func (w *whoState) record(dir string, n uint64, chain []peer.ID) error {
	w.mu.Lock()
	w.chains = append(w.chains, seenChain{number: n, ids: append([]peer.ID(nil), chain...)})
	if len(w.chains) > seenWindow {
		w.chains = w.chains[len(w.chains)-seenWindow:]
	}
	var b bytes.Buffer
	for _, c := range w.chains {
		b.WriteString(strconv.FormatUint(c.number, 10))
		for _, p := range c.ids {
			b.WriteByte(' ')
			b.WriteString(p.String())
		}
		b.WriteByte('\n')
	}
	w.mu.Unlock()
	return proto.WriteFileDurably(filepath.Join(dir, ChainsFile), b.Bytes())
}

// maxChainsFile bounds the chains file read at start (seenWindow lines of
// at most wire.MaxServers peer ids).
const maxChainsFile = 1 << 20

// loadChains reads dir's chains file (none: no chain on record).
func loadChains(dir string) ([]seenChain, error) {
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
	var out []seenChain
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
		c := seenChain{number: n}
		for _, s := range f[1:] {
			p, err := peer.Decode(s)
			if err != nil {
				return nil, fmt.Errorf("node: chains file %s: %w", path, err)
			}
			c.ids = append(c.ids, p)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("node: chains file %s: %w", path, err)
	}
	if len(out) > seenWindow {
		out = out[len(out)-seenWindow:]
	}
	return out, nil
}

// checkFounding is the rule of number 1's chain when the group has
// founders: founders only, more than half of them (so that its
// certificate verifies against them everywhere).
func (w *whoState) checkFounding(chain []peer.ID) error {
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

// lastNumber is this server's last epoch number.
func (s *Server) lastNumber() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.number
}

// eligible says why p may not be in a chain this server joins, or nil.
func (s *Server) eligible(p peer.ID) error {
	return s.who.check(s.h.ID(), p, s.lastNumber(), true)
}

// eligibleChain returns this server and the live roster servers eligible
// here (not named by a round blame, allowed, past probation), in chain
// order.
func (s *Server) eligibleChain() []peer.ID { return s.filterChain(true) }

// groupChain is eligibleChain by the group's rules alone (the operator's
// pins left aside): the chain the leader rotation runs over (rotate.go),
// so that servers with different pins agree on the leaders.
func (s *Server) groupChain() []peer.ID { return s.filterChain(false) }

func (s *Server) filterChain(pins bool) []peer.ID {
	n := s.lastNumber()
	var ids []peer.ID
	for _, p := range s.chain() {
		if s.who.check(s.h.ID(), p, n, pins) == nil {
			ids = append(ids, p)
		}
	}
	return ids
}

// pinned is chain less the servers the operator's pins leave out.
func (s *Server) pinned(chain []peer.ID) []peer.ID {
	s.who.mu.Lock()
	defer s.who.mu.Unlock()
	var out []peer.ID
	for _, p := range chain {
		if p == s.h.ID() || s.who.allow == nil || s.who.allow[p] {
			out = append(out, p)
		}
	}
	return out
}

// proposedChain is the chain a leader proposes: the eligible chain less
// the servers that withdrew lately.
func (s *Server) proposedChain(eligible []peer.ID) []peer.ID {
	var out []peer.ID
	for _, p := range eligible {
		if p == s.h.ID() || !s.who.hasWithdrawn(p) {
			out = append(out, p)
		}
	}
	return out
}

// noteWithdrawal records the server whose refusal in err is a withdrawal,
// or that refused on another ground; it reports whether there was one
// (the leader then tries again at once without it).
func (s *Server) noteWithdrawal(err error) bool {
	var ce *chainErr
	if !errors.As(err, &ce) {
		return false
	}
	if errors.Is(ce.Err, errBusy) {
		// Turn-taking, no refusal: the server's own epoch ended a
		// moment after the leader's; the leader tries again later
		// with it (leader.go).
		return false
	}
	if !strings.Contains(ce.Err.Error(), withdrawMark) {
		// (issue 25 point 3) a server that refused the Prepare on any
		// other ground is left out of the next attempt at this number
		// for a moment: every other server asks it whether it would
		// serve (derive.go) and accepts its absence only if it refuses
		// that question too, so a refuser no longer halts the group and
		// an honest server a wrong leader dropped is not left out.
		if ce.Peer != s.h.ID() {
			s.log.Info("server refused the prepare: next attempt without it", "peer", ce.Peer.ShortString(), "reason", ce.Err.Error())
			s.who.withdraw(ce.Peer, helloEvery)
			return true
		}
		return false
	}
	s.log.Info("server withdrew", "peer", ce.Peer.ShortString(), "reason", ce.Err.Error())
	// A probation ends after epochs the withdrawer counts, not here: its
	// withdrawal is kept only until the next hellos.
	ttl := s.cfg.Timing.WithdrawTTL
	if strings.Contains(ce.Err.Error(), "probation") {
		ttl = helloEvery
	}
	s.who.withdraw(ce.Peer, ttl)
	return true
}

// chainErr is the failure of one server of a chain in Server.each.
type chainErr struct {
	Index int
	Peer  peer.ID
	Err   error
}

func (e *chainErr) Error() string {
	return fmt.Sprintf("server %d (%s): %v", e.Index, e.Peer.ShortString(), e.Err)
}

func (e *chainErr) Unwrap() error { return e.Err }
