package node

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// view is what anyone derives from a descriptor after checking it (§3).
type view struct {
	id         [32]byte
	desc       *wire.Descriptor
	chain      []peer.ID
	serverKeys []*group.Element
	Y, Yp      [][]*group.Element // [server][round]
	D          [][]byte
	lim        wire.Limits
}

// genericLimits bound a descriptor before its parameters are known.
func genericLimits() wire.Limits {
	return wire.Limits{Servers: wire.MaxServers, Clients: MaxClientsCap, Rounds: MaxRounds, Rows: MaxRowsCap, K: MaxK, Chunk: MaxChunkSize,
		Onion: mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers), Reg: mix.RegistrationSize(wire.MaxServers), Index: 1 << 20}
}

// limitsFor bounds every message of an epoch with m servers.
func limitsFor(p wire.Params, m int) wire.Limits {
	b, k := int(p.ChunkSize), int(p.K)
	return wire.Limits{Servers: m, Clients: int(p.MaxClients), Rounds: int(p.Rounds), Rows: int(p.MaxRows), K: k, Chunk: b,
		Onion: mix.OnionSize(b, k, m), Reg: mix.RegistrationSize(m), Step: mix.StepResultSize(int(p.MaxClients), m, 0),
		Index: 1 << 20, MaskSize: pir.MaskBytes(int(p.MaxRows))}
}

// checkParams refuses parameters out of range or whose PIR work cannot fit
// the round limit at rate bytes/s of XOR (§9: about (L/8)·(256 + n·k)·b
// bytes per server and round, counted for the caps n and L).
func checkParams(p wire.Params, rate float64) error {
	switch {
	case p.ChunkSize < MinChunkSize || p.ChunkSize > MaxChunkSize:
		return fmt.Errorf("node: chunk size %d outside [%d, %d]", p.ChunkSize, MinChunkSize, MaxChunkSize)
	case p.K < 1 || p.K > MaxK:
		return fmt.Errorf("node: %d request slots outside [1, %d]", p.K, MaxK)
	case p.Rounds < 1 || p.Rounds > MaxRounds:
		return fmt.Errorf("node: %d rounds outside [1, %d]", p.Rounds, MaxRounds)
	case p.W < 1 || uint32(p.W) > p.Rounds:
		return fmt.Errorf("node: cover window %d outside [1, %d]", p.W, p.Rounds)
	case p.MaxClients < 1 || p.MaxClients > MaxClientsCap:
		return fmt.Errorf("node: client cap %d outside [1, %d]", p.MaxClients, MaxClientsCap)
	case p.MaxRows < 1 || p.MaxRows > MaxRowsCap:
		return fmt.Errorf("node: row cap %d outside [1, %d]", p.MaxRows, MaxRowsCap)
	case p.RoundLimitMs < 100:
		return fmt.Errorf("node: round limit %d ms too short", p.RoundLimitMs)
	}
	work := pirWork(int(p.MaxClients), int(p.K), int(p.MaxRows), int(p.ChunkSize))
	if secs := work / rate; secs > float64(p.RoundLimitMs)/1000 {
		return fmt.Errorf("node: PIR work of %.3g bytes (n=%d, k=%d, L=%d, b=%d) needs %.1f s at %.3g B/s, more than the round limit of %d ms",
			work, p.MaxClients, p.K, p.MaxRows, p.ChunkSize, secs, rate, p.RoundLimitMs)
	}
	return nil
}

// pirWork is §9's XOR volume for one server and round.
func pirWork(n, k, L, b int) float64 {
	return float64(L) / 8 * float64(256+n*k) * float64(b)
}

func epochID(d *wire.Descriptor) [32]byte { return taggedHash(tagEpochID, d.MarshalGroup()) }

func openDigest(d *wire.Descriptor) [32]byte {
	id := epochID(d)
	return taggedHash(tagDescOpen, id[:])
}

func finalDigest(d *wire.Descriptor) [32]byte {
	id := epochID(d)
	return taggedHash(tagDescFinal, id[:], d.Marshal())
}

// checkDescriptor verifies a descriptor's structure, parameters and every
// server's key proof, and derives its view.
func checkDescriptor(d *wire.Descriptor, rate float64) (*view, error) {
	m := len(d.Group)
	if m < 1 || m > wire.MaxServers {
		return nil, fmt.Errorf("node: descriptor with %d servers", m)
	}
	if err := checkParams(d.Params, rate); err != nil {
		return nil, err
	}
	v := &view{id: epochID(d), desc: d, lim: limitsFor(d.Params, m)}
	R := int(d.Params.Rounds)
	for j := range d.Group {
		g := &d.Group[j]
		id, err := peer.IDFromBytes(g.PeerID)
		if err != nil {
			return nil, fmt.Errorf("node: descriptor server %d peer id: %w", j, err)
		}
		if j > 0 && bytes.Compare([]byte(v.chain[j-1]), []byte(id)) >= 0 {
			return nil, fmt.Errorf("node: descriptor chain not sorted at position %d", j)
		}
		v.chain = append(v.chain, id)
		X, err := group.DecodeNonIdentity(g.X[:])
		if err != nil {
			return nil, fmt.Errorf("node: descriptor server %d key: %w", j, err)
		}
		if err := mix.VerifyKey(X, mix.KeyContext(d.Number, d.Nonce, g.PeerID), g.PoK); err != nil {
			return nil, fmt.Errorf("node: descriptor server %d key proof: %w", j, err)
		}
		v.serverKeys = append(v.serverKeys, X)
		if err := checkX25519(g.D[:]); err != nil {
			return nil, fmt.Errorf("node: descriptor server %d x25519 key: %w", j, err)
		}
		v.D = append(v.D, append([]byte(nil), g.D[:]...))
		if len(g.Y) != R || len(g.Yp) != R {
			return nil, fmt.Errorf("node: descriptor server %d has %d/%d round keys, want %d", j, len(g.Y), len(g.Yp), R)
		}
		ys, yps := make([]*group.Element, R), make([]*group.Element, R)
		for r := 0; r < R; r++ {
			if ys[r], err = group.DecodeNonIdentity(g.Y[r][:]); err == nil {
				yps[r], err = group.DecodeNonIdentity(g.Yp[r][:])
			}
			if err != nil {
				return nil, fmt.Errorf("node: descriptor server %d round %d key: %w", j, r, err)
			}
		}
		v.Y, v.Yp = append(v.Y, ys), append(v.Yp, yps)
	}
	if len(d.Clients) > int(d.Params.MaxClients) {
		return nil, fmt.Errorf("node: descriptor with %d clients > cap %d", len(d.Clients), d.Params.MaxClients)
	}
	seen := map[[32]byte]bool{}
	for i, c := range d.Clients {
		if int(c.Primary) >= m {
			return nil, fmt.Errorf("node: client %d has primary %d of %d servers", i, c.Primary, m)
		}
		if seen[c.RegKey] || seen[c.XKey] {
			return nil, fmt.Errorf("node: client %d duplicates a key", i)
		}
		seen[c.RegKey], seen[c.XKey] = true, true
	}
	return v, nil
}

// lowOrderProbe is a fixed X25519 private key. A low-order public key
// gives the all-zero shared secret with every private key, which
// crypto/ecdh reports as an error: one ECDH with any fixed scalar detects
// it (the technique of mix's client-key check, applied to the servers' D_j:
// a D_j of low order would make every client's PIR seeds with that server
// public, §6.2).
var lowOrderProbe = func() *ecdh.PrivateKey {
	k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{0x5a}, 32))
	if err != nil {
		panic(err) // unreachable: any 32 bytes are an X25519 private key
	}
	return k
}()

// checkX25519 rejects a malformed or low-order X25519 public key.
func checkX25519(b []byte) error {
	pk, err := ecdh.X25519().NewPublicKey(b)
	if err != nil {
		return err
	}
	if _, err := lowOrderProbe.ECDH(pk); err != nil {
		return fmt.Errorf("key of low order: %w", group.ErrIdentity)
	}
	return nil
}

// checkSigned verifies a signed descriptor: structure and all m signatures.
func checkSigned(sd *wire.Signed, rate float64) (*view, error) {
	v, err := checkDescriptor(&sd.Desc, rate)
	if err != nil {
		return nil, err
	}
	if !sd.Final && len(sd.Desc.Clients) != 0 {
		return nil, errors.New("node: open descriptor lists clients")
	}
	if len(sd.Sigs) != len(v.chain) {
		return nil, fmt.Errorf("node: descriptor has %d signatures for %d servers", len(sd.Sigs), len(v.chain))
	}
	dg := openDigest(&sd.Desc)
	if sd.Final {
		dg = finalDigest(&sd.Desc)
	}
	for j, id := range v.chain {
		if err := verifyPeerSig(id, dg, sd.Sigs[j]); err != nil {
			return nil, fmt.Errorf("node: descriptor signature %d: %w", j, err)
		}
	}
	return v, nil
}

func registerDigest(r *wire.Register) [32]byte {
	return taggedHash(tagRegister, r.Epoch[:], r.XKey[:], r.Reg)
}

// parseRegister checks a registration's envelope against an epoch (its
// signature by the registration key, its X25519 key) and parses it; the
// proofs of knowledge are left to verifyRegs, batched.
func parseRegister(v *view, r *wire.Register) (*mix.Registration, error) {
	if r.Epoch != v.id {
		return nil, errors.New("node: registration for another epoch")
	}
	dg := registerDigest(r)
	if !ed25519.Verify(ed25519.PublicKey(r.RegKey[:]), dg[:], r.Sig[:]) {
		return nil, errors.New("node: bad registration signature")
	}
	reg, err := mix.ParseRegistration(r.Reg, len(v.chain))
	if err != nil {
		return nil, fmt.Errorf("node: registration: %w", err)
	}
	if reg.PIRKey != r.XKey {
		return nil, errors.New("node: registration x25519 key differs from its envelope")
	}
	return reg, nil
}

// verifyRegs verifies a list of registrations (§4.1): envelopes one by
// one, then every proof of knowledge in one batch (mix.VerifyRegistrations).
// It returns the parsed registrations (nil at a bad index) and the bad
// indexes in order.
func verifyRegs(v *view, regs []wire.Register, rnd io.Reader) ([]*mix.Registration, []int, error) {
	parsed := make([]*mix.Registration, len(regs))
	var bad, idx []int
	var keys []ed25519.PublicKey
	var cands []*mix.Registration
	for i := range regs {
		reg, err := parseRegister(v, &regs[i])
		if err != nil {
			bad = append(bad, i)
			continue
		}
		idx, keys, cands = append(idx, i), append(keys, ed25519.PublicKey(regs[i].RegKey[:])), append(cands, reg)
	}
	if len(cands) > 0 {
		pbad, err := mix.VerifyRegistrations(mix.EpochID(v.id), keys, v.serverKeys, cands, rnd)
		if err != nil {
			return nil, nil, fmt.Errorf("node: verify %d registrations: %w", len(cands), err)
		}
		isBad := map[int]bool{}
		for _, b := range pbad {
			isBad[b] = true
		}
		for c, i := range idx {
			if isBad[c] {
				bad = append(bad, i)
			} else {
				parsed[i] = cands[c]
			}
		}
	}
	sort.Ints(bad)
	return parsed, bad, nil
}

// checkRegister verifies a registration against an epoch: its signature by
// the registration key, its proofs (§4.1), and its X25519 key.
func checkRegister(v *view, r *wire.Register) (*mix.Registration, error) {
	reg, err := parseRegister(v, r)
	if err != nil {
		return nil, err
	}
	if err := mix.VerifyRegistration(mix.EpochID(v.id), ed25519.PublicKey(r.RegKey[:]), v.serverKeys, reg); err != nil {
		return nil, fmt.Errorf("node: registration: %w", err)
	}
	return reg, nil
}

// sepoch is a server's state of one epoch. Guarded by Server.mu, except the
// read-only fields set before it is published in Server.epochs.
type sepoch struct {
	v     *view
	pos   int
	nonce [32]byte

	// secrets: never on disk, erased by erase (§3 forward secrecy)
	sk   *mix.ServerSecret
	rk   *mix.RoundKeys
	dkey *ecdh.PrivateKey
	sec  *mix.StepSecret
	keys []*pir.Keys // per slot, nil for this server's own clients

	entry      wire.GroupEntry
	openBytes  []byte
	finalBytes []byte
	final      *view

	regs      map[[32]byte]wire.Register // accepted here as primary
	regClosed bool
	fwd       map[[32]byte]wire.Register // leader: forwarded by primaries
	slotRegs  []wire.Register            // final slot order
	parsed    []*mix.Registration

	stepMsgs   map[int]*wire.Step
	steps      []*mix.StepResult
	forward    []int
	U          []*group.Element
	pseudonyms []*group.Element
	setupDone  bool

	rounds map[uint32]*sround
	// listHigh is one more than the newest round whose request list is
	// final here; rounds below pruned have had their bulk state dropped
	// (prune). Together they bound the rounds a peer can make this server
	// hold state for.
	listHigh, pruned uint32

	ended  bool
	reason string
	// users counts the goroutines working with the secrets outside s.mu
	// (mixing, PIR): erasure at the epoch's end waits for the last.
	users  int
	erased bool

	// A share fault at setup (§4.2 step 3) and its walk back (§8 step 1):
	// the inputs of every step, and per server t on the walk its input
	// position and route proof.
	stepInputs [][][]group.Ciphertext
	shareErr   *mix.ShareError
	walkIn     map[int]int
	walkProof  map[int][]byte
	// regFrom is, for this primary's own clients, the peer that sent each
	// registration: only the primary sees it (§4.1), and only to exclude
	// a culprit from the next epoch.
	regFrom map[[32]byte]peer.ID

	// evidence holds the input batch of each void round (§8).
	evidence map[uint32][][]byte
	// roots holds every signed batch root seen, by (round, S) (§5.2).
	roots map[rootKey]wire.Root
	// layerBufs are OpenLayerInto's buffers, reused round after round.
	bufMu     sync.Mutex
	layerBufs [][]byte
}

// acquire reserves the epoch's secrets for work outside s.mu; false once
// the epoch ended. Call with s.mu held; release when done.
func (e *sepoch) acquire() bool {
	if e.ended {
		return false
	}
	e.users++
	return true
}

// release ends a use begun by acquire and erases the secrets if the epoch
// ended meanwhile. Call with s.mu held.
func (e *sepoch) release() {
	e.users--
	if e.users == 0 && e.ended {
		e.erase()
	}
}

func (e *sepoch) n() int { return len(e.final.desc.Clients) }

func (e *sepoch) erase() {
	e.erased = true
	// π_s and its inverse walk are secrets too (§3 forward secrecy).
	clear(e.forward)
	e.forward = nil
	if e.sk != nil {
		e.sk.Close()
	}
	if e.rk != nil {
		e.rk.Close()
	}
	if e.sec != nil {
		e.sec.Close()
	}
	for _, k := range e.keys {
		k.Close()
	}
	e.keys = nil
	e.dkey = nil
}

// end marks the epoch over after a fault seen here and tells every other
// server of the chain (§3: a failure ends the epoch for everyone; without
// the notice the others' clients would wait for rounds that never come).
// Call with s.mu held.
func (s *Server) end(e *sepoch, reason string) {
	if e.ended {
		return
	}
	s.endQuiet(e, reason)
	chain := e.v.chain
	var others []peer.ID
	for _, p := range chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	body := (&wire.EpochRef{Epoch: e.v.id, Reason: []byte(reason)}).Marshal()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, shortTimeout)
		defer cancel()
		_, _ = s.each(ctx, others, ProtoEpoch, wire.TypeAbort, body, wire.TypeAck, 16, shortTimeout)
	}()
}

// endQuiet marks the epoch over without telling anyone: on a notice from
// another server, at the natural end, or when superseded. Call with s.mu
// held.
func (s *Server) endQuiet(e *sepoch, reason string) {
	if e.ended {
		return
	}
	e.ended, e.reason = true, reason
	if e.users == 0 {
		e.erase()
	}
	if s.open == e {
		s.open = nil
	}
	s.log.Info("epoch ended", "epoch", fmt.Sprintf("%x", e.v.id[:6]), "rounds", e.listHigh, "reason", reason)
	s.notify()
}

// forget drops ended epochs except the newest two (their last rounds may
// still be answered). Call with s.mu held.
func (s *Server) forget() {
	var old []*sepoch
	for _, e := range s.epochs {
		if e.ended {
			old = append(old, e)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].v.desc.Number > old[j].v.desc.Number })
	for _, e := range old[min(len(old), 2):] {
		delete(s.epochs, e.v.id)
	}
}

func (s *Server) epochCaps(t wire.Type) int {
	switch t {
	case wire.TypePrepare, wire.TypeCloseReq, wire.TypeAbort:
		return 64 << 10
	case wire.TypeSignReq, wire.TypeSigned, wire.TypeRegList:
		return 256 << 20
	case wire.TypeRegister:
		return 64 << 10
	case wire.TypeRoute:
		return 64 + wire.MaxRouteProof
	case wire.TypeStep:
		return 512 << 20
	}
	return 0
}

// local runs a request against this server's own handler, as the leader
// does for its own part of a broadcast.
func (s *Server) each(ctx context.Context, chain []peer.ID, proto protocol.ID, t wire.Type, body []byte, want wire.Type, max int, timeout time.Duration) ([][]byte, error) {
	return s.eachSegments(ctx, chain, proto, t, [][]byte{body}, want, max, timeout)
}

// eachSegments is each with the body as segments, written to the remote
// servers without being joined. If chain holds this server, its own
// handler gets the segments joined (a body of one segment as it is: each's
// callers never reuse it, while a caller of several segments may reuse
// their buffers after the call, and the handler may keep parts of its body).
func (s *Server) eachSegments(ctx context.Context, chain []peer.ID, proto protocol.ID, t wire.Type, segs [][]byte, want wire.Type, max int, timeout time.Duration) ([][]byte, error) {
	out := make([][]byte, len(chain))
	errs := make([]error, len(chain))
	var wg sync.WaitGroup
	for i, p := range chain {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p == s.h.ID() {
				var h handlerFunc
				switch proto {
				case ProtoEpoch:
					h = s.handleEpoch
				case ProtoRound:
					h = s.handleRound
				}
				local := segs[0]
				if len(segs) != 1 {
					local = bytes.Join(segs, nil)
				}
				rt, rep, err := h(ctx, p, t, local)
				if err == nil && rt != want {
					err = fmt.Errorf("node: local reply type %d, want %d", rt, want)
				}
				out[i], errs[i] = rep, err
				return
			}
			out[i], errs[i] = callSegments(ctx, s.h, p, proto, t, segs, want, max, timeout)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("server %d (%s): %w", i, chain[i].ShortString(), err)
		}
	}
	return out, nil
}

// leaderLoop runs epochs while this server heads the chain of live servers.
func (s *Server) leaderLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		chain := s.chain()
		if len(chain) < s.cfg.MinServers || chain[0] != s.h.ID() {
			continue
		}
		if err := s.runEpoch(ctx, chain); err != nil && ctx.Err() == nil {
			s.log.Warn("epoch failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}
}

func (s *Server) abortAll(ctx context.Context, chain []peer.ID, id [32]byte, reason string) {
	body := (&wire.EpochRef{Epoch: id, Reason: []byte(reason)}).Marshal()
	_, _ = s.each(context.WithoutCancel(ctx), chain, ProtoEpoch, wire.TypeAbort, body, wire.TypeAck, 16, shortTimeout)
}

// runEpoch drives one epoch as leader (§3, §4): prepare, sign and open the
// descriptor, wait for registrations, close, sign the final descriptor; the
// setup and the rounds then run from events until the epoch ends.
func (s *Server) runEpoch(ctx context.Context, chain []peer.ID) error {
	s.mu.Lock()
	number := s.number + 1
	s.mu.Unlock()
	var nonce [32]byte
	if _, err := s.rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("node: epoch nonce: %w", err)
	}
	prep := wire.Prepare{Number: number, Nonce: nonce, Params: s.cfg.Params}
	for _, p := range chain {
		prep.Chain = append(prep.Chain, []byte(p))
	}
	reps, err := s.each(ctx, chain, ProtoEpoch, wire.TypePrepare, prep.Marshal(), wire.TypeEntry, 1<<20, shortTimeout)
	if err != nil {
		return fmt.Errorf("node: prepare epoch %d: %w", number, err)
	}
	desc := wire.Descriptor{Number: number, Nonce: nonce, Params: s.cfg.Params, Group: make([]wire.GroupEntry, len(chain))}
	for i, r := range reps {
		if err := desc.Group[i].Unmarshal(r, genericLimits()); err != nil {
			return fmt.Errorf("node: entry of server %d: %w", i, err)
		}
	}
	sigs, err := s.collectSigs(ctx, chain, &wire.Signed{Desc: desc})
	if err != nil {
		return fmt.Errorf("node: sign open descriptor %d: %w", number, err)
	}
	open := &wire.Signed{Desc: desc, Sigs: sigs}
	id := epochID(&desc)
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSigned, open.Marshal(), wire.TypeAck, 16, shortTimeout); err != nil {
		s.abortAll(ctx, chain, id, "open failed")
		return fmt.Errorf("node: open epoch %d: %w", number, err)
	}
	s.log.Info("epoch open", "number", number, "epoch", fmt.Sprintf("%x", id[:6]), "servers", len(chain))

	// Registration: at least the window, and until enough clients.
	deadline := time.Now().Add(time.Duration(desc.Params.RegWindowMs) * time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		for _, p := range chain {
			if p != s.h.ID() && s.roster.get(p) == nil {
				s.abortAll(ctx, chain, id, "server left")
				return fmt.Errorf("node: server %s left during registration", p.ShortString())
			}
		}
		s.mu.Lock()
		e := s.epochs[id]
		count := 0
		if e != nil {
			count = len(e.fwd)
		}
		s.mu.Unlock()
		if e == nil {
			return errors.New("node: epoch vanished during registration")
		}
		if time.Now().After(deadline) && count >= s.cfg.MinClients {
			break
		}
	}
	reps, err = s.each(ctx, chain, ProtoEpoch, wire.TypeCloseReq, (&wire.EpochRef{Epoch: id}).Marshal(), wire.TypeRegList, 256<<20, shortTimeout)
	if err != nil {
		s.abortAll(ctx, chain, id, "close failed")
		return fmt.Errorf("node: close registration: %w", err)
	}
	s.mu.Lock()
	e := s.epochs[id]
	all := map[[32]byte]wire.Register{}
	for k, r := range e.fwd {
		all[k] = r
	}
	s.mu.Unlock()
	lim := limitsFor(desc.Params, len(chain))
	primaryOf := map[[32]byte]uint16{}
	for i, r := range reps {
		var rl wire.RegList
		if err := rl.Unmarshal(r, lim); err != nil {
			s.abortAll(ctx, chain, id, "bad registration list")
			return fmt.Errorf("node: registration list of server %d: %w", i, err)
		}
		parsed, _, err := verifyRegs(e.v, rl.Regs, s.rand)
		if err != nil {
			s.abortAll(ctx, chain, id, "registrations unverifiable")
			return err
		}
		for j, reg := range rl.Regs {
			if parsed[j] == nil {
				continue
			}
			all[reg.RegKey] = reg
			primaryOf[reg.RegKey] = uint16(i)
		}
	}
	keys := make([][32]byte, 0, len(all))
	for k := range all {
		if _, ok := primaryOf[k]; ok {
			keys = append(keys, k)
		}
	}
	// Slot order: by registration key, a public order nobody chooses
	// (keys are fresh per epoch).
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i][:], keys[j][:]) < 0 })
	// §4.1: duplicate keys are rejected. A second registration with an
	// X25519 key already taken (by a lower registration key) is dropped,
	// so that the list every server checks has none.
	seenX := map[[32]byte]bool{}
	kept := keys[:0]
	for _, k := range keys {
		x := all[k].XKey
		if seenX[x] || seenX[k] {
			continue
		}
		seenX[x], seenX[k] = true, true
		kept = append(kept, k)
	}
	keys = kept
	if len(keys) > int(desc.Params.MaxClients) {
		keys = keys[:desc.Params.MaxClients]
	}
	if len(keys) < s.cfg.MinClients {
		s.abortAll(ctx, chain, id, "too few clients")
		return fmt.Errorf("node: %d valid registrations < %d", len(keys), s.cfg.MinClients)
	}
	fin := desc
	ordered := wire.RegList{Epoch: id}
	for _, k := range keys {
		r := all[k]
		ordered.Regs = append(ordered.Regs, r)
		fin.Clients = append(fin.Clients, wire.ClientEntry{RegKey: k, Primary: primaryOf[k], XKey: r.XKey, RegHash: sha256.Sum256(r.Reg)})
	}
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeRegList, ordered.Marshal(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.abortAll(ctx, chain, id, "registration list refused")
		return fmt.Errorf("node: send registrations: %w", err)
	}
	sigs, err = s.collectSigs(ctx, chain, &wire.Signed{Final: true, Desc: fin})
	if err != nil {
		s.abortAll(ctx, chain, id, "final descriptor refused")
		return fmt.Errorf("node: sign final descriptor: %w", err)
	}
	final := &wire.Signed{Final: true, Desc: fin, Sigs: sigs}
	if _, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSigned, final.Marshal(), wire.TypeAck, 16, bulkTimeout); err != nil {
		s.abortAll(ctx, chain, id, "final descriptor not delivered")
		return fmt.Errorf("node: publish final descriptor: %w", err)
	}
	s.log.Info("epoch closed", "epoch", fmt.Sprintf("%x", id[:6]), "clients", len(keys))
	// The epoch now runs from events; the leader waits for its end.
	return s.waitFor(ctx, func() bool { return e.ended })
}

func (s *Server) collectSigs(ctx context.Context, chain []peer.ID, req *wire.Signed) ([][64]byte, error) {
	reps, err := s.each(ctx, chain, ProtoEpoch, wire.TypeSignReq, req.Marshal(), wire.TypeSig, 256, bulkTimeout)
	if err != nil {
		return nil, err
	}
	sigs := make([][64]byte, len(chain))
	for i, r := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(r); err != nil || int(sg.Index) != i {
			return nil, fmt.Errorf("node: signature reply of server %d malformed", i)
		}
		sigs[i] = sg.Sig
	}
	return sigs, nil
}

var ack = []byte{}

// handleEpoch serves /riffle/1/epoch.
func (s *Server) handleEpoch(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	switch t {
	case wire.TypePrepare:
		return s.onPrepare(from, body)
	case wire.TypeSignReq:
		return s.onSignReq(from, body)
	case wire.TypeSigned:
		return s.onSigned(from, body)
	case wire.TypeRegister:
		return s.onForwardedRegister(body)
	case wire.TypeCloseReq:
		return s.onClose(from, body)
	case wire.TypeRegList:
		return s.onRegList(from, body)
	case wire.TypeStep:
		return s.onStep(from, body)
	case wire.TypeRoute:
		return s.onRoute(ctx, from, body)
	case wire.TypeAbort:
		var ref wire.EpochRef
		if err := ref.Unmarshal(body); err != nil {
			return 0, nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		e := s.epochs[ref.Epoch]
		if e == nil {
			return wire.TypeAck, ack, nil
		}
		inChain := false
		for _, p := range e.v.chain {
			inChain = inChain || p == from
		}
		if !inChain {
			return 0, nil, errors.New("node: abort from outside the chain")
		}
		// Any server of the chain may end the epoch: a fault anywhere
		// stops it for all (a malicious one can only deny service).
		s.endQuiet(e, "ended by "+from.ShortString()+": "+string(ref.Reason))
		return wire.TypeAck, ack, nil
	}
	return 0, nil, fmt.Errorf("node: unexpected epoch message %d", t)
}

func (s *Server) onPrepare(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var p wire.Prepare
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := checkParams(p.Params, s.cfg.PIRRate); err != nil {
		return 0, nil, err
	}
	if len(p.Chain) < 1 || peer.ID(p.Chain[0]) != from {
		return 0, nil, errors.New("node: prepare not from the head of its chain")
	}
	pos := -1
	for i, c := range p.Chain {
		id := peer.ID(c)
		if i > 0 && bytes.Compare(p.Chain[i-1], c) >= 0 {
			return 0, nil, errors.New("node: prepared chain not sorted")
		}
		if id == s.h.ID() {
			pos = i
		} else if s.roster.get(id) == nil && id != from {
			return 0, nil, fmt.Errorf("node: prepared chain has %s, not a live server here", id.ShortString())
		}
	}
	if pos < 0 {
		return 0, nil, errors.New("node: this server is not in the prepared chain")
	}
	// Agree on the leader: nobody live here sorts before it.
	if mine := s.chain(); bytes.Compare([]byte(mine[0]), []byte(from)) < 0 && len(mine) >= s.cfg.MinServers {
		return 0, nil, fmt.Errorf("node: %s heads the chain here, not %s", mine[0].ShortString(), from.ShortString())
	}
	s.mu.Lock()
	if p.Number <= s.number {
		n := s.number
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: epoch number %d not above %d", p.Number, n)
	}
	s.mu.Unlock()
	sk, err := mix.NewServerSecret(s.rand)
	if err != nil {
		return 0, nil, err
	}
	rk, err := mix.NewRoundKeys(int(p.Params.Rounds), s.rand)
	if err != nil {
		sk.Close()
		return 0, nil, err
	}
	dkey, err := ecdh.X25519().GenerateKey(s.rand)
	if err != nil {
		sk.Close()
		rk.Close()
		return 0, nil, fmt.Errorf("node: x25519 key: %w", err)
	}
	pid := []byte(s.h.ID())
	pok, err := sk.ProveKey(mix.KeyContext(p.Number, p.Nonce, pid), s.rand)
	if err != nil {
		sk.Close()
		rk.Close()
		return 0, nil, err
	}
	g := wire.GroupEntry{PeerID: pid, Nick: []byte(s.cfg.Nick), PoK: pok}
	for _, a := range s.h.Addrs() {
		if len(g.Addrs) < wire.MaxAddrs {
			g.Addrs = append(g.Addrs, a.Bytes())
		}
	}
	copy(g.X[:], sk.Public().Encode(nil))
	copy(g.D[:], dkey.PublicKey().Bytes())
	Y, Yp := rk.Public()
	for r := range Y {
		var y, yp [32]byte
		copy(y[:], Y[r].Encode(nil))
		copy(yp[:], Yp[r].Encode(nil))
		g.Y, g.Yp = append(g.Y, y), append(g.Yp, yp)
	}
	e := &sepoch{pos: pos, nonce: p.Nonce, sk: sk, rk: rk, dkey: dkey, entry: g}
	s.mu.Lock()
	// One epoch is prepared at a time (the leader runs them in turn): a
	// preparation that never got its descriptor signed is dropped here,
	// so that aborted epochs do not pile up.
	for k, old := range s.prep {
		old.erase()
		delete(s.prep, k)
	}
	s.prep[p.Nonce] = e
	s.mu.Unlock()
	return wire.TypeEntry, g.Marshal(), nil
}

func (s *Server) onSignReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var sd wire.Signed
	if err := sd.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	v, err := checkDescriptor(&sd.Desc, s.cfg.PIRRate)
	if err != nil {
		return 0, nil, err
	}
	if v.chain[0] != from {
		return 0, nil, errors.New("node: sign request not from the leader")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sd.Final {
		if len(sd.Desc.Clients) != 0 {
			return 0, nil, errors.New("node: open descriptor lists clients")
		}
		e := s.prep[sd.Desc.Nonce]
		if e == nil || e.pos >= len(v.chain) || v.chain[e.pos] != s.h.ID() {
			return 0, nil, errors.New("node: no prepared epoch for this descriptor")
		}
		if !bytes.Equal(sd.Desc.Group[e.pos].Marshal(), e.entry.Marshal()) {
			return 0, nil, errors.New("node: descriptor alters this server's entry")
		}
		delete(s.prep, sd.Desc.Nonce)
		e.v = v
		e.regs, e.fwd, e.stepMsgs, e.rounds = map[[32]byte]wire.Register{}, map[[32]byte]wire.Register{}, map[int]*wire.Step{}, map[uint32]*sround{}
		s.epochs[v.id] = e
		if sd.Desc.Number > s.number {
			s.number = sd.Desc.Number
		}
		sig, err := sign(s.priv, openDigest(&sd.Desc))
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
	}
	e := s.epochs[v.id]
	if e == nil || e.ended {
		return 0, nil, errors.New("node: final descriptor of an unknown or ended epoch")
	}
	if len(e.slotRegs) != len(sd.Desc.Clients) {
		return 0, nil, fmt.Errorf("node: final descriptor lists %d clients, %d registrations received", len(sd.Desc.Clients), len(e.slotRegs))
	}
	inFinal := map[[32]byte]bool{}
	for i, c := range sd.Desc.Clients {
		r := &e.slotRegs[i]
		if r.RegKey != c.RegKey || r.XKey != c.XKey || sha256.Sum256(r.Reg) != c.RegHash {
			return 0, nil, fmt.Errorf("node: final descriptor slot %d does not match its registration", i)
		}
		if int(c.Primary) == e.pos {
			if _, ok := e.regs[c.RegKey]; !ok {
				return 0, nil, fmt.Errorf("node: slot %d names this server as primary for a client it never registered", i)
			}
		}
		inFinal[c.RegKey] = true
	}
	// (v2) sign only if every registration forwarded here is in.
	for k := range e.regs {
		if !inFinal[k] {
			return 0, nil, errors.New("node: final descriptor drops a client registered here")
		}
	}
	sig, err := sign(s.priv, finalDigest(&sd.Desc))
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

func (s *Server) onRegList(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rl wire.RegList
	if err := rl.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[rl.Epoch]
	s.mu.Unlock()
	if e == nil || e.v.chain[0] != from {
		return 0, nil, errors.New("node: registration list for an unknown epoch or not from its leader")
	}
	// Every server verifies every registration (§4.1) before it signs.
	parsed, bad, err := verifyRegs(e.v, rl.Regs, s.rand)
	if err != nil {
		return 0, nil, err
	}
	if len(bad) > 0 {
		return 0, nil, fmt.Errorf("node: %d of %d registrations do not verify, first at slot %d", len(bad), len(rl.Regs), bad[0])
	}
	// §4.1: no key twice, registration or X25519, in any two slots.
	seen := map[[32]byte]bool{}
	for i := range rl.Regs {
		rk, xk := rl.Regs[i].RegKey, rl.Regs[i].XKey
		if seen[rk] || seen[xk] || rk == xk {
			return 0, nil, fmt.Errorf("node: slot %d repeats a registration or x25519 key", i)
		}
		seen[rk], seen[xk] = true, true
	}
	if err := mix.CheckDistinct(parsed); err != nil {
		return 0, nil, fmt.Errorf("node: registrations: %w", err)
	}
	s.mu.Lock()
	e.slotRegs, e.parsed = rl.Regs, parsed
	s.mu.Unlock()
	return wire.TypeAck, ack, nil
}

func (s *Server) onSigned(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var sd wire.Signed
	if err := sd.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	v, err := checkSigned(&sd, s.cfg.PIRRate)
	if err != nil {
		return 0, nil, err
	}
	if v.chain[0] != from {
		return 0, nil, errors.New("node: descriptor not from its leader")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[v.id]
	if e == nil || e.ended {
		return 0, nil, errors.New("node: signed descriptor of an unknown or ended epoch")
	}
	if !sd.Final {
		e.openBytes = body
		// The leader opens an epoch only after the previous one ended;
		// anything older still running here missed its end.
		for _, old := range s.epochs {
			if old != e && !old.ended && old.v.desc.Number < e.v.desc.Number {
				s.endQuiet(old, "superseded")
			}
		}
		s.open = e
		// Ended epochs but the newest two are dropped now: without this
		// every epoch's state (its last rounds' onions and answers, setup
		// steps) stayed for the server's lifetime (found by TestSoak).
		s.forget()
		s.notify()
		return wire.TypeAck, ack, nil
	}
	if e.final != nil {
		return wire.TypeAck, ack, nil
	}
	e.final, e.finalBytes = v, body
	e.regClosed = true
	if s.open == e {
		s.open = nil
	}
	s.notify()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.setup(e) }()
	if e.pos == 0 {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.mixLoop(e) }()
	}
	return wire.TypeAck, ack, nil
}

func (s *Server) onForwardedRegister(body []byte) (wire.Type, []byte, error) {
	var r wire.Register
	if err := r.Unmarshal(body, genericLimits()); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[r.Epoch]
	s.mu.Unlock()
	if e == nil || e.pos != 0 {
		return 0, nil, errors.New("node: forwarded registration for an epoch this server does not lead")
	}
	if _, err := checkRegister(e.v, &r); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.regClosed {
		return 0, nil, errors.New("node: registration closed")
	}
	e.fwd[r.RegKey] = r
	return wire.TypeAck, ack, nil
}

func (s *Server) onClose(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ref wire.EpochRef
	if err := ref.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[ref.Epoch]
	if e == nil || e.v.chain[0] != from {
		return 0, nil, errors.New("node: close of an unknown epoch or not from its leader")
	}
	e.regClosed = true
	if s.open == e {
		s.open = nil
	}
	rl := wire.RegList{Epoch: ref.Epoch}
	for _, r := range e.regs {
		rl.Regs = append(rl.Regs, r)
	}
	sort.Slice(rl.Regs, func(i, j int) bool { return bytes.Compare(rl.Regs[i].RegKey[:], rl.Regs[j].RegKey[:]) < 0 })
	return wire.TypeRegList, rl.Marshal(), nil
}

// setup runs this server's part of §4.2 in chain order: verify every
// earlier step, compute and broadcast its own, verify every later one.
func (s *Server) setup(e *sepoch) {
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout*2)
	defer cancel()
	fail := func(err error) {
		s.log.Warn("setup failed", "err", err)
		s.mu.Lock()
		s.end(e, "setup failed")
		s.mu.Unlock()
	}
	s.mu.Lock()
	ok := e.acquire()
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	v := e.final
	m, n := len(v.chain), len(v.desc.Clients)
	inputs := mix.InitialVectors(e.parsed)
	var shareErr *mix.ShareError
	for k := 0; k < m; k++ {
		var res *mix.StepResult
		if k == e.pos {
			r, sec, err := mix.SetupStep(mix.EpochID(v.id), k, v.serverKeys, e.sk, inputs, s.rand)
			if sec != nil {
				// Held by the epoch at once, so that erase closes it on
				// every path, failed broadcasts included.
				s.mu.Lock()
				e.sec = sec
				s.mu.Unlock()
			}
			if errors.As(err, &shareErr) && r != nil && sec != nil {
				// §4.2 step 3: a client's U or P is the identity or
				// repeated. The result is complete and proven: broadcast
				// it anyway so that everyone can check the claim, then
				// walk the position back to the client.
				err = nil
			}
			if err != nil {
				fail(fmt.Errorf("node: setup step %d: %w", k, err))
				return
			}
			// §3: x_s is erased as soon as setup no longer needs it.
			e.sk.Close()
			raw, err := r.MarshalBinary()
			if err != nil {
				fail(err)
				return
			}
			sig, err := sign(s.priv, taggedHash(tagStep, v.id[:], []byte{byte(k >> 8), byte(k)}, raw))
			if err != nil {
				fail(err)
				return
			}
			msg := (&wire.Step{Epoch: v.id, S: uint16(k), Result: raw, Sig: sig}).Marshal()
			var others []peer.ID
			for _, p := range v.chain {
				if p != s.h.ID() {
					others = append(others, p)
				}
			}
			if _, err := s.each(ctx, others, ProtoEpoch, wire.TypeStep, msg, wire.TypeAck, 16, bulkTimeout); err != nil {
				fail(fmt.Errorf("node: broadcast setup step %d: %w", k, err))
				return
			}
			s.mu.Lock()
			e.forward, e.U = sec.Forward(), r.U
			s.mu.Unlock()
			res = r
		} else {
			var st *wire.Step
			if err := s.waitFor(ctx, func() bool { st = e.stepMsgs[k]; return st != nil || e.ended }); err != nil || st == nil {
				fail(fmt.Errorf("node: no setup step %d: %v", k, err))
				return
			}
			if err := verifyPeerSig(v.chain[k], taggedHash(tagStep, v.id[:], []byte{byte(k >> 8), byte(k)}, st.Result), st.Sig); err != nil {
				fail(fmt.Errorf("node: setup step %d: %w", k, err))
				return
			}
			r, err := mix.ParseStepResult(st.Result, n, m, k)
			if err != nil {
				fail(fmt.Errorf("node: setup step %d: %w", k, err))
				return
			}
			if err := mix.VerifyStep(mix.EpochID(v.id), k, v.serverKeys, inputs, r, s.rand); err != nil && !errors.As(err, &shareErr) {
				fail(fmt.Errorf("node: setup step %d does not verify: %w", k, err))
				return
			}
			res = r
		}
		s.mu.Lock()
		e.steps = append(e.steps, res)
		e.stepInputs = append(e.stepInputs, inputs)
		s.mu.Unlock()
		if shareErr != nil {
			s.shareFault(ctx, e, shareErr)
			return
		}
		if k < m-1 {
			inputs = res.Next()
		}
	}
	ps := e.steps[m-1].Pseudonyms()
	// PIR keys for the clients of other primaries (§6.2).
	keys := make([]*pir.Keys, n)
	for i, c := range v.desc.Clients {
		if int(c.Primary) == e.pos {
			continue
		}
		k, err := pir.ServerKeys(e.dkey, v.id, c.XKey[:])
		if err != nil {
			fail(fmt.Errorf("node: pir keys of slot %d: %w", i, err))
			return
		}
		keys[i] = k
	}
	s.mu.Lock()
	e.pseudonyms, e.keys, e.setupDone = ps, keys, true
	s.notify()
	s.mu.Unlock()
	s.log.Info("setup done", "epoch", fmt.Sprintf("%x", v.id[:6]), "clients", n)
}

func (s *Server) onStep(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var st wire.Step
	if err := st.Unmarshal(body, wire.Limits{Step: 512 << 20}); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[st.Epoch]
	// The final descriptor may reach this server after the first step
	// does (its server started setup on its own copy): check the sender
	// against the open view, whose chain is the final one's.
	if e == nil || e.ended || int(st.S) >= len(e.v.chain) || e.v.chain[st.S] != from {
		return 0, nil, errors.New("node: setup step of an unknown epoch or from the wrong server")
	}
	if e.stepMsgs[int(st.S)] == nil {
		e.stepMsgs[int(st.S)] = &st
		s.notify()
	}
	return wire.TypeAck, ack, nil
}
