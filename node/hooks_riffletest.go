//go:build riffletest

package node

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/leader"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// The tests' hook points (hooks.go has the empty ones of the binary): each
// calls what a test set in the config (observe.go, cheat.go, the fields
// below) or in a running server or client (serverHooks, clientHooks).

// serverHookCfg is what a test sets in a ServerConfig.
type serverHookCfg struct {
	// observe is the anonymity tests' view of what this server sees
	// (observe.go).
	observe *testObserver
	// cheat makes this server a leader that breaks the selection's rules
	// (cheat.go).
	cheat *leaderCheat
	// indexPage, if set, replaces wire.IndexPageBytes as the budget of
	// one index page (many pages from a small index).
	indexPage int
}

// serverHookState: hooks are set by a test on a running server (a
// malicious cast).
type serverHookState struct {
	hooks atomic.Pointer[serverHooks]
}

// hookSrc gives a part of the server outside Server (mixer, submissions,
// closings) the server's hook points.
type hookSrc struct{ s *Server }

func newHookSrc(s *Server) hookSrc { return hookSrc{s} }
func (h hookSrc) run() *hookRun    { return h.s.hookRun() }
func (h hookSrc) cfg() *hookCfg    { return h.s.hookCfg() }

// serverHooks let a test make a server misbehave.
type serverHooks struct {
	// noPace makes this server start its layers without the group
	// pace (a malicious server that runs rounds fast; pace.go).
	noPace bool
	// corruptOut may alter this server's output batch of round r before
	// it is signed.
	corruptOut func(r uint32, out [][]byte)
	// accuse may name an input position of round r as failing its MAC
	// although it did not (a false accusation).
	accuse func(r uint32) (int, bool)
	// probe, if set, is told whether this server, right after its
	// accusation, got its predecessor's walk step (it must not, for an
	// accusation that does not hold).
	probe func(err error)
	// dropOut may make this server leave the last entry out of its
	// output batch of round r (signed as it is).
	dropOut func(r uint32) bool
	// equivocate may make this server announce, for round r, a second
	// signed root that differs from its batch's, to every server.
	equivocate func(r uint32) bool
	// badProof may alter this server's setup step before it is signed
	// (cast_test.go: a shuffle proof that does not verify).
	badProof func(raw []byte)
	// withhold may make the last server of the chain keep round r's
	// payloads to itself: neither broadcast nor published.
	withhold func(r uint32) bool
	// pubLate may make the last server hold its publication of round r
	// back from server p for a while (the round r + 2 then opens there
	// later than elsewhere).
	pubLate func(r uint32, p peer.ID) time.Duration
	// loseOut may make this server's batch of round r lost on its way to
	// the successor (not sent; kept for a fetch, lack.go).
	loseOut func(r uint32) bool
	// hideOut may make this server withhold its batch of round r from
	// its successor: not sent, not kept, its root announced all the same.
	hideOut func(r uint32) bool
	// refuseSucc may make this server withhold its batch of round r from
	// its successor alone: not sent, its successor's fetch refused, kept
	// for the other chain servers' (relay) fetches.
	refuseSucc func(r uint32) bool
	// lateOut may make this server send its batch of round r that long
	// late, keeping it from every fetch until then.
	lateOut func(r uint32) time.Duration
	// serveLate may make this server answer the other chain servers'
	// fetches of its batch of round r, and their asks for its account
	// of round r, that long late (not its successor's fetch).
	serveLate func(r uint32) time.Duration
	// accountLate may make this server answer one asker's asks for its
	// account of round r that long late (a slow link to that server).
	accountLate func(from peer.ID, r uint32) time.Duration
	// forwardRoot may alter this primary's forward root before it is
	// signed (forward.go).
	forwardRoot func(f *wire.ForwardRoot)
	// accountUnforwarded may make this primary's account of round r say
	// it forwarded none, its root left out (silent.go).
	accountUnforwarded func(epoch [32]byte, r uint32) bool
	// dropSubs may make this server, as S_0, ignore every primary's
	// forward of round r (intake.go): an S_0 that says it lacked them.
	dropSubs func(epoch [32]byte, r uint32) bool
	// dropIn may make this server ignore its input batch of round r,
	// however it comes (sent, fetched or relayed): a receiver that
	// claims a lack it does not have.
	dropIn func(r uint32) bool
	// noteLate may make this server hold its relay notes of its input
	// batch of round r back that long after its hop wait (a receiver
	// that notes late, relay.go).
	noteLate  func(r uint32) time.Duration
	rootDelay func(r uint32, p peer.ID) time.Duration
	// silentLack may make this server give its input of round r up
	// without a lack notice (claimLack): no claim rides in the void.
	silentLack func(r uint32) bool
	attestNone func(r uint32) bool
	// silentAll may make this server attest every primary silent of
	// round r (silent.go), whatever accounts it got.
	silentAll func(r uint32) bool
	// spreadLate may hold this server's relay of charge evidence to the
	// chain back that long (slow links to the judging server).
	spreadLate func() time.Duration
	// rootTo may make this server keep its signed root of round r from
	// chain server p, which receiver says is the batch's receiver
	// (false: not announced to p).
	rootTo func(r uint32, p peer.ID, receiver bool) bool
	// stallRelay may make this server hold a receiver's ask for a batch
	// of round r that it did not sign, answering nothing for a round
	// limit.
	stallRelay func(r uint32) bool
	// hideCerts may make this server answer every certificate request
	// with none (a corrupt founder, amnesia_test.go).
	hideCerts func() bool
	// syncPoked sees every poke of this server's certificate sync.
	syncPoked func()
	// pushBack sees each push-back of a certificate as it starts
	// (certs.Push); it may block to hold the push-back in flight.
	pushBack func(to peer.ID, n uint64)
	// certChecked sees every certificate whose signatures this server
	// checks against a group (certs.Check).
	certChecked func(c *wire.Cert)
	// silentOut may make this server pass nothing on for round r: no
	// batch, and no root announced either.
	silentOut func(r uint32) bool
	// noList may make this server, as S_0, propose no request list of
	// round r (published everywhere, listed nowhere).
	noList func(r uint32) bool
	// signLate may make this server hold its signature of S_0's
	// proposed list of round r.
	signLate func(r uint32) time.Duration
	// listSigTo may make this server send its list signature only to
	// the chain servers it returns true for; leaderLate may make it
	// answer S_0 that late once it sent its signature on.
	listSigTo  func(p peer.ID) bool
	leaderLate func(r uint32) time.Duration
	// noAssemble: this server assembles and delivers no list itself.
	noAssemble bool
	// listReqRound may make this server answer a ListReq for
	// round r with another round's list.
	listReqRound func(r uint32) uint32
	// listTo may make this server, as S_0, deliver round r's final
	// request list only to the chain servers for which it returns true.
	listTo func(r uint32, p peer.ID) bool
	// proposalTo may make this server, as S_0, propose round r's
	// request list only to the chain servers for which it returns true,
	// and then deliver none.
	proposalTo func(r uint32, p peer.ID) bool
	// closingTo may make this server, as S_0, deliver an epoch's signed
	// closing record only to the chain servers for which it returns true.
	closingTo func(p peer.ID) bool
	// closingSigTo may make this server send its signature of a closing
	// record only to the chain servers for which it returns true.
	closingSigTo func(p peer.ID) bool
	// repeatOut may make this server send its signed batch of round r
	// twice (a retry or a replay: the receiver mixes it once).
	repeatOut func(r uint32) bool
	// refuseEvidence may make this server refuse a delivery of fault
	// evidence of type t, as if it were lost (its sender retries).
	refuseEvidence func(t wire.Type) bool
	// lieDrop may make this server reveal a false drop step for the
	// dead slot of round r's blame (deadslot.go).
	lieDrop func(r uint32) bool
	// holdOpen may make this server, as leader, never close the
	// registration of an epoch it opened.
	holdOpen func() bool
	// leaderWindow may change the window this server, as leader, pins in
	// its Prepare (a leader that leaves a pinned epoch out).
	leaderWindow func(number uint64, w []wire.WindowRef) []wire.WindowRef
	// leaderGap may change the Gap this server, as leader, carries in its
	// Prepare (a leader that tampers with it or leaves it out).
	leaderGap func(number uint64, g []wire.Cert) []wire.Cert
	// openLate may make this server, as leader, send its signed open
	// descriptor to server p only after a delay (the registration
	// deadline each server counts from its own receipt of it).
	openLate func(p peer.ID) time.Duration
	// signedTo may make this server, as leader, deliver its signed open
	// or final descriptor only to the servers of chain it returns (lost
	// on its way to the rest), and then abort the epoch as undelivered.
	signedTo func(final bool, chain []peer.ID) []peer.ID
	// finalSigned sees this leader's final descriptor with every chain
	// server's signature, before it is delivered.
	finalSigned func(sd *wire.Signed)
	// lackWindow may make this server hold no closing record or pool of
	// the window (a server left out of the chains that pinned them).
	lackWindow func() bool
	// holdSubs may make this server, as a primary, keep its clients'
	// onions of round r of an epoch from S_0 (never forwarded).
	holdSubs func(epoch [32]byte, r uint32) bool
	// drySilent makes this primary answer no request for its dry
	// statements or its account of round r (held.go, silent.go); dryLie makes it sign every slot of
	// its own dry for round r, the onions it took too.
	drySilent, dryLie func(epoch [32]byte, r uint32) bool
	// voidWait sees S_0 start its wait to void round r on a lack claim.
	voidWait func(r uint32)
}

// recvHook sees every frame body a host of this package receives: each
// request and each reply (transport.RecvHook).
var recvHook = &transport.RecvHook

// ClientHandlers wraps the handlers of the client and PIR protocols
// to call the observer's Received first when it has one.
func (s *hookCfg) ClientHandlers(c transport.HandlerFunc, p transport.SegHandlerFunc) (transport.HandlerFunc, transport.SegHandlerFunc) {
	o := s.cfg.observe
	if o == nil || o.Received == nil {
		return c, p
	}
	return func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
			o.Received(from, t, body)
			return c(ctx, from, t, body)
		}, func(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, [][]byte, error) {
			o.Received(from, t, body)
			return p(ctx, from, t, body)
		}
}

func (s *hookCfg) Stage(epoch [32]byte, r uint32, stage string) {
	if o := s.cfg.observe; o != nil && o.Stage != nil {
		o.Stage(epoch, r, stage)
	}
}

func (s *hookCfg) Pseudonyms(epoch [32]byte, ps []*group.Element) {
	if o := s.cfg.observe; o != nil && o.Pseudonyms != nil {
		enc := make([][]byte, len(ps))
		for i, p := range ps {
			enc[i] = p.Bytes()
		}
		o.Pseudonyms(epoch, enc)
	}
}

func (s *hookCfg) Perm(epoch [32]byte, pos int, sec *mix.StepSecret) {
	if o := s.cfg.observe; o != nil && o.Perm != nil {
		o.Perm(epoch, pos, sec.Forward())
	}
}

func (s *hookCfg) Mask(epoch [32]byte, r, slot uint32, t int, mask []byte, L int) {
	if o := s.cfg.observe; o != nil && o.Mask != nil {
		o.Mask(epoch, r, slot, t, mask, L)
	}
}

func (s *hookCfg) Masks(epoch [32]byte, r, slot uint32, masks [][]byte, L int) {
	for t, mk := range masks {
		s.Mask(epoch, r, slot, t, mk, L)
	}
}

// Corrupt spoils the combined answers own of (round, slot) that the
// active adversary picks.
func (s *hookCfg) Corrupt(epoch [32]byte, r, slot uint32, own [][]byte) {
	if o := s.cfg.observe; o != nil && o.Corrupt != nil {
		for t := range own {
			if len(own[t]) > 0 && o.Corrupt(epoch, r, slot, t) {
				own[t][len(own[t])-1] ^= 1
			}
		}
	}
}

func (s *hookCfg) Submit(epoch [32]byte, r, slot uint32) {
	if o := s.cfg.observe; o != nil && o.Submit != nil {
		o.Submit(epoch, r, slot, time.Now())
	}
}

func (s *hookCfg) Requests(epoch [32]byte, r uint32, q int, ids [][32]byte) {
	if o := s.cfg.observe; o != nil && o.Requests != nil {
		o.Requests(epoch, r, q, ids)
	}
}

func (s *hookCfg) WithholdClosing(c *wire.Closing) bool {
	o := s.cfg.observe
	return o != nil && o.Closing != nil && !o.Closing(c)
}

func (s *hookCfg) IndexPage() int { return s.cfg.indexPage }

func (s *hookCfg) IndexReply(to peer.ID, mans []store.Manifest) []store.Manifest {
	if o := s.cfg.observe; o != nil && o.IndexReply != nil {
		return o.IndexReply(to, mans)
	}
	return mans
}

func (s *hookCfg) IndexClosings(to peer.ID, recs [][]byte) [][]byte {
	if o := s.cfg.observe; o != nil && o.IndexClosings != nil {
		return o.IndexClosings(to, recs)
	}
	return recs
}

func (s *hookCfg) WindowReply(to peer.ID, w *wire.Window) {
	if o := s.cfg.observe; o != nil && o.WindowReply != nil {
		o.WindowReply(to, w)
	}
}

// UnpinnedWindow reports whether the tests' control of the window
// before it was pinned by the Prepare is on (testObserver.UnpinnedWindow).
func (s *hookCfg) UnpinnedWindow() bool {
	o := s.cfg.observe
	return o != nil && o.UnpinnedWindow
}

func (s *hookRun) LackWindow() bool {
	h := s.hooks.Load()
	return h != nil && h.lackWindow != nil && h.lackWindow()
}

func (s *hookCfg) KeepOut(from peer.ID, epoch [32]byte) bool {
	o := s.cfg.observe
	return o != nil && o.KeepOut != nil && o.KeepOut(from, epoch)
}

func (s *hookCfg) WindowRefuse(to peer.ID) bool {
	o := s.cfg.observe
	return o != nil && o.WindowRefuse != nil && o.WindowRefuse(to)
}

func (s *hookCfg) CheatKeys(chain []peer.ID, keys [][32]byte, cl *leader.Closed) [][32]byte {
	if c := s.cfg.cheat; c != nil && c.keys != nil {
		keys = c.keys(keys, cl)
	}
	if c := s.cfg.cheat; c != nil && c.shrink != nil {
		keys = c.shrink(chain, keys, cl)
	}
	return keys
}

func (s *hookCfg) CheatList(rl *wire.RegList) {
	if c := s.cfg.cheat; c != nil && c.list != nil {
		c.list(rl)
	}
}

func (s *hookCfg) SignAny() bool   { return s.cfg.cheat != nil && s.cfg.cheat.signAny }
func (s *hookCfg) NoReceipt() bool { return s.cfg.cheat != nil && s.cfg.cheat.noReceipt }

func (s *hookRun) Accuse(r uint32) (int, bool) {
	if h := s.hooks.Load(); h != nil && h.accuse != nil {
		return h.accuse(r)
	}
	return 0, false
}

func (s *hookRun) CorruptOut(r uint32, out [][]byte) {
	if h := s.hooks.Load(); h != nil && h.corruptOut != nil {
		h.corruptOut(r, out)
	}
}

func (s *hookRun) DropOut(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.dropOut != nil && h.dropOut(r)
}

func (s *hookRun) Withhold(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.withhold != nil && h.withhold(r)
}

func (s *hookRun) PubLate(r uint32, p peer.ID) time.Duration {
	if h := s.hooks.Load(); h != nil && h.pubLate != nil {
		return h.pubLate(r, p)
	}
	return 0
}

func (s *hookCfg) LastOut(epoch [32]byte, r uint32, out [][]byte) {
	if o := s.cfg.observe; o != nil && o.LastOut != nil {
		o.LastOut(epoch, r, out)
	}
}

func (s *hookRun) ClosingTo(chain []peer.ID) []peer.ID {
	if h := s.hooks.Load(); h != nil && h.closingTo != nil {
		return peersWhere(chain, h.closingTo)
	}
	return chain
}

func (s *hookRun) ClosingSigTo(chain []peer.ID) []peer.ID {
	if h := s.hooks.Load(); h != nil && h.closingSigTo != nil {
		return peersWhere(chain, h.closingSigTo)
	}
	return chain
}

// peersWhere is the servers of chain for which f returns true.
func peersWhere(chain []peer.ID, f func(peer.ID) bool) []peer.ID {
	var out []peer.ID
	for _, p := range chain {
		if f(p) {
			out = append(out, p)
		}
	}
	return out
}

func (s *hookRun) RepeatOut(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.repeatOut != nil && h.repeatOut(r)
}

// HideCerts reports whether this server answers certificate requests
// with none.
func (s *hookRun) HideCerts() bool {
	h := s.hooks.Load()
	return h != nil && h.hideCerts != nil && h.hideCerts()
}

// NoList reports whether this server, as S_0, proposes no list of round r.
func (s *hookRun) NoList(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.noList != nil && h.noList(r)
}

// ProposalTo is the servers of chain to which this server, as S_0,
// proposes round r's list.
func (s *hookRun) HideOut(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && (h.hideOut != nil && h.hideOut(r) || h.silentOut != nil && h.silentOut(r))
}

func (s *hookRun) HoldSubs(epoch [32]byte, r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.holdSubs != nil && h.holdSubs(epoch, r)
}

func (s *hookRun) DrySilent(epoch [32]byte, r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.drySilent != nil && h.drySilent(epoch, r)
}

func (s *hookRun) DryLie(epoch [32]byte, r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.dryLie != nil && h.dryLie(epoch, r)
}

// LieDryLocked signs slot sl dry for round r whatever it holds (the
// corrupt primary of dryLie). Call with s.mu held.
func (s *hookRun) LieDryLocked(e *sepoch, r, sl uint32) (wire.Dry, bool) {
	d := wire.Dry{Epoch: e.final.ID, Round: r, Slot: sl, Server: uint16(e.pos)}
	sig, err := proto.Sign(s.priv, proto.DryDigest(&d))
	if err != nil {
		return wire.Dry{}, false
	}
	d.Sig = sig
	return d, true
}

func (s *hookRun) RefuseSucc(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.refuseSucc != nil && h.refuseSucc(r)
}

func (s *hookRun) LateOut(r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.lateOut != nil {
		return h.lateOut(r)
	}
	return 0
}

func (s *hookRun) ServeLate(r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.serveLate != nil {
		return h.serveLate(r)
	}
	return 0
}

func (s *hookRun) AccountLate(from peer.ID, r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.accountLate != nil {
		return h.accountLate(from, r)
	}
	return 0
}

func (s *hookRun) AccountUnforwarded(epoch [32]byte, r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.accountUnforwarded != nil && h.accountUnforwarded(epoch, r)
}

func (s *hookRun) DropSubs(epoch [32]byte, r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.dropSubs != nil && h.dropSubs(epoch, r)
}

func (s *hookRun) ForwardRoot(f *wire.ForwardRoot) {
	if h := s.hooks.Load(); h != nil && h.forwardRoot != nil {
		h.forwardRoot(f)
	}
}

func (s *hookRun) VoidWait(r uint32) {
	if h := s.hooks.Load(); h != nil && h.voidWait != nil {
		h.voidWait(r)
	}
}

func (s *hookRun) NoteLate(r uint32) time.Duration {
	if h := s.hooks.Load(); h != nil && h.noteLate != nil {
		return h.noteLate(r)
	}
	return 0
}

func (s *hookRun) DropIn(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.dropIn != nil && h.dropIn(r)
}

func (s *hookRun) RootTo(r uint32, p peer.ID, receiver bool) bool {
	h := s.hooks.Load()
	return h == nil || h.rootTo == nil || h.rootTo(r, p, receiver)
}

func (s *hookRun) StallRelay(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.stallRelay != nil && h.stallRelay(r)
}

func (s *hookRun) LoseOut(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.loseOut != nil && h.loseOut(r)
}

// Probe asks the predecessor for its walk step right after this
// server's accusation of input position pos and tells the probe whether it
// got one.
func (s *hookRun) Probe(e *sepoch, r uint32, pos int) {
	if h := s.hooks.Load(); h != nil && h.probe != nil && e.pos > 0 {
		v := e.final
		req := wire.BlameReq{Epoch: v.ID, Round: r, T: uint16(e.pos - 1), Out: uint32(pos)}
		_, err := transport.Call(s.ctx, s.h, v.Chain[e.pos-1], transport.Request{Proto: ProtoEpoch, Type: wire.TypeBlameReq, Body: req.Marshal(), Timeout: transport.ShortTimeout, Max: e.entrySize(0) + 4096})
		h.probe(err)
	}
}

// RefuseEvidence reports whether this server refuses a delivery of
// evidence of type t (a lost delivery, to be retried).
func (s *hookRun) RefuseEvidence(t wire.Type) bool {
	h := s.hooks.Load()
	return h != nil && h.refuseEvidence != nil && h.refuseEvidence(t)
}

func (s *hookRun) NoPace() bool {
	h := s.hooks.Load()
	return h != nil && h.noPace
}

// Liar: this server lies about drop steps (and so takes its own as it
// is).
func (s *hookRun) Liar() bool {
	h := s.hooks.Load()
	return h != nil && h.lieDrop != nil
}

func (s *hookRun) LieDrop(r uint32) bool {
	h := s.hooks.Load()
	return h != nil && h.lieDrop != nil && h.lieDrop(r)
}

func (s *hookRun) BadProof(raw []byte) {
	if h := s.hooks.Load(); h != nil && h.badProof != nil {
		h.badProof(raw)
	}
}

// Root is the root message this server announces for b: msg, or
// another signed root for the same batch (an equivocation).
func (s *hookRun) Root(b *wire.Batch, msg []byte) []byte {
	if h := s.hooks.Load(); h != nil && h.silentOut != nil && h.silentOut(b.Round) {
		return nil
	}
	if h := s.hooks.Load(); h != nil && h.equivocate != nil && h.equivocate(b.Round) {
		o := *b
		o.Root[0] ^= 1
		o.Sig, _ = proto.Sign(s.priv, batchDigest(&o))
		return (&wire.Root{Epoch: o.Epoch, Round: o.Round, S: o.S, Root: o.Root, Sig: o.Sig}).Marshal()
	}
	return msg
}
