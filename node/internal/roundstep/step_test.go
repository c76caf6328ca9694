package roundstep

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The round steps that read no round state, run without a network, a
// store or a server: a chain of three keys and one event each (moved from
// package node's roundstep_test.go).

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
func (c stepChain) facts(pos int) Facts {
	return Facts{ID: [32]byte{7}, Self: c.ids[pos], Chain: c.ids, Pos: pos, N: stepN,
		Params: wire.Params{Rounds: 8, W: 2, ChunkSize: stepB, K: stepK}}
}

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
	if err := SignBatch(c.keys[S-1], b, nil); err != nil {
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
	if err := CheckBatchHead(ep, c.ids[0], head(good)); err != nil {
		t.Fatalf("the predecessor's batch refused: %v", err)
	}
	// The last server's publication comes to every server.
	pub := c.batchFrom(t, 3, 2, stepN)
	if err := CheckBatchHead(ep, c.ids[2], head(pub)); err != nil {
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
		if err := CheckBatchHead(ep, tc.from, tc.h); err == nil {
			t.Errorf("%s: accepted", name)
		}
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

	sd, err := SealBatch(c.facts(1), c.keys[1], 4, out, sigs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Publish || len(sd.To) != 1 || sd.To[0] != c.ids[2] || sd.Batch.S != 2 || sd.Batch.Zeros != nil {
		t.Fatalf("a middle server's batch: to %v publish %v S %d", sd.To, sd.Publish, sd.Batch.S)
	}
	if sd.Batch.Root != proto.MerkleRoot(out) {
		t.Fatal("root is not the entries' Merkle root")
	}
	if err := CheckBatchHead(c.facts(2), c.ids[1], head(&sd.Batch)); err != nil {
		t.Fatalf("the next server refuses the sealed head: %v", err)
	}

	sd, err = SealBatch(c.facts(2), c.keys[2], 4, out, sigs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	if !sd.Publish || sd.PH == nil || len(sd.To) != 2 || sd.To[0] != c.ids[0] || sd.To[1] != c.ids[1] {
		t.Fatalf("the last server's batch: to %v publish %v", sd.To, sd.Publish)
	}
	if sd.Batch.Root != PublishedRoot(out, sd.PH) || len(sd.Batch.Zeros) != stepN {
		t.Fatal("the publication's root or zero runs")
	}
	for i, z := range sd.Batch.Zeros {
		if at, n := mix.PaddingRun(out[i], stepB, stepK); z.At != uint32(at) || z.N != uint32(n) || n == 0 {
			t.Fatalf("zero run %d: %+v, want at %d n %d", i, z, at, n)
		}
	}
	for _, pos := range []int{0, 1} {
		if err := CheckBatchHead(c.facts(pos), c.ids[2], head(&sd.Batch)); err != nil {
			t.Fatalf("server %d refuses the publication's head: %v", pos, err)
		}
	}
}

func TestLayerFault(t *testing.T) {
	ep := newStepChain(t, 3).facts(1)
	in := [][]byte{{1}, {2}}
	fx := LayerFault(ep, 5, in, &mix.MACError{Server: 1, Round: 5, Positions: []int{1, 0}})
	if fx.Accuse != 2 || fx.End != "" || len(fx.Evidence) != 2 {
		t.Fatalf("a MAC failure: %+v, want blame at position 1 with the input as evidence", fx)
	}
	fx = LayerFault(ep, 5, in, errors.New("short onion"))
	if fx.Accuse != 0 || fx.End != "round 5 void: layer 1: short onion" || len(fx.Evidence) != 2 {
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
	ph := HashPublished(raws, stepB, stepK)

	fx := PublishStep(ep, 2, raws, ph, nil, nil)
	if fx.End != "" || fx.Blame != 0 {
		t.Fatalf("a good round: %+v", fx.Fx)
	}
	if len(fx.Chunks) != 2 || string(fx.Chunks[0].Data) != string(chunk) || fx.Chunks[0].ID != ph.Hs[0].ChunkID ||
		len(fx.Published) != 2 || fx.Published[1] != ph.Hs[2].ChunkID {
		t.Fatalf("chunks %d, published %d: want the two chunks, not the cover", len(fx.Chunks), len(fx.Published))
	}
	if len(fx.Requests) != 2 || !fx.Requests[ask[0]] || !fx.Requests[ask[1]] ||
		len(fx.ReqByPos[0]) != 1 || len(fx.ReqByPos[1]) != 1 || len(fx.ReqByPos[2]) != 0 || len(fx.Seen) != 3 {
		t.Fatalf("requests %v, by position %v", fx.Requests, fx.ReqByPos)
	}
	// A bad signature: the others are kept, blame walks the first bad.
	fx = PublishStep(ep, 2, raws, ph, []int{0}, nil)
	if fx.Blame != 1 || fx.End != "" || len(fx.Chunks) != 1 || fx.Chunks[0].ID != ph.Hs[2].ChunkID || fx.Requests[ask[0]] {
		t.Fatalf("bad at 0: blame %d, %d chunks, requests %v", fx.Blame, len(fx.Chunks), fx.Requests)
	}
	// At a dead slot's output a bad payload is the filler: skipped,
	// never blamed, even where it would not decode.
	filler := append([][]byte{}, raws...)
	filler[1] = make([]byte, len(raws[1]))
	filler[1][0] = 0xff
	fx = PublishStep(ep, 2, filler, HashPublished(filler, stepB, stepK), []int{1}, []int{1})
	if fx.Blame != 0 || fx.End != "" || len(fx.Chunks) != 2 {
		t.Fatalf("a dead output: %+v, %d chunks", fx.Fx, len(fx.Chunks))
	}
	// A payload that does not decode ends the epoch.
	fx = PublishStep(ep, 2, filler, HashPublished(filler, stepB, stepK), nil, nil)
	if fx.End != "round 2: payload 1 malformed" || len(fx.Seen) != 1 {
		t.Fatalf("a malformed payload: %+v", fx.Fx)
	}
}

// TestStepsDoNoIO: the package's files read no clock, take no lock, and
// neither send nor take a context.
func TestStepsDoNoIO(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range []string{"step.go", "publish.go", "list.go"} {
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "context" || p == "time" || p == "sync" || strings.Contains(p, "transport") {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if x, ok := n.(*ast.SelectorExpr); ok && (x.Sel.Name == "Lock" || x.Sel.Name == "Now") {
				t.Errorf("%s: .%s at %v", name, x.Sel.Name, fset.Position(x.Pos()))
			}
			return true
		})
	}
}
