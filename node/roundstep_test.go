package node

import (
	"crypto/rand"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/roundstep"
)

// The round steps of roundstep.go, over a round's state, run without a
// network, a store or a server: a chain of three keys, one round's state
// and one event each (the steps that read no round state are tested in
// package internal/roundstep).

type stepChain struct {
	keys []crypto.PrivKey
	ids  []peer.ID
}

func newStepChain(t *testing.T, m int) stepChain {
	t.Helper()
	var c stepChain
	for range m {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		c.keys, c.ids = append(c.keys, priv), append(c.ids, id)
	}
	return c
}

const stepB, stepK, stepN = 64, 1, 3

// facts is the epoch as server pos of the chain sees it.
func (c stepChain) facts(pos int) roundstep.Facts {
	return roundstep.Facts{ID: [32]byte{7}, Self: c.ids[pos], Chain: c.ids, Pos: pos, N: stepN,
		Params: wire.Params{Rounds: 8, W: 2, ChunkSize: stepB, K: stepK}}
}

func newRounds() *roundsState { return &roundsState{rounds: map[uint32]*sround{}} }

// batchFrom is a signed batch of round r from server S-1 of the chain,
// with n entries of the size server S takes.
func (c stepChain) batchFrom(t *testing.T, S int, r uint32, n int) *wire.Batch {
	t.Helper()
	size := mix.OnionSize(stepB, stepK, len(c.ids)) - mix.TagSize*S
	b := &wire.Batch{Epoch: [32]byte{7}, Round: r, S: uint16(S), ClientSigs: make([][64]byte, stepN), ClientHashes: make([][32]byte, stepN)}
	for i := range n {
		x := make([]byte, size)
		x[0] = byte(i + 1)
		b.Entries = append(b.Entries, x)
	}
	if err := roundstep.SignBatch(c.keys[S-1], b, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

func head(b *wire.Batch) wire.BatchHead {
	return wire.BatchHead{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}
}

func TestBatchHeadStep(t *testing.T) {
	c := newStepChain(t, 3)
	ep := c.facts(1)
	h := head(c.batchFrom(t, 1, 2, stepN))
	pub := head(c.batchFrom(t, 3, 2, stepN))

	rs := newRounds()
	if next, _ := batchHeadStep(ep, rs, h); next != roundstep.Decode {
		t.Fatalf("a new batch: %v, want decode", next)
	}
	rs.at(2).batchIn[0] = true
	if next, _ := batchHeadStep(ep, rs, h); next != roundstep.Repeat {
		t.Fatalf("a batch of a round taken: %v, want repeat", next)
	}
	if next, _ := batchHeadStep(ep, rs, pub); next != roundstep.Decode {
		t.Fatalf("the publication after the input: %v, want decode", next)
	}

	rs = newRounds()
	rs.at(2).lacked = true
	if next, _ := batchHeadStep(ep, rs, h); next != roundstep.Ack {
		t.Fatalf("a batch whose input was given up: %v, want a dropped ack", next)
	}
	if next, _ := batchHeadStep(ep, rs, pub); next != roundstep.Decode {
		t.Fatalf("the publication of a round whose input was given up: %v, want decode", next)
	}
	rs.at(2).void = true
	if next, _ := batchHeadStep(ep, rs, pub); next != roundstep.Ack {
		t.Fatalf("the publication of a void round: %v, want a dropped ack", next)
	}

	// Outside the kept window nothing of the round is made.
	rs = newRounds()
	rs.pruned = 3
	if next, fx := batchHeadStep(ep, rs, h); next != roundstep.Refused || fx.Refuse == nil {
		t.Fatalf("a pruned round: %v %v, want refused", next, fx.Refuse)
	}
	rs = newRounds()
	far := head(c.batchFrom(t, 1, 2+uint32(ep.Params.W)+roundsAhead, stepN))
	if next, _ := batchHeadStep(ep, rs, far); next != roundstep.Refused {
		t.Fatalf("a round too far ahead: %v, want refused", next)
	}
	if len(rs.rounds) != 0 {
		t.Fatalf("refused heads left %d rounds of state", len(rs.rounds))
	}
}

func TestBatchStep(t *testing.T) {
	c := newStepChain(t, 3)
	ep := c.facts(1)
	now := time.Unix(1000, 0)

	b := c.batchFrom(t, 1, 2, stepN)
	rs := newRounds()
	root, ph := roundstep.BatchRoot(ep, b)
	if ph != nil {
		t.Fatal("payload hashes for a mixing batch")
	}
	next, fx := batchStep(ep, rs, b, root, now)
	if next != roundstep.Mix || !reflect.DeepEqual(fx, roundstep.Fx{}) {
		t.Fatalf("a good batch: %v %+v, want mix and no effect", next, fx)
	}
	if x := rs.at(2); !x.batchIn[0] || !x.inAt.Equal(now) {
		t.Fatalf("a good batch not taken: batchIn %v inAt %v", x.batchIn, x.inAt)
	}
	if next, _ := batchStep(ep, rs, b, root, now.Add(time.Second)); next != roundstep.Ack {
		t.Fatalf("the same batch twice at once: %v, want ack", next)
	}
	if !rs.at(2).inAt.Equal(now) {
		t.Fatal("a duplicate moved the round's start")
	}

	// Entries that miss the signed root are no evidence: refused, and the
	// round's batch is still to come.
	rs = newRounds()
	b = c.batchFrom(t, 1, 2, stepN)
	b.Entries[1][3] ^= 1
	root, _ = roundstep.BatchRoot(ep, b)
	if next, fx := batchStep(ep, rs, b, root, now); next != roundstep.Refused || fx.Refuse == nil {
		t.Fatalf("entries off the root: %v %v, want refused", next, fx.Refuse)
	}
	if rs.at(2).batchIn[0] {
		t.Fatal("a refused batch was taken")
	}

	// A signed batch of the wrong shape is its sender's fault.
	wrongSize := c.batchFrom(t, 1, 2, stepN)
	wrongSize.Entries[2] = wrongSize.Entries[2][:len(wrongSize.Entries[2])-1]
	if err := roundstep.SignBatch(c.keys[0], wrongSize, nil); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*wire.Batch{
		"a wrong-size onion": wrongSize,
		"a missing entry":    c.batchFrom(t, 1, 2, stepN-1),
	} {
		rs := newRounds()
		root, _ := roundstep.BatchRoot(ep, b)
		next, fx := batchStep(ep, rs, b, root, now)
		if next != roundstep.Fault || fx.BadFrom != 1 || len(fx.Evidence) != len(b.Entries) ||
			!strings.Contains(fx.End, "round 2 void: batch from server 0 malformed") {
			t.Errorf("%s: %v %+v, want a fault naming server 0 with its batch as evidence", name, next, fx)
		}
		if !rs.at(2).batchIn[0] {
			t.Errorf("%s: not marked taken (a repeat would be mixed)", name)
		}
	}

	// The publication is published, and does not start the round here.
	rs = newRounds()
	pub := c.batchFrom(t, 3, 2, stepN)
	root, ph = roundstep.BatchRoot(ep, pub)
	if ph == nil {
		t.Fatal("no payload hashes for the publication")
	}
	pub.Root = root
	if next, _ := batchStep(ep, rs, pub, root, now); next != roundstep.Publish {
		t.Fatalf("the publication: %v, want publish", next)
	}
	if x := rs.at(2); !x.batchIn[1] || x.batchIn[0] || !x.inAt.IsZero() {
		t.Fatalf("the publication: batchIn %v inAt %v", x.batchIn, x.inAt)
	}
}

func TestBeginPublish(t *testing.T) {
	for name, tc := range map[string]struct {
		ended bool
		x     sround
		want  bool
	}{
		"a round to publish":     {false, sround{}, true},
		"the epoch ended":        {true, sround{}, false},
		"a round signed void":    {false, sround{void: true}, false},
		"a round published once": {false, sround{pubDone: true}, false},
	} {
		x := tc.x
		if got := beginPublish(tc.ended, &x); got != tc.want || x.publishing != tc.want {
			t.Errorf("%s: %v (publishing %v), want %v", name, got, x.publishing, tc.want)
		}
	}
}

// TestStored: a round whose publication is stored is done here, its
// requests ready for the list.
func TestStored(t *testing.T) {
	fx := roundstep.PubFx{Published: [][32]byte{{1}, {2}}, Requests: map[[32]byte]bool{{3}: true}, ReqByPos: make([][][32]byte, 3)}
	x := &sround{}
	stored(&fx, x)
	if !x.pubDone || len(x.pub.IDs) != 2 || len(x.pub.ReqByPos) != 3 || !x.pub.Requests[[32]byte{3}] {
		t.Fatal("the round is not done once stored")
	}
}

// TestMixInputStep: S_0 mixes round r once every live slot's onion is in
// and round r−mixDepth is published or void here; a dead slot is not
// waited for and holds the zero filler, with no client signature.
func TestMixInputStep(t *testing.T) {
	const n, size = 3, 8
	rs := newRounds()
	sub := func(r uint32, slot byte) {
		x := rs.at(r)
		x.subs[uint32(slot)] = wire.Submit{Onion: []byte{slot, 1}, Sig: [64]byte{slot}}
		x.digests[uint32(slot)] = [32]byte{slot}
	}
	sub(0, 0)
	sub(0, 2)
	if _, _, _, ok := mixInputStep(rs, 0, n, size, nil); ok || rs.at(0).mixed {
		t.Fatal("round 0 mixed with slot 1's onion missing")
	}
	ins, sigs, hashes, ok := mixInputStep(rs, 0, n, size, []int{1})
	if !ok || !rs.at(0).mixed {
		t.Fatal("round 0 waits for a dead slot")
	}
	if len(ins) != n || ins[0][0] != 0 || ins[2][0] != 2 || sigs[2] != ([64]byte{2}) || hashes[0] != ([32]byte{0}) {
		t.Errorf("inputs %v, signatures and hashes out of slot order", ins)
	}
	if len(ins[1]) != size || ins[1][0] != 0 || sigs[1] != ([64]byte{}) || hashes[1] != ([32]byte{}) {
		t.Errorf("dead slot: %v, signature %v", ins[1], sigs[1][:2])
	}
	for _, slot := range []byte{0, 1, 2} {
		sub(mixDepth, slot)
	}
	if _, _, _, ok := mixInputStep(rs, mixDepth, n, size, nil); ok {
		t.Fatal("round mixDepth mixed before round 0 is published")
	}
	rs.at(0).void = true
	if _, _, _, ok := mixInputStep(rs, mixDepth, n, size, nil); !ok {
		t.Fatal("round mixDepth waits for round 0, void")
	}
	for _, slot := range []byte{0, 1, 2} {
		sub(mixDepth+1, slot)
	}
	rs.at(1).pubDone = true
	if _, _, _, ok := mixInputStep(rs, mixDepth+1, n, size, nil); !ok {
		t.Fatal("round mixDepth+1 waits for round 1, published")
	}
}

// TestTakeList: the first copy of a round's final list is taken, with
// when it came, and the proposal and signatures gathered for it go; a
// later copy changes nothing.
func TestTakeList(t *testing.T) {
	rs := newRounds()
	x := rs.at(4)
	x.proposal, x.propBytes, x.listSigs = &wire.RoundList{}, []byte{1}, map[uint16]wire.ListSig{0: {}}
	rl, at := &wire.RoundList{Round: 4}, time.Unix(100, 0)
	if first, published := takeList(rs, rl, []byte{2}, at); !first || published {
		t.Fatalf("first copy: first %v, published %v", first, published)
	}
	if x.list != rl || x.listBytes[0] != 2 || !x.listAt.Equal(at) || x.proposal != nil || x.propBytes != nil || x.listSigs != nil {
		t.Fatal("the first copy is not the round's list")
	}
	x.pubDone = true
	if first, published := takeList(rs, &wire.RoundList{Round: 4}, []byte{3}, at.Add(time.Second)); first || !published {
		t.Fatalf("second copy: first %v, published %v", first, published)
	}
	if x.list != rl || x.listBytes[0] != 2 || !x.listAt.Equal(at) {
		t.Error("a second copy replaced the list")
	}
}

// TestPubClaimTimes: S_0 waits a quarter of a round limit past the
// round's last due before it claims a publication missing, and asks the
// holders until a round limit after that; with nothing due, a round
// limit from now.
func TestPubClaimTimes(t *testing.T) {
	now, limit := time.Unix(1000, 0), 8*time.Second
	due := []time.Time{now.Add(-3 * time.Second), now.Add(time.Second)}
	settle, end := pubClaimTimes(due, limit, now)
	if !settle.Equal(now.Add(3*time.Second)) || !end.Equal(now.Add(11*time.Second)) {
		t.Errorf("due: settle %v, end %v after now", settle.Sub(now), end.Sub(now))
	}
	settle, end = pubClaimTimes(nil, limit, now)
	if !settle.IsZero() || !end.Equal(now.Add(limit)) {
		t.Errorf("nothing due: settle %v, end %v after now", settle, end.Sub(now))
	}
}

// TestRoundStepsDoNoIO: a step takes no server, epoch (with its lock and
// secrets), context or store, and roundstep.go reads no clock, takes no
// lock and sends nothing but through its drivers (internal/roundstep's
// files: TestStepsDoNoIO there).
func TestRoundStepsDoNoIO(t *testing.T) {
	steps := map[string]any{
		"CheckBatchHead": roundstep.CheckBatchHead, "batchHeadStep": batchHeadStep, "batchStep": batchStep,
		"BatchRoot": roundstep.BatchRoot, "LayerFault": roundstep.LayerFault, "SealBatch": roundstep.SealBatch,
		"beginPublish": beginPublish, "PublishStep": roundstep.PublishStep, "stored": stored,
		"mixInputStep": mixInputStep, "CheckClientSigs": roundstep.CheckClientSigs,
		"ProposeList": roundstep.ProposeList, "CheckList": roundstep.CheckList, "Omitted": roundstep.Omitted,
		"ListRecords": roundstep.ListRecords, "takeList": takeList, "pubClaimTimes": pubClaimTimes,
	}
	banned := []reflect.Type{reflect.TypeFor[*Server](), reflect.TypeFor[*sepoch](), reflect.TypeFor[*Client]()}
	for name, f := range steps {
		ft := reflect.TypeOf(f)
		for i := range ft.NumIn() {
			in := ft.In(i)
			for _, b := range banned {
				if in == b {
					t.Errorf("%s takes %v", name, in)
				}
			}
			if in.Kind() == reflect.Interface && in.Implements(reflect.TypeFor[interface{ Done() <-chan struct{} }]()) {
				t.Errorf("%s takes a context", name)
			}
		}
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "roundstep.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if fn.Recv != nil && strings.Contains(types(fn.Recv), "Server") {
			if fn.Name.Name != "roundFacts" {
				t.Errorf("%s is a method of Server", fn.Name.Name)
			}
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" && x.Sel.Name != "Time" && x.Sel.Name != "Duration" {
					t.Errorf("%s: time.%s (a clock read)", fn.Name.Name, x.Sel.Name)
				}
				if x.Sel.Name == "Lock" || x.Sel.Name == "store" || x.Sel.Name == "h" {
					t.Errorf("%s: .%s", fn.Name.Name, x.Sel.Name)
				}
			case *ast.Ident:
				if x.Name == "call" || x.Name == "deliverAll" || x.Name == "context" {
					t.Errorf("%s: %s", fn.Name.Name, x.Name)
				}
			}
			return true
		})
	}
}

func types(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}

// TestRoundDriversHoldNoLockAcrossIO: in the drivers of the round steps,
// the request list's and the closing record's, nothing between an
// s.mu.Lock() and its Unlock() sends, stores, waits or runs another
// driver. s.end may run under it: it hands its notices to
// goroutines.
func TestRoundDriversHoldNoLockAcrossIO(t *testing.T) {
	drivers := map[string]bool{"mixStep": true, "roundFault": true, "sendBatch": true, "onBatch": true, "runBatch": true, "publish": true,
		"proposeList": true, "signList": true, "onRoundList": true, "omittedHeld": true,
		"propose": true, "onProposal": true, "onSig": true, "assemble": true, "onRecord": true}
	io := map[string]bool{
		"call": true, "each": true, "deliverAll": true, "PutRound": true, "GetChunk": true,
		"publish": true, "mixStep": true, "accuse": true, "payloadBlame": true, "proposeList": true,
		"indexManifests": true, "noteRoot": true, "announceRoot": true, "sendBatch": true,
		"keepUndelivered": true, "waitFor": true, "awaitSettled": true, "awaitSetup": true, "awaitPace": true,
		"VerifyPayloadsHashed": true, "OpenLayerSkipInto": true, "ServerLayerKeys": true,
		"Call": true, "Held": true, "PutChunks": true, "PutRequests": true, "PutPairs": true, "PutList": true,
		"PutClosing": true, "Closing": true, "Take": true, "fetchOmitted": true, "omittedHeld": true,
		"signList": true, "signVoid": true, "keepWindowItem": true, "answerRound": true, "Put": true,
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range []string{"mixing.go", "publish.go", "censor.go", "closing.go"} {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !drivers[fn.Name.Name] {
				continue
			}
			found[fn.Name.Name] = true
			held := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				switch f := c.Fun.(type) {
				case *ast.Ident:
					callee = f.Name
				case *ast.SelectorExpr:
					callee = f.Sel.Name
					if mu, ok := f.X.(*ast.SelectorExpr); ok && mu.Sel.Name == "mu" {
						held = callee == "Lock"
						return true
					}
				}
				if held && io[callee] {
					t.Errorf("%s: %s at %v under s.mu", fn.Name.Name, callee, fset.Position(c.Pos()))
				}
				return true
			})
			if held {
				t.Errorf("%s: ends with s.mu held", fn.Name.Name)
			}
		}
	}
	if len(found) != len(drivers) {
		t.Fatalf("drivers found: %v, want %v", found, drivers)
	}
}
