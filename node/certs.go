package node

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Certified epoch numbers (§3 (v3) "Epoch numbers and leaders";
// docs/proto-node.md "Certified epoch numbers"). Every setup attempt of a
// number N ends in a certificate signed by servers:
//
//   - final: every chain server's signature of N's final descriptor;
//   - abort: every chain server's signature of N's open descriptor, with
//     the signed Abort of one of them (refusals.go);
//   - timeout: more than half of the servers of a group chain C, other than
//     N's leader in C, each signed that no open descriptor of N came
//     within T_lead.
//
// The Prepare and the descriptor of N carry the certificate of N−1, and a
// server prepares N only when it verifies against the servers it knows
// (verifyCert). A server that restarted or was away asks roster servers
// for the certificates from certRecheck below its last (syncCerts) and
// moves its number
// along the verified chain. Certificates are kept in the data directory
// (CertDir), the newest certKeep of them.
const (
	// CertDir is the directory of a data directory that holds one file
	// per certified number (the file name is the number, in decimal).
	CertDir = "certs"
	// certKeep is how many certificates a server keeps: the window a
	// server away for longer than it catches up from (at 30 s an epoch,
	// over 8 hours).
	certKeep = 1024
	// maxVoters bounds the signers whose votes are kept per number, one
	// vote each (its latest): servers whose rosters disagree sign
	// different chains, and a hostile one cannot crowd out the others'.
	maxVoters = wire.MaxServers
	// maxSyncPages bounds the pages one catch-up reads (then the next one
	// goes on).
	maxSyncPages = 8
	// certRecheck is how far below its last number a server's sync asks
	// again, for certificates that outrank its own (certs_sync.go): the
	// depth at which charges still leave a server out (2·m_max numbers,
	// m_max = 8).
	certRecheck = 2 * 8
)

// certState is a server's certificates and the timeout votes it holds. Its
// own lock: never take Server.mu while holding it.
type certState struct {
	mu    sync.Mutex
	top   uint64            // the highest certified number
	certs map[uint64][]byte // encoded certificates, the newest certKeep
	votes map[uint64]*numVotes
	poke  chan struct{}
	ask   int // rotates the roster server asked
	// backs is the push-backs in flight, by peer and number (pushCert).
	backs map[peer.ID]map[uint64]bool
}

// numVotes is the timeout votes of one number: by chain, and each
// signer's chain.
type numVotes struct {
	sets map[[32]byte]*voteSet
	by   map[string][32]byte
}

// voteSet is the timeout votes of one number over one chain.
type voteSet struct {
	chain [][]byte
	sigs  map[uint16][64]byte
}

// knownServers is the group a certificate is verified against when this
// server holds neither the certificate before it nor founders (certGroup):
// this server, the live roster servers eligible by the group's rules and
// every server of a chain this server signed in the probation window. A
// certificate never makes its signers known (an outsider's own timeout
// certificate made it known again, issue 25). Never call with s.mu held.
func (s *Server) knownServers() map[peer.ID]bool {
	known := map[peer.ID]bool{s.h.ID(): true}
	for _, p := range s.groupChain() {
		known[p] = true
	}
	s.who.mu.Lock()
	for _, c := range s.who.chains {
		for _, p := range c.ids {
			known[p] = true
		}
	}
	s.who.mu.Unlock()
	for p := range known {
		if s.rb.serverExcluded(p) {
			delete(known, p)
		}
	}
	return known
}

// certGroup is the group certified for number n, whose signatures alone
// count for n's certificates and timeout votes: the founders for 1, the
// chain of n−1's certificate after. ok is false when it is not known
// here (no founders configured, or n−1's certificate not kept).
func (s *Server) certGroup(n uint64) (map[peer.ID]bool, bool) {
	if n <= 1 {
		s.who.mu.Lock()
		defer s.who.mu.Unlock()
		return s.who.founders, s.who.founders != nil
	}
	c, ok := s.cert.certOf(n - 1)
	if !ok {
		return nil, false
	}
	return certGroupOf(c), true
}

// foundersSet reports whether this server's configuration names founders.
func (w *whoState) foundersSet() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.founders != nil
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

// checkCert verifies c against the group certified for its number
// (verifyCertIn). Without that group here, a server with founders takes
// no certificate (it catches up from number 1, each certificate checked
// against the one before); one without founders checks c against the
// servers it knows (verifyCert), trusting its roster on first use.
func (s *Server) checkCert(c *wire.Cert) error {
	s.hookCertChecked(c)
	if g, ok := s.certGroup(c.Number); ok {
		return proto.VerifyCertIn(c, g)
	}
	if s.who.foundersSet() {
		return fmt.Errorf("node: certificate of %d: the certificate of %d is not here to check it against", c.Number, c.Number-1)
	}
	return proto.VerifyCert(c, s.knownServers())
}

// errChainMinority refuses a Prepare whose chain holds at most half of the
// group certified for its number.
const errChainMinority = wire.Refusal("node: prepared chain holds at most half of the previous certificate's chain")

// holdsCertGroup reports whether chain holds more than half of prev's
// chain, the group certified for the number after prev's: only then does
// a certificate over chain verify (verifyCertIn). A leader proposes, and
// a server takes, no other chain: the group took number 9 over two of
// number 8's four servers and a newcomer, and the servers of 8 it had
// left out (down, partitioned) refused 9's certificate when they came
// back, so they never placed an epoch again (the swarm's seed 9;
// TestPrepareChainMinorityRefused). Number 1 (no previous certificate)
// follows the founders' rule instead (checkFounding).
func holdsCertGroup(chain [][]byte, prev *wire.Cert) bool {
	if prev.Kind == wire.CertNone || len(prev.Chain) == 0 {
		return true
	}
	group := make(map[string]bool, len(prev.Chain))
	for _, b := range prev.Chain {
		group[string(b)] = true
	}
	in := 0
	for _, b := range chain {
		if group[string(b)] {
			in++
		}
	}
	return 2*in > len(group)
}

// certOf returns the kept certificate of n.
func (cs *certState) certOf(n uint64) (*wire.Cert, bool) {
	cs.mu.Lock()
	b := cs.certs[n]
	cs.mu.Unlock()
	if b == nil {
		return nil, false
	}
	var c wire.Cert
	if c.Unmarshal(b) != nil {
		return nil, false
	}
	return &c, true
}

// certTop is the highest certified number here.
func (cs *certState) certTop() uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.top
}

// certRank orders the kinds of one number's certificates (certOutranks):
// a final certificate over an abort certificate over a timeout one.
func certRank(kind uint8) int {
	switch kind {
	case wire.CertFinal:
		return 3
	case wire.CertAbort:
		return 2
	case wire.CertTimeout:
		return 1
	}
	return 0
}

// certOutranks is the one rule that decides which of two verified
// certificates of one number is the number's certificate (§3 "One
// certificate per number"): c replaces held only when its kind ranks
// higher, whatever came first, so that every honest server that holds the
// same two keeps the same one. A final certificate shows that the epoch
// ran (every chain server signed its final descriptor), an abort
// certificate that it opened (every chain server signed its open
// descriptor); a timeout only that more than half of the group saw no
// open descriptor in time, which with an opened epoch takes a server that
// signed both (equivocation, charged: equivocation.go). Of one kind the
// certificate held stays: two of one kind carry the same epoch (two
// epochs opened for one number need a server that signed both opens),
// or, two timeouts, no epoch and nothing charged.
//
// Two timeouts over different chains name different groups for the number
// after (certGroup): of those the one whose chain encodes smaller wins, so
// that the one kept depends only on the certificates held, not on their
// order (TestCertOutranks).
func certOutranks(c, held *wire.Cert) bool {
	if c.Number != held.Number {
		return false
	}
	if c.Kind == wire.CertTimeout && held.Kind == wire.CertTimeout {
		return bytes.Compare(chainKey(c.Chain), chainKey(held.Chain)) < 0
	}
	return certRank(c.Kind) > certRank(held.Kind)
}

// chainKey is the encoding of a certificate's chain.
func chainKey(chain [][]byte) []byte {
	var e wire.Enc
	for _, p := range chain {
		e.Bytes(p)
	}
	return e.B
}

// keepCert stores a verified certificate and reports whether it was new
// here: the first of its number, or one that outranks the one held
// (certOutranks), which it replaces; what follows from the number's
// certificate is then recomputed (certReplaced).
func (s *Server) keepCert(c *wire.Cert) bool { return s.keepCertMade(c, false) }

// keepCertMade is keepCert; made says that this server made c (its final
// or open signatures, a quorum of timeout votes), and then it sends c to
// the group if it was new here (certs_sync.go pushCert).
func (s *Server) keepCertMade(c *wire.Cert, made bool) bool {
	b := c.Marshal()
	s.cert.mu.Lock()
	var held *wire.Cert
	if old, ok := s.cert.certs[c.Number]; ok {
		held = new(wire.Cert)
		if held.Unmarshal(old) == nil && !certOutranks(c, held) {
			s.cert.mu.Unlock()
			return false
		}
	}
	if c.Number+certKeep <= s.cert.top {
		s.cert.mu.Unlock()
		return false
	}
	if err := s.cert.fitsBelowLocked(c); err != nil {
		s.cert.mu.Unlock()
		s.log.Info("certificate not kept: the one below it here certifies another group", "number", c.Number, "err", err)
		return false
	}
	dir := filepath.Join(s.cfg.DataDir, CertDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.cert.mu.Unlock()
		s.log.Error("certificate not saved", "err", err)
		return false
	}
	if err := proto.WriteFileDurably(filepath.Join(dir, strconv.FormatUint(c.Number, 10)), b); err != nil {
		s.cert.mu.Unlock()
		s.log.Error("certificate not saved", "err", err)
		return false
	}
	s.cert.certs[c.Number] = b
	var dropped []uint64
	if held == nil || !bytes.Equal(chainKey(held.Chain), chainKey(c.Chain)) {
		dropped = s.cert.dropPastLocked(c.Number, dir)
	}
	if c.Number > s.cert.top {
		s.cert.top = c.Number
		s.catch.Poke() // an epoch went by: one this server missed may be closed (internal/catchup)
	}
	for n := range s.cert.certs {
		if n+certKeep <= s.cert.top {
			delete(s.cert.certs, n)
			_ = os.Remove(filepath.Join(dir, strconv.FormatUint(n, 10)))
		}
	}
	var votes []*wire.Cert // the timeout votes of c's number, if it is final
	if nv := s.cert.votes[c.Number]; nv != nil && c.Kind == wire.CertFinal {
		for _, vs := range nv.sets {
			t := &wire.Cert{Kind: wire.CertTimeout, Number: c.Number, Chain: vs.chain}
			for i, sg := range vs.sigs {
				t.Sigs = append(t.Sigs, wire.CertSig{Index: i, Sig: sg})
			}
			sort.Slice(t.Sigs, func(i, j int) bool { return t.Sigs[i].Index < t.Sigs[j].Index })
			votes = append(votes, t)
		}
	}
	for n := range s.cert.votes {
		if n <= s.cert.top {
			delete(s.cert.votes, n)
		}
	}
	s.cert.mu.Unlock()
	if held != nil && held.Kind == wire.CertTimeout {
		votes = append(votes, held)
	}
	if len(votes) > 0 {
		// Checked votes (onTimeoutVote) or a verified certificate.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for _, t := range votes {
				s.noteEquivocations(c, t)
			}
		}()
	}
	// A final certificate is the epoch that every server logs as opened
	// and closed; a number that ended otherwise is worth a line.
	// What follows from the number's certificate is recomputed, also
	// for its first: evidence logged before it came was judged in the
	// epoch's own context (TestRejudgeRace).
	s.certReplaced(held, c)
	if len(dropped) > 0 {
		s.log.Warn("certificates past a replaced one dropped: they no longer verify against the group it certifies", "number", c.Number, "dropped", len(dropped))
		for _, n := range dropped {
			s.ref.Rejudge(n, blame.Context{}) // no certificate: nothing of n counts
		}
		s.cert.pokeSync() // the group's, from the new one on
	}
	if held != nil {
		s.log.Info("epoch number's certificate replaced", "number", c.Number, "kind", certKind(c.Kind), "was", certKind(held.Kind))
	} else if c.Kind == wire.CertFinal {
		s.log.Debug("epoch number certified", "number", c.Number, "kind", certKind(c.Kind))
	} else {
		s.log.Info("epoch number certified", "number", c.Number, "kind", certKind(c.Kind))
	}
	if held != nil || made {
		s.pushCert(c, "", false) // so that every server keeps it (certs_sync.go)
	}
	return true
}

// addCert keeps a verified certificate and moves this server's number up
// to it: it never signs an open descriptor of a certified number. Call
// without s.mu.
func (s *Server) addCert(c *wire.Cert) {
	if !s.keepCert(c) {
		return
	}
	s.mu.Lock()
	s.raiseNumberLocked(c.Number)
	s.mu.Unlock()
}

// madeCertLocked is addCert, with s.mu held, of a certificate made here,
// sent to the group when new (keepCertMade).
func (s *Server) madeCertLocked(c *wire.Cert) {
	if s.keepCertMade(c, true) {
		s.raiseNumberLocked(c.Number)
	}
}

// raiseNumberLocked moves the last number to n if above, on disk first,
// and restarts the leader timeout (a number ended). Call with s.mu held.
func (s *Server) raiseNumberLocked(n uint64) {
	if n > s.number {
		if err := saveEpochNumber(s.cfg.DataDir, n); err != nil {
			s.log.Error("epoch number not saved", "err", err)
			return
		}
		s.number = n
	}
	s.progressed()
	s.notify()
}

// loadCerts reads the certificates of dir (the newest certKeep).
func loadCerts(dir string) (map[uint64][]byte, uint64, error) {
	out := map[uint64][]byte{}
	ents, err := os.ReadDir(filepath.Join(dir, CertDir))
	if errors.Is(err, fs.ErrNotExist) {
		return out, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("node: read certificates: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		if n, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && n > 0 {
			nums = append(nums, n)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] > nums[j] })
	var top uint64
	for _, n := range nums[:min(len(nums), certKeep)] {
		path := filepath.Join(dir, CertDir, strconv.FormatUint(n, 10))
		if fi, err := os.Stat(path); err != nil || fi.Size() > wire.MaxCertSize {
			continue
		}
		b, err := os.ReadFile(path)
		var c wire.Cert
		if err != nil || c.Unmarshal(b) != nil || c.Number != n {
			continue
		}
		out[n] = b
		top = max(top, n)
	}
	return out, top, nil
}

// finalCert is the certificate of a final descriptor whose signatures
// checkSigned verified.
func finalCert(sd *wire.Signed, v *proto.View) *wire.Cert {
	c := &wire.Cert{Kind: wire.CertFinal, Number: sd.Desc.Number, Epoch: v.ID, Digest: sha256.Sum256(sd.Desc.Marshal()), Chain: proto.ChainIDs(v.Chain)}
	for i, sg := range sd.Sigs {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
	}
	return c
}

// certifyAbortLocked keeps the abort certificate of e, which a's signer
// ended: only for an epoch opened here (its open signatures are the
// certificate's) and not finalised (its final descriptor is). Call with
// s.mu held.
func (s *Server) certifyAbortLocked(e *sepoch, a *wire.Abort) {
	sigs := e.reg.OpenSigs()
	if e.final != nil || sigs == nil || a.Number != e.v.Desc.Number || a.Epoch != e.v.ID {
		return
	}
	c := &wire.Cert{Kind: wire.CertAbort, Number: a.Number, Epoch: e.v.ID, Chain: proto.ChainIDs(e.v.Chain), Abort: a.Marshal()}
	for i, sg := range sigs {
		c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sg})
	}
	s.madeCertLocked(c)
}

// inCertChain reports whether p is in c's chain.
func inCertChain(c *wire.Cert, p peer.ID) bool {
	for _, b := range c.Chain {
		if peer.ID(b) == p {
			return true
		}
	}
	return false
}

// previousCert is the certificate a Prepare of n carries: that of n−1
// (none for 1).
func (cs *certState) previousCert(n uint64) (wire.Cert, error) {
	if n <= 1 {
		return wire.Cert{}, nil
	}
	c, ok := cs.certOf(n - 1)
	if !ok {
		return wire.Cert{}, fmt.Errorf("node: no certificate of epoch %d here", n-1)
	}
	return *c, nil
}

// checkPrevious is the certificate rule of a Prepare of n: the certificate
// of n−1 verifies against the servers known here (number 1 has none, and
// only a server with no certificate takes it). A verified certificate is
// kept. Never call with s.mu held.
func (s *Server) checkPrevious(n uint64, c *wire.Cert) error {
	if n == 1 {
		if c.Kind != wire.CertNone {
			return errors.New("node: epoch 1 with a previous certificate")
		}
		if s.cert.certTop() > 0 {
			return errors.New("node: epoch 1 after certified epochs")
		}
		return nil
	}
	if c.Number != n-1 {
		return fmt.Errorf("node: epoch %d with the certificate of %d", n, c.Number)
	}
	if mine, ok := s.cert.certOf(c.Number); ok && bytes.Equal(mine.Marshal(), c.Marshal()) {
		// Kept here: verified when it came.
		return nil
	}
	// Another certificate of a number certified here may be as good (a
	// timeout and an abort of one attempt), but it goes into the
	// descriptor: it must verify too, against the group certified for
	// its number.
	if c.Number > s.cert.certTop()+1 {
		// Numbers between are missing here: fetch them meanwhile.
		s.cert.pokeSync()
	}
	if err := s.previousOutranked(c); err != nil {
		return err
	}
	if err := s.checkCert(c); err != nil {
		return err
	}
	s.addCert(c)
	return nil
}

// certReplaced recomputes what follows from the certificate of c's number
// once c replaced held there (certOutranks), or came first (held nil):
// the charges of the number's evidence, from which the budgets, the
// derived chains and their leaders follow. (A final one over a timeout
// one names its equivocators: keepCert.)
func (s *Server) certReplaced(held, c *wire.Cert) {
	if ctx, err := blame.CertContext(c); err == nil {
		s.ref.Rejudge(c.Number, ctx)
	}
}

// takeOutranking keeps c if it outranks the certificate of its number held
// here (certOutranks) and verifies: a Prepare's previous certificate is
// taken so before the Prepare's leader is checked, since the leader
// follows from the charges that the number's certificate decides. Never
// call with s.mu held.
func (s *Server) takeOutranking(c *wire.Cert) {
	mine, ok := s.cert.certOf(c.Number)
	if !ok || !certOutranks(c, mine) {
		return
	}
	if err := s.checkCert(c); err != nil {
		return
	}
	s.addCert(c)
}

// previousOutranked refuses a Prepare's previous certificate outranked by
// the one of its number held here (certOutranks), so that its leader
// catches up (a refused Prepare pokes its certificate sync, which asks
// for the number it holds too) rather than the chain be derived from
// another certificate than the group's; and an abort after a final
// (abortAfterFinal).
func (s *Server) previousOutranked(c *wire.Cert) error {
	if mine, ok := s.cert.certOf(c.Number); ok && certOutranks(mine, c) {
		return fmt.Errorf("node: previous certificate of %d of kind %s, %s here", c.Number, certKind(c.Kind), certKind(mine.Kind))
	}
	return s.abortAfterFinal(c)
}

// abortAfterFinal refuses an abort certificate of a number this server
// knows went final: it keeps the number's final certificate, or holds
// the epoch's final descriptor. Any member of a final epoch's chain holds
// its open signatures and can add an abort of its own (AbortNoClose), so
// such a certificate proves nothing (an abort after a final is not
// evidence); carried as a Prepare's previous certificate or in its gap,
// it would end the walk's pin of that epoch for good (only a final
// certificate pins a record) and charge its leader at the clients.
func (s *Server) abortAfterFinal(c *wire.Cert) error {
	if c.Kind != wire.CertAbort {
		return nil
	}
	if mine, ok := s.cert.certOf(c.Number); ok && mine.Kind == wire.CertFinal {
		return fmt.Errorf("node: an abort certificate of %d, final here", c.Number)
	}
	s.mu.Lock()
	e := s.epochs[c.Epoch]
	final := e != nil && e.final != nil
	s.mu.Unlock()
	if final {
		return fmt.Errorf("node: an abort certificate of %d, whose final descriptor is here", c.Number)
	}
	return nil
}
