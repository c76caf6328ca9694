package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/pir"
	"github.com/riffle-net/riffle/store"
)

// oneEpoch joins the next epoch and takes part until it ends.
func (c *Client) oneEpoch(last [32]byte) ([32]byte, error) {
	ctx := c.ctx
	// Until it holds an epoch's final descriptor, the client asks what
	// the group does, for its user (waitstate.go).
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.askState(sctx)
	v, pidx, err := c.openView(ctx, last)
	if v == nil {
		return last, err
	}
	if err != nil {
		return v.ID, err
	}
	c.notes.Join(v.Desc.Number)
	defer c.notes.Join(0)
	if err := c.holdWindow(ctx, v); err != nil {
		if errors.Is(err, errNoWindow) {
			// Sat out: the next attempt, a registration window on, asks
			// for v again while it registers. An epoch that wants every
			// client present closes only with this one (issue 28).
			return last, err
		}
		return v.ID, err
	}
	// §5.2 v3: the window's records settle the chunks that wait for one
	// (resend.go).
	c.mu.Lock()
	again := c.q.settleClosings(c.windowRecs, v.Desc.Number)
	c.mu.Unlock()
	for _, j := range again {
		go c.reencrypt(j)
	}
	e, fin, err := c.join(ctx, v, pidx)
	stop()
	if err != nil {
		return v.ID, err
	}
	defer e.cs.Close()
	defer func() {
		for _, k := range e.others {
			k.Close()
		}
		clear(e.regKey)
		clear(e.payloadBuf)
	}()
	fv := e.v
	n := len(fin.Desc.Clients)
	c.checkAnonymity(fv, &fin.Desc, pidx)
	hooks.Joined(&c.hk, fv.ID, e.slot, e.cs)
	c.mu.Lock()
	c.epoch, c.anon, c.b = e, n, int(fin.Desc.Params.ChunkSize)
	c.stats.Epochs++
	roundsBefore := c.stats.Rounds
	c.notes.Begin(fin.Desc.Number, c.stats.Rounds, c.stats.Uploaded+c.stats.Fetched)
	c.notify()
	c.mu.Unlock()
	// §7: every client syncs the whole public index at each epoch's
	// start, on a fixed schedule that says nothing about what interests
	// it, incrementally from its cursors (indexsync.go).
	c.mu.Lock()
	hooks.OwnWants(&c.hk)
	c.mu.Unlock()
	idx, mans, err := c.syncIndexEpoch(ctx, fin.Desc.Group, fin.Desc.Params.IndexHours)
	hooks.OwnUse(&c.hk)
	if err == nil {
		c.mu.Lock()
		c.idx.entries, c.idx.manifests, c.idx.synced = idx, mans, true
		c.idx.syncs++
		var gets []*getJob
		for _, g := range c.q.wants {
			gets = append(gets, g)
		}
		c.notify()
		c.mu.Unlock()
		// §6.4 (v3): the gets learn every manifest from this copy, so
		// that no request of the epoch follows from one of its answers.
		c.local.push(func() {
			for _, g := range gets {
				c.openFromIndex(g, mans)
			}
		})
	} else {
		c.log.Info("index not synced", "err", err)
	}
	err = e.rounds(ctx)
	if ctx.Err() == nil {
		// §6.4 v3: every manifest the epoch's lists named, checked once
		// after its last list, whatever the client does next.
		e.startEndCheck(ctx)
	}
	if err != nil && ctx.Err() == nil {
		// §5.4: the receipts of the rounds the epoch ended before.
		e.showReceipts(ctx)
		// Before the epoch's secrets are dropped: a setup aborted on a
		// repeated share asks this client to prove its own (§4.1 v3).
		if derr := e.answerDup(ctx); derr != nil {
			c.log.Debug("no duplicate-share answer", "err", derr)
		}
	}
	if ctx.Err() != nil && err != nil {
		// Leaving mid-epoch: cover for the rounds ahead, so that the
		// departure does not end the epoch (§5.4 v3).
		e.handOver()
	}
	if ctx.Err() == nil {
		// A clean end (not a crash or a Close mid-epoch, after which the
		// stored submissions are sent again at the next start).
		c.dropSubmissions(fv.ID)
		// §5.4: a full epoch, held from its first round (the client
		// joined at registration) to its end, whatever ended it.
		c.mu.Lock()
		if c.stats.Rounds > roundsBefore {
			c.q.fullEpoch(c.pres)
			c.notify()
		}
		c.mu.Unlock()
	}
	e.leave()
	return v.ID, err
}

// openView waits for the primary's next open descriptor after last and
// checks it: signed, with the primary and every required server in its
// chain. It returns the view and the primary's chain position; the view
// is nil when no descriptor could be read.
func (c *Client) openView(ctx context.Context, last [32]byte) (*proto.View, int, error) {
	rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeWaitOpen, Body: (&wire.EpochRef{Epoch: last}).Marshal(), Timeout: transport.PollTimeout})
	if err != nil {
		return nil, 0, err
	}
	var open wire.Signed
	if err := open.Unmarshal(rep, proto.GenericLimits()); err != nil {
		return nil, 0, err
	}
	v, err := proto.CheckSigned(&open, 1e30)
	if err != nil || open.Final {
		return nil, 0, fmt.Errorf("node: open descriptor: %v", err)
	}
	if err := c.group.Check(open.Desc.Params, c.cfg.MaxRate); err != nil {
		return v, 0, err
	}
	pidx := -1
	for i, p := range v.Chain {
		if p == c.primary {
			pidx = i
		}
	}
	if pidx < 0 {
		return v, 0, errors.New("node: epoch refused: the primary is not in its chain")
	}
	for _, r := range c.cfg.Require {
		found := false
		for _, p := range v.Chain {
			found = found || p == r
		}
		if !found {
			return v, 0, fmt.Errorf("node: epoch refused: required server %s not in the chain", r.String())
		}
	}
	c.mu.Lock()
	group := c.lastGroup
	c.mu.Unlock()
	if err := clientCheckPrevious(&open.Desc, v.Chain, group, c.primary, c.cfg.Require); err != nil {
		return v, 0, fmt.Errorf("node: epoch refused: %w", err)
	}
	// Before anything of the epoch reads the database: it must be this
	// network's (netbind.go).
	c.bindNetwork(v.Chain)
	return v, pidx, nil
}

// clientCheckPrevious is a client's check of the certificate a descriptor
// carries (§3 "Epoch numbers and leaders"): none for number 1, else the
// certificate of number − 1, verifying against the servers this client
// knows: the group of the last descriptor it took (last), its primary and
// its required servers. A client that took no descriptor yet knows the
// group of this one instead, every server of which (its primary among
// them) signed it with the certificate inside.
func clientCheckPrevious(d *wire.Descriptor, chain, last []peer.ID, primary peer.ID, require []peer.ID) error {
	c := &d.Previous
	if d.Number <= 1 {
		if c.Kind != wire.CertNone {
			return errors.New("epoch 1 carries a previous certificate")
		}
		return nil
	}
	if c.Kind == wire.CertNone {
		return fmt.Errorf("epoch number %d carries no certificate of %d", d.Number, d.Number-1)
	}
	if c.Number != d.Number-1 {
		return fmt.Errorf("epoch number %d carries the certificate of %d", d.Number, c.Number)
	}
	known := map[peer.ID]bool{primary: true}
	for _, p := range require {
		known[p] = true
	}
	if last == nil {
		last = chain
	}
	for _, p := range last {
		known[p] = true
	}
	if err := proto.VerifyCert(c, known); err != nil {
		return fmt.Errorf("previous certificate: %w", err)
	}
	return nil
}

// join registers with a fresh key in the epoch of v (§4.1), checks that
// the final descriptor lists this client under its primary and derives
// the PIR keys shared with the other servers (§6.2).
func (c *Client) join(ctx context.Context, v *proto.View, pidx int) (*cepoch, *wire.Signed, error) {
	pub, priv, err := ed25519.GenerateKey(c.rand)
	if err != nil {
		return nil, nil, err
	}
	if k := hooks.RegKey(&c.hk); k != nil {
		priv = k
		pub = priv.Public().(ed25519.PublicKey)
	}
	cs, reg, err := mix.Register(mix.EpochID(v.ID), pub, v.ServerKeys, c.rand)
	if err != nil {
		return nil, nil, err
	}
	hooks.Register(&c.hk, v.ID, v.ServerKeys, pub, cs, reg)
	fail := func(err error) (*cepoch, *wire.Signed, error) {
		cs.Close()
		return nil, nil, err
	}
	raw, err := reg.MarshalBinary()
	if err != nil {
		return fail(err)
	}
	msg := wire.Register{Epoch: v.ID, XKey: reg.PIRKey, Reg: raw}
	copy(msg.RegKey[:], pub)
	dg := proto.RegisterDigest(&msg)
	copy(msg.Sig[:], ed25519.Sign(priv, dg[:]))
	// The long-term key's signature goes to the primary only (§8).
	cr := wire.ClientRegister{Reg: msg, LTKey: c.ltKey.Public(), LTSig: c.ltKey.Sign(msg.Epoch, msg.RegKey)}
	rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeRegister, Body: cr.Marshal(), Timeout: transport.PollTimeout})
	if err != nil {
		return fail(err)
	}
	var fin wire.Signed
	if err := fin.Unmarshal(rep, proto.GenericLimits()); err != nil {
		return fail(err)
	}
	fv, err := proto.CheckSigned(&fin, 1e30)
	if err != nil || !fin.Final || fv.ID != v.ID {
		return fail(fmt.Errorf("node: final descriptor: %v", err))
	}
	if !bytes.Equal(fin.Desc.Previous.Marshal(), v.Desc.Previous.Marshal()) {
		// The epoch id covers it (MarshalGroup), so fv.ID == v.ID implies it;
		// checked again so that a change of the id's encoding cannot drop it.
		return fail(errors.New("node: epoch refused: the final descriptor carries another previous certificate"))
	}
	// (v3) the receipts its primary gathered from every chain server
	// (§3 "Receipts"): kept, each checked.
	var receipts []wire.Receipt
	rq := wire.ReceiptSet{Epoch: v.ID, RegKey: msg.RegKey}
	if rrep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeReceiptSet, Body: rq.Marshal(), Timeout: transport.ShortTimeout}); err != nil {
		c.log.Debug("receipts", "err", err)
	} else if receipts, err = checkReceipts(rrep, v, &msg); err != nil {
		c.log.Debug("receipts: malformed answer", "err", err)
	}
	slot := -1
	for i, ce := range fin.Desc.Clients {
		if bytes.Equal(ce.RegKey[:], pub) {
			slot = i
		}
	}
	if slot < 0 || int(fin.Desc.Clients[slot].Primary) != pidx {
		return fail(fmt.Errorf("node: this client is not in the final descriptor under its primary (its registration was receipted by %d of %d servers)", len(receipts), len(v.Chain)))
	}
	pk, err := cs.PIRKey()
	if err != nil {
		return fail(err)
	}
	e := &cepoch{c: c, v: fv, slot: uint32(slot), receipts: receipts, regKey: priv, cs: cs, pidx: pidx, reqs: map[uint32][][32]byte{}, ups: map[uint32]*upItem{}, onions: map[uint32][]byte{},
		answerBufs: make(chan []byte, queriesInFlight)}
	for j := range fv.Chain {
		if j == pidx {
			continue
		}
		k, err := pir.ClientKeys(pk, fv.ID, fv.D[j])
		if err != nil {
			return fail(err)
		}
		e.others = append(e.others, k)
	}
	return e, &fin, nil
}

// leave forgets the epoch's requests in flight and settles the
// uploads it did not publish (resend.go).
func (e *cepoch) leave() {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch = nil
	c.notes.Ended()
	// Requests in flight are forgotten; failed ids may be asked again in a
	// later epoch (§6.3).
	clear(c.q.inflight)
	hooks.OwnEnd(&c.hk, e.v, proto.DecoyEpochs+closeWaitMax+1)
	for id := range c.q.failed {
		if hooks.RetryCorrupted(&c.hk) {
			continue // broken on purpose: asked for again at once
		}
		c.q.retry[id] = true
	}
	clear(c.q.failed)
	// §5.2 v3: what becomes of the chunks the epoch did not publish.
	for _, j := range c.q.settleEpoch(e) {
		go c.reencrypt(j)
	}
}

// rounds runs the client's side of §5 and §6 for one epoch. Round r's
// PIR query runs while the client waits for round r+1's list, so that the
// onion of round r+1+W goes out as soon as that list is final and the
// chain always holds W rounds: every client does the same whatever its
// user does, so the timing says nothing about anyone.
func (e *cepoch) rounds(ctx context.Context) error {
	c := e.c
	p := e.v.Desc.Params
	R, W := p.Rounds, uint32(p.W)
	for r := uint32(0); r < min(W, R); r++ {
		if err := e.submit(ctx, r); err != nil {
			return err
		}
	}
	// On an early return the queries in flight are cancelled first, then
	// waited for (deferred calls run last to first).
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// At most queriesInFlight rounds' queries at once: a slow primary
	// holds the client back instead of piling up requests.
	sem := make(chan struct{}, queriesInFlight)
	for r := uint32(0); r < R; r++ {
		rep, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeWaitList, Body: (&wire.EpochRef{Epoch: e.v.ID, Round: r}).Marshal(), Timeout: transport.PollTimeout})
		if err != nil {
			// Typically the epoch's end: the queries of the rounds that
			// did run still get their answers (the server bounds the wait).
			wg.Wait()
			return queryErr(ctx, err)
		}
		var rl wire.RoundList
		if err := rl.Unmarshal(rep, e.v.Lim); err != nil {
			return err
		}
		if rl.Round != r {
			return fmt.Errorf("node: list of round %d for round %d", rl.Round, r)
		}
		if err := proto.CheckList(e.v, &rl); err != nil {
			return err
		}
		e.confirm(r, &rl)
		c.mu.Lock()
		hooks.OwnNote(&c.hk, &rl)
		e.indexedLater(&rl)
		prevDue := e.manifestIDs[:len(e.manifestIDs):len(e.manifestIDs)]
		e.manifestIDs = append(e.manifestIDs, rl.Manifests...)
		e.checkpointRound(ctx, r, prevDue)
		if rl.Void() {
			// §5.2 v3: a void round, signed so by every server: its
			// chunk went back to the queue (confirm) and its requests
			// are asked again, both only resendHold rounds on; there is
			// no database to query.
			e.reask = append(e.reask, reask{at: e.resendFrom(r), ids: e.reqs[r]})
			delete(e.reqs, r)
		}
		c.mu.Unlock()
		// Round r is over: its onion is never sent again (the stored copy
		// for a crash is dropped with the epoch).
		e.onionDone(r)
		if r+W < R {
			if err := e.submit(ctx, r+W); err != nil {
				return queryErr(ctx, err)
			}
		}
		if rl.Void() {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return queryErr(ctx, ctx.Err())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := e.query(ctx, r, &rl); err != nil {
				cancel(err)
				return
			}
			c.mu.Lock()
			c.stats.Rounds++
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	return queryErr(ctx, nil)
}

// queriesInFlight bounds the rounds whose PIR queries a client has
// outstanding at once.
const queriesInFlight = 2

// queryErr returns the error that ended a round's query (the cause of
// ctx's cancellation), else err.
func queryErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// published counts u's chunk as published; call with c.mu held.
func (e *cepoch) published(u *upItem) {
	c := e.c
	id := u.c.ID
	c.stats.Uploaded++
	c.noteHeld(id)
	if u.job != nil && u.job.left[id] {
		delete(u.job.left, id)
		c.markPublished(u.job, id)
		if len(u.job.left) == 0 && !u.job.reencrypting {
			c.finishResumable(u.job)
			u.job.finish()
		}
	}
	c.notify()
}

// indexedLater counts as published the manifests of this client that
// waited in the servers' queue and that round list rl took; call with
// c.mu held.
func (e *cepoch) indexedLater(rl *wire.RoundList) {
	e.manWait = slices.DeleteFunc(e.manWait, func(u *upItem) bool {
		if !slices.Contains(rl.Manifests, u.c.ID) {
			return false
		}
		e.published(u)
		return true
	})
}

// confirm checks that round r's upload was published; if not, it goes
// back to the front of the queue, marked as seen.
func (e *cepoch) confirm(r uint32, rl *wire.RoundList) {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	u := e.ups[r]
	if u == nil {
		return
	}
	delete(e.ups, r)
	if u.manifest && slices.Contains(rl.Published, u.c.ID) && !slices.Contains(rl.Manifests, u.c.ID) {
		// Published but not indexed yet: it waits in its pseudonym's
		// queue at the servers, for a later list of the epoch
		// (indexedLater); if the epoch ends first, it goes out again in
		// a later one (§6.4 v3).
		e.manWait = append(e.manWait, u)
		return
	}
	if slices.Contains(rl.Published, u.c.ID) {
		e.published(u)
		return
	}
	// The list, signed by all m servers, lacks the chunk: it goes out
	// again in this epoch, under the same pseudonym, which ties nothing
	// new; if the epoch ends first, resendRule decides (§5.2 v3).
	u.seen = true
	u.seenAt = seenRound{epoch: e.epochID(), number: e.epochNumber(), round: r, list: proto.ListDigest(rl)}
	c.q.up = append([]upItem{*u}, c.q.up...)
}

// takeUpload takes the next chunk to upload out of the queue into round r
// of e and counts the epoch for its job (§5.4 v3), or returns nil: cover.
// Jobs send nothing unless ready. Call with c.mu held.
func (e *cepoch) takeUpload(r uint32, ready bool) *upItem {
	c := e.c
	if !ready {
		return nil
	}
	i := e.nextUpload(r)
	if i < 0 {
		return nil
	}
	u := c.q.up[i]
	if i == 0 {
		c.q.up = c.q.up[1:]
	} else {
		c.q.up = append(c.q.up[:i:i], c.q.up[i+1:]...)
	}
	e.ups[r] = &u
	if u.job != nil {
		u.job.ep.sent(e.epochID())
	}
	if u.manifest {
		e.manifestsSent++
	}
	return &u
}

// fillPayload puts in pl, the payload of round r, what the client sends
// in that round: the next queued chunk or cover, the jobs' needed ids,
// then decoys (§5.1, §6.3). It returns the chunk's share mark, if any.
// Both a round's submission and a hand-over on leaving (handover.go) fill
// their payloads here, so that the onions a leaving client hands over
// carry what it would have sent.
func (e *cepoch) fillPayload(r uint32, pl *mix.Payload) *store.ShareMark {
	c := e.c
	k := len(pl.Requests)
	var mark *store.ShareMark
	c.mu.Lock()
	defer c.mu.Unlock()
	// Jobs wait for the client's presence (§5.4 v3) and for an epoch of
	// the minimum anonymity set (§3 v3); decoys and cover do not.
	ready := c.pres.Ready() && !c.notes.Hold()
	if u := e.takeUpload(r, ready); u != nil {
		pl.Kind, pl.Length, pl.Chunk = mix.KindChunk, uint32(len(u.c.Data)), u.c.Data
		mark = shareMark(u)
	}
	// Data chunks only, never a manifest (§6.4 v3: those come from the
	// synced index).
	e.releaseReasks(r)
	var reqs [][32]byte
	if ready {
		reqs = c.q.neededIDsIn(e.epochID(), k)
	}
	hooks.Requested(&c.hk, e.v.ID, r, reqs)
	if pl.Kind == mix.KindChunk || len(reqs) > 0 {
		c.pres.Sent()
	}
	reqs = c.backgroundRequests(reqs, k)
	for i, id := range reqs {
		pl.Requests[i] = id
		c.q.inflight[id] = true
	}
	e.reqs[r] = reqs
	return mark
}

// submit seals and sends the onion of round r (§5.1): the next queued
// chunk or cover, and up to k requests.
func (e *cepoch) submit(ctx context.Context, r uint32) error {
	c := e.c
	p := e.v.Desc.Params
	b, k := int(p.ChunkSize), int(p.K)
	onion := e.onions[r]
	// The chunk the onion carries, kept as sent with the onion
	// (share_resume.go); nil for cover and for a round sealed before.
	var mark *store.ShareMark
	if onion == nil {
		pl := &mix.Payload{Kind: mix.KindCover, Requests: make([][32]byte, k)}
		mark = e.fillPayload(r, pl)
		raw, err := mix.EncodePayloadInto(e.payloadBuf, pl, b, k, mix.EpochID(e.v.ID), uint64(r), e.cs, c.rand)
		if err != nil {
			return err
		}
		e.payloadBuf = raw
		hooks.Payload(&c.hk, e.v.ID, r, e.slot, raw)
		keys, err := e.cs.LayerKeys(mix.EpochID(e.v.ID), uint64(r), e.v.Y, e.v.Yp)
		if err != nil {
			return err
		}
		hooks.LayerKeys(&c.hk, e.v.ID, r, e.slot, keys)
		var buf []byte
		onion, buf, err = mix.SealInto(e.onionScratch(), mix.EpochID(e.v.ID), uint64(r), keys, raw)
		mix.CloseLayerKeys(keys)
		if err != nil {
			return err
		}
		if e.onionBufs == nil {
			e.onionBufs = map[uint32][]byte{}
		}
		e.onionBufs[r] = buf
		hooks.Onion(&c.hk, e.v.ID, r, e.slot, onion)
		// Sealed once and kept: a resend after an error sends these bytes
		// again, never a second sealing (§5.1 v2).
		e.onions[r] = onion
		e.sealedNext = max(e.sealedNext, r+1)
	}
	sub := wire.Submit{Epoch: e.v.ID, Round: r, Slot: e.slot, Onion: onion}
	digest := mix.SubmissionDigest(onion) // hashed once: signed, then checked in the receipt
	copy(sub.Sig[:], mix.SignSubmissionDigest(e.regKey, mix.EpochID(e.v.ID), uint64(r), e.slot, digest))
	if err := e.keepSubmission(&sub, mark); err != nil {
		return fmt.Errorf("node: store onion of round %d before sending: %w", r, err)
	}
	if hooks.Silent(&c.hk, e.v.ID, r, e.slot) {
		return nil
	}
	var err error
	var rep []byte
	for try := 0; try < 3; try++ {
		if rep, err = c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeSubmit, Segments: sub.Segments(), Timeout: transport.BulkTimeout}); err == nil {
			break
		}
	}
	if err == nil {
		e.takeReceipt(&sub, digest, rep)
		if o := hooks.SecondOnion(&c.hk, &sub, e.regKey); o != nil {
			_, _ = c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeSubmit, Segments: o.Segments(), Timeout: transport.BulkTimeout})
		}
	}
	return err
}

// checkReceipts keeps of the primary's answer rep, the receipts of this
// client's registration reg, those that verify (§3 v3), one per server.
func checkReceipts(rep []byte, v *proto.View, reg *wire.Register) ([]wire.Receipt, error) {
	var set wire.ReceiptSet
	if err := set.Unmarshal(rep); err != nil {
		return nil, err
	}
	if set.Epoch != v.ID || set.RegKey != reg.RegKey {
		return nil, errors.New("the receipts of another registration")
	}
	seen := map[uint16]bool{}
	var out []wire.Receipt
	for _, r := range set.Receipts {
		if seen[r.Server] || proto.CheckReceipt(&r, v.ID, reg, v.Chain) != nil {
			continue
		}
		seen[r.Server] = true
		out = append(out, r)
	}
	return out, nil
}
