package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// The round steps of roundstep.go, run without a network, a store or a
// server: a chain of three keys, one round's state and one event each.

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
func (c stepChain) facts(pos int) roundFacts {
	return roundFacts{id: [32]byte{7}, self: c.ids[pos], chain: c.ids, pos: pos, n: stepN,
		params: wire.Params{Rounds: 8, W: 2, ChunkSize: stepB, K: stepK}}
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
	if err := signBatch(c.keys[S-1], b, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

func head(b *wire.Batch) wire.BatchHead {
	return wire.BatchHead{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}
}

func TestCheckBatchHead(t *testing.T) {
	c := newStepChain(t, 3)
	ep := c.facts(1)
	good := c.batchFrom(t, 1, 2, stepN)
	if err := checkBatchHead(ep, c.ids[0], head(good)); err != nil {
		t.Fatalf("the predecessor's batch refused: %v", err)
	}
	// The last server's publication comes to every server.
	pub := c.batchFrom(t, 3, 2, stepN)
	if err := checkBatchHead(ep, c.ids[2], head(pub)); err != nil {
		t.Fatalf("the publication refused: %v", err)
	}
	forged := head(good)
	forged.Sig[0] ^= 1
	beyond := c.batchFrom(t, 1, 8, stepN)
	for name, tc := range map[string]struct {
		from peer.ID
		h    wire.BatchHead
	}{
		"wrong predecessor":    {c.ids[2], head(good)},
		"batch for server 2":   {c.ids[1], head(c.batchFrom(t, 2, 2, stepN))},
		"signature of another": {c.ids[0], forged},
		"round beyond epoch":   {c.ids[0], head(beyond)},
		"no such server":       {c.ids[0], wire.BatchHead{S: 4}},
	} {
		if err := checkBatchHead(ep, tc.from, tc.h); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBatchHeadStep(t *testing.T) {
	c := newStepChain(t, 3)
	ep := c.facts(1)
	h := head(c.batchFrom(t, 1, 2, stepN))
	pub := head(c.batchFrom(t, 3, 2, stepN))

	rs := newRounds()
	if next, _ := batchHeadStep(ep, rs, h); next != batchDecode {
		t.Fatalf("a new batch: %v, want decode", next)
	}
	rs.at(2).batchIn[0] = true
	if next, _ := batchHeadStep(ep, rs, h); next != batchRepeat {
		t.Fatalf("a batch of a round taken: %v, want repeat", next)
	}
	if next, _ := batchHeadStep(ep, rs, pub); next != batchDecode {
		t.Fatalf("the publication after the input: %v, want decode", next)
	}

	rs = newRounds()
	rs.at(2).lacked = true
	if next, _ := batchHeadStep(ep, rs, h); next != batchAck {
		t.Fatalf("a batch whose input was given up: %v, want a dropped ack", next)
	}
	if next, _ := batchHeadStep(ep, rs, pub); next != batchDecode {
		t.Fatalf("the publication of a round whose input was given up: %v, want decode", next)
	}
	rs.at(2).void = true
	if next, _ := batchHeadStep(ep, rs, pub); next != batchAck {
		t.Fatalf("the publication of a void round: %v, want a dropped ack", next)
	}

	// Outside the kept window nothing of the round is made.
	rs = newRounds()
	rs.pruned = 3
	if next, fx := batchHeadStep(ep, rs, h); next != batchRefused || fx.refuse == nil {
		t.Fatalf("a pruned round: %v %v, want refused", next, fx.refuse)
	}
	rs = newRounds()
	far := head(c.batchFrom(t, 1, 2+uint32(ep.params.W)+roundsAhead, stepN))
	if next, _ := batchHeadStep(ep, rs, far); next != batchRefused {
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
	root, ph := batchRoot(ep, b)
	if ph != nil {
		t.Fatal("payload hashes for a mixing batch")
	}
	next, fx := batchStep(ep, rs, b, root, now)
	if next != batchMix || !reflect.DeepEqual(fx, roundFx{}) {
		t.Fatalf("a good batch: %v %+v, want mix and no effect", next, fx)
	}
	if x := rs.at(2); !x.batchIn[0] || !x.inAt.Equal(now) {
		t.Fatalf("a good batch not taken: batchIn %v inAt %v", x.batchIn, x.inAt)
	}
	if next, _ := batchStep(ep, rs, b, root, now.Add(time.Second)); next != batchAck {
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
	root, _ = batchRoot(ep, b)
	if next, fx := batchStep(ep, rs, b, root, now); next != batchRefused || fx.refuse == nil {
		t.Fatalf("entries off the root: %v %v, want refused", next, fx.refuse)
	}
	if rs.at(2).batchIn[0] {
		t.Fatal("a refused batch was taken")
	}

	// A signed batch of the wrong shape is its sender's fault.
	wrongSize := c.batchFrom(t, 1, 2, stepN)
	wrongSize.Entries[2] = wrongSize.Entries[2][:len(wrongSize.Entries[2])-1]
	if err := signBatch(c.keys[0], wrongSize, nil); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*wire.Batch{
		"a wrong-size onion": wrongSize,
		"a missing entry":    c.batchFrom(t, 1, 2, stepN-1),
	} {
		rs := newRounds()
		root, _ := batchRoot(ep, b)
		next, fx := batchStep(ep, rs, b, root, now)
		if next != batchFault || fx.badFrom != 1 || len(fx.evidence) != len(b.Entries) ||
			!strings.Contains(fx.end, "round 2 void: batch from server 0 malformed") {
			t.Errorf("%s: %v %+v, want a fault naming server 0 with its batch as evidence", name, next, fx)
		}
		if !rs.at(2).batchIn[0] {
			t.Errorf("%s: not marked taken (a repeat would be mixed)", name)
		}
	}

	// The publication is published, and does not start the round here.
	rs = newRounds()
	pub := c.batchFrom(t, 3, 2, stepN)
	root, ph = batchRoot(ep, pub)
	if ph == nil {
		t.Fatal("no payload hashes for the publication")
	}
	pub.Root = root
	if next, _ := batchStep(ep, rs, pub, root, now); next != batchPublish {
		t.Fatalf("the publication: %v, want publish", next)
	}
	if x := rs.at(2); !x.batchIn[1] || x.batchIn[0] || !x.inAt.IsZero() {
		t.Fatalf("the publication: batchIn %v inAt %v", x.batchIn, x.inAt)
	}
}

func TestSealBatch(t *testing.T) {
	c := newStepChain(t, 3)
	out := make([][]byte, stepN)
	for i := range out {
		out[i] = make([]byte, mix.PayloadSize(stepB, stepK))
		out[i][0] = byte(i)
	}
	sigs, hashes := make([][64]byte, stepN), make([][32]byte, stepN)

	sd, err := sealBatch(c.facts(1), c.keys[1], 4, out, sigs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if sd.publish || len(sd.to) != 1 || sd.to[0] != c.ids[2] || sd.batch.S != 2 || sd.batch.Zeros != nil {
		t.Fatalf("a middle server's batch: to %v publish %v S %d", sd.to, sd.publish, sd.batch.S)
	}
	if sd.batch.Root != merkleRoot(out) {
		t.Fatal("root is not the entries' Merkle root")
	}
	if err := checkBatchHead(c.facts(2), c.ids[1], head(&sd.batch)); err != nil {
		t.Fatalf("the next server refuses the sealed head: %v", err)
	}

	sd, err = sealBatch(c.facts(2), c.keys[2], 4, out, sigs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if !sd.publish || sd.ph == nil || len(sd.to) != 2 || sd.to[0] != c.ids[0] || sd.to[1] != c.ids[1] {
		t.Fatalf("the last server's batch: to %v publish %v", sd.to, sd.publish)
	}
	if sd.batch.Root != publishedRoot(out, sd.ph) || len(sd.batch.Zeros) != stepN {
		t.Fatal("the publication's root or zero runs")
	}
	for i, z := range sd.batch.Zeros {
		if at, n := mix.PaddingRun(out[i], stepB, stepK); z.At != uint32(at) || z.N != uint32(n) || n == 0 {
			t.Fatalf("zero run %d: %+v, want at %d n %d", i, z, at, n)
		}
	}
	for _, pos := range []int{0, 1} {
		if err := checkBatchHead(c.facts(pos), c.ids[2], head(&sd.batch)); err != nil {
			t.Fatalf("server %d refuses the publication's head: %v", pos, err)
		}
	}
}

func TestLayerFault(t *testing.T) {
	ep := newStepChain(t, 3).facts(1)
	in := [][]byte{{1}, {2}}
	fx := layerFault(ep, 5, in, &mix.MACError{Server: 1, Round: 5, Positions: []int{1, 0}})
	if fx.accuse != 2 || fx.end != "" || len(fx.evidence) != 2 {
		t.Fatalf("a MAC failure: %+v, want blame at position 1 with the input as evidence", fx)
	}
	fx = layerFault(ep, 5, in, errors.New("short onion"))
	if fx.accuse != 0 || fx.end != "round 5 void: layer 1: short onion" || len(fx.evidence) != 2 {
		t.Fatalf("another fault: %+v, want the epoch ended with the input as evidence", fx)
	}
}

// stepPayloads are a round's published payloads: a chunk asking for one
// id, a cover asking for another, a chunk asking for none.
func stepPayloads(t *testing.T) (raws [][]byte, chunk []byte, ask [2][32]byte) {
	t.Helper()
	var keys []*group.Element
	for range 2 {
		k, err := mix.NewServerSecret(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.Public())
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	cs, _, err := mix.Register(mix.EpochID{7}, pub, keys, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	chunk = []byte("a chunk of a file")
	ask = [2][32]byte{{1}, {2}}
	for _, p := range []*mix.Payload{
		{Kind: mix.KindChunk, Length: uint32(len(chunk)), Chunk: chunk, Requests: [][32]byte{ask[0]}},
		{Kind: mix.KindCover, Requests: [][32]byte{ask[1]}},
		{Kind: mix.KindChunk, Length: 4, Chunk: []byte("more"), Requests: [][32]byte{{}}},
	} {
		raw, err := mix.EncodePayload(p, stepB, stepK, mix.EpochID{7}, 2, cs, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	return raws, chunk, ask
}

func TestPublishStep(t *testing.T) {
	ep := newStepChain(t, 3).facts(0)
	raws, chunk, ask := stepPayloads(t)
	ph := hashPublished(raws, stepB, stepK)

	fx := publishStep(ep, 2, raws, ph, nil, nil)
	if fx.end != "" || fx.blame != 0 {
		t.Fatalf("a good round: %+v", fx.roundFx)
	}
	if len(fx.chunks) != 2 || string(fx.chunks[0].Data) != string(chunk) || fx.chunks[0].ID != ph.hs[0].ChunkID ||
		len(fx.published) != 2 || fx.published[1] != ph.hs[2].ChunkID {
		t.Fatalf("chunks %d, published %d: want the two chunks, not the cover", len(fx.chunks), len(fx.published))
	}
	if len(fx.requests) != 2 || !fx.requests[ask[0]] || !fx.requests[ask[1]] ||
		len(fx.reqByPos[0]) != 1 || len(fx.reqByPos[1]) != 1 || len(fx.reqByPos[2]) != 0 || len(fx.seen) != 3 {
		t.Fatalf("requests %v, by position %v", fx.requests, fx.reqByPos)
	}
	x := &sround{}
	fx.stored(x)
	if !x.pubDone || len(x.published) != 2 || len(x.reqByPos) != 3 {
		t.Fatal("the round is not done once stored")
	}

	// A bad signature: the others are kept, blame walks the first bad.
	fx = publishStep(ep, 2, raws, ph, []int{0}, nil)
	if fx.blame != 1 || fx.end != "" || len(fx.chunks) != 1 || fx.chunks[0].ID != ph.hs[2].ChunkID || fx.requests[ask[0]] {
		t.Fatalf("bad at 0: blame %d, %d chunks, requests %v", fx.blame, len(fx.chunks), fx.requests)
	}
	// At a dead slot's output a bad payload is the filler: skipped,
	// never blamed, even where it would not decode.
	filler := append([][]byte{}, raws...)
	filler[1] = make([]byte, len(raws[1]))
	filler[1][0] = 0xff
	fx = publishStep(ep, 2, filler, hashPublished(filler, stepB, stepK), []int{1}, []int{1})
	if fx.blame != 0 || fx.end != "" || len(fx.chunks) != 2 {
		t.Fatalf("a dead output: %+v, %d chunks", fx.roundFx, len(fx.chunks))
	}
	// A payload that does not decode ends the epoch.
	fx = publishStep(ep, 2, filler, hashPublished(filler, stepB, stepK), nil, nil)
	if fx.end != "round 2: payload 1 malformed" || len(fx.seen) != 1 {
		t.Fatalf("a malformed payload: %+v", fx.roundFx)
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

// TestRoundStepsDoNoIO: a step takes no server, epoch (with its lock and
// secrets), context or store, and roundstep.go reads no clock, takes no
// lock and sends nothing but through its drivers.
func TestRoundStepsDoNoIO(t *testing.T) {
	steps := map[string]any{
		"checkBatchHead": checkBatchHead, "batchHeadStep": batchHeadStep, "batchStep": batchStep,
		"batchRoot": batchRoot, "layerFault": layerFault, "sealBatch": sealBatch,
		"beginPublish": beginPublish, "publishStep": publishStep,
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
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" && x.Sel.Name != "Time" {
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
// nothing between an s.mu.Lock() and its Unlock() sends, stores, waits or
// runs another driver. s.end may run under it: it hands its notices to
// goroutines.
func TestRoundDriversHoldNoLockAcrossIO(t *testing.T) {
	drivers := map[string]bool{"mixStep": true, "roundFault": true, "sendBatch": true, "onBatch": true, "runBatch": true, "publish": true}
	io := map[string]bool{
		"call": true, "each": true, "deliverAll": true, "PutRound": true, "GetChunk": true,
		"publish": true, "mixStep": true, "accuse": true, "payloadBlame": true, "proposeList": true,
		"indexManifests": true, "noteRoot": true, "announceRoot": true, "sendBatch": true,
		"keepUndelivered": true, "waitFor": true, "awaitSettled": true, "awaitSetup": true, "awaitPace": true,
		"VerifyPayloadsHashed": true, "OpenLayerSkipInto": true, "ServerLayerKeys": true,
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range []string{"mixing.go", "publish.go"} {
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
