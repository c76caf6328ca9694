package client

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"testing/synctest"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// seeded is a deterministic random reader (ChaCha8), so that two clients
// given the same seed draw the same bytes.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func newSeeded(seed byte) seeded { return seeded{rand.NewChaCha8([32]byte{seed})} }

func decoyClient(seed byte) *Client {
	c := &Client{rand: newSeeded(seed)}
	c.q = newQueue(&c.stats, c.rand, nil, nil)
	return c
}

// feed gives a client the same public demand: epochs of rounds, each
// list with a few ids (some repeated across rounds and epochs), the last
// E_d of them as the window.
func feed(c *Client, epochs int) {
	var eps []*proto.PoolEpoch
	for e := range epochs {
		ep := [32]byte{0xee, byte(e)}
		var lists []*wire.RoundList
		for r := range 4 {
			rl := &wire.RoundList{Epoch: ep, Round: uint32(r)}
			for i := range 5 {
				rl.Entries = append(rl.Entries, wire.ListEntry{ID: [32]byte{byte(e), byte((r + i) % 7)}})
			}
			// Each id asked for by one position, the same in every
			// round it is listed.
			for i := range 5 {
				rl.Pairs = append(rl.Pairs, wire.ListPair{Pos: uint32((r + i) % 7), Entry: uint32(i)})
			}
			sortPairs(rl.Pairs)
			lists = append(lists, rl)
		}
		eps = append([]*proto.PoolEpoch{testPoolEpoch(ep, 4, lists...)}, eps...)
	}
	c.decoys.set(eps[:min(len(eps), proto.DecoyEpochs)])
}

// testPoolEpoch is epoch ep's pool as its closing record fixes it, the
// lists published.
func testPoolEpoch(ep [32]byte, R int, lists ...*wire.RoundList) *proto.PoolEpoch {
	rec := closingOfLists(ep, R, lists...)
	seen := map[wire.PoolPair]bool{}
	var pairs []wire.PoolPair
	for _, rl := range lists {
		for i, x := range rl.Pairs {
			if p := (wire.PoolPair{Pos: x.Pos, ID: rl.PairID(i)}); !seen[p] {
				seen[p] = true
				pairs = append(pairs, p)
			}
		}
	}
	pool := proto.SamplePool(rec, pairs)
	return &proto.PoolEpoch{ID: ep, Total: pool.Total, Sample: pool.Sample}
}

// TestBackgroundRequests (§6.3 v3): decoys are drawn at rate ρ, uniformly
// over the distinct (position, id) pairs of the last E_d epochs' public
// request lists (here one position per id), and
// the draws are the same whatever the client holds, wants or failed to
// fetch: two clients with the same random bytes and the same public lists
// send the same decoys. A failed chunk is never a need (never requested on
// purpose) and goes out only when a draw lands on it.
func TestBackgroundRequests(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		idle := decoyClient(1)
		if n := len(idle.backgroundRequests(nil, 1)); n != 0 {
			t.Fatalf("%d decoys with no public lists", n)
		}
		idle, busy := decoyClient(1), decoyClient(1)
		feed(idle, proto.DecoyEpochs+2)
		feed(busy, proto.DecoyEpochs+2)
		// The busy client failed to fetch one public id and had answers
		// corrupted before; the idle one holds and wants nothing.
		failed := [32]byte{byte(proto.DecoyEpochs + 1), 3}
		busy.q.failed[failed] = true
		busy.q.retry[[32]byte{byte(proto.DecoyEpochs), 1}] = true
		if ids := busy.q.neededIDsIn([32]byte{}, 4); len(ids) != 0 {
			t.Fatalf("failed ids are needs: %x", ids)
		}
		// Pool: the last E_d epochs, 7 distinct ids each.
		if busy.decoys.weight != proto.DecoyEpochs*7 {
			t.Fatalf("pool of %d ids, want %d", busy.decoys.weight, proto.DecoyEpochs*7)
		}
		const draws = 40000
		count := map[[32]byte]int{}
		total := 0
		for range draws {
			a, b := idle.backgroundRequests(nil, 1), busy.backgroundRequests(nil, 1)
			if len(a) != len(b) || (len(a) == 1 && a[0] != b[0]) {
				t.Fatalf("draws differ between an idle and a busy client: %x vs %x", a, b)
			}
			for _, id := range a {
				if int(id[0]) < 2 {
					t.Fatalf("decoy %x from an epoch older than E_d", id[:2])
				}
				count[id]++
				total++
			}
		}
		// Rate ρ: 5 standard deviations.
		rho := float64(proto.DecoyRateNum) / proto.DecoyRateDen
		if mean, sd := draws*rho, math.Sqrt(draws*rho*(1-rho)); math.Abs(float64(total)-mean) > 5*sd {
			t.Fatalf("%d decoys in %d slots, want about %.0f", total, draws, mean)
		}
		// Uniform over the pool: every id within 5 standard deviations.
		pool := int(busy.decoys.weight)
		p := 1 / float64(pool)
		for id, n := range count {
			if mean, sd := float64(total)*p, math.Sqrt(float64(total)*p*(1-p)); math.Abs(float64(n)-mean) > 5*sd {
				t.Fatalf("id %x drawn %d times, want about %.0f", id[:2], n, mean)
			}
		}
		if len(count) != pool || count[failed] == 0 {
			t.Fatalf("%d of %d pool ids drawn, failed id drawn %d times", len(count), pool, count[failed])
		}
		// Full slots carry no decoy; a draw on an id already requested leaves
		// a cover row.
		for range 1000 {
			if got := busy.backgroundRequests([][32]byte{{9}}, 1); len(got) != 1 {
				t.Fatalf("a full round got %d requests", len(got))
			}
			if got := busy.backgroundRequests([][32]byte{failed}, 2); len(got) == 2 && got[1] == failed {
				t.Fatal("an id requested twice in one round")
			}
		}
	})
}

func sortPairs(ps []wire.ListPair) {
	sort.Slice(ps, func(i, j int) bool {
		return ps[i].Pos < ps[j].Pos || (ps[i].Pos == ps[j].Pos && ps[i].Entry < ps[j].Entry)
	})
}

// TestDecoyPairsOncePerEpoch (§6.3 v3): the pool counts each (output
// position, id) pair of an epoch once, however many rounds list it, and
// an id that k positions asked for counts k times: one pseudonym that
// asks for an id in every round weighs it no more than one that asked
// once, and decoys follow how many pseudonyms asked.
func TestDecoyPairsOncePerEpoch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := decoyClient(7)
		popular, loner := [32]byte{1}, [32]byte{2}
		ep := [32]byte{0xee}
		var lists []*wire.RoundList
		for r := range 6 {
			rl := &wire.RoundList{Epoch: ep, Round: uint32(r), Entries: []wire.ListEntry{{ID: popular}, {ID: loner}}}
			// Position 0 asks for the loner in every round; positions 1 to 3
			// ask for the popular id, each in one round only.
			rl.Pairs = []wire.ListPair{{Pos: 0, Entry: 1}}
			if r < 3 {
				rl.Pairs = append(rl.Pairs, wire.ListPair{Pos: uint32(1 + r), Entry: 0})
			}
			lists = append(lists, rl)
		}
		first := testPoolEpoch(ep, 6, lists...)
		c.decoys.set([]*proto.PoolEpoch{first})
		if c.decoys.weight != 4 {
			t.Fatalf("pool of %d pairs, want 4 (three positions for one id, one for the other)", c.decoys.weight)
		}
		count := map[[32]byte]int{}
		const draws = 40000
		for range draws {
			for _, id := range c.backgroundRequests(nil, 1) {
				count[id]++
			}
		}
		total := count[popular] + count[loner]
		// The popular id is 3/4 of the draws: 5 standard deviations.
		p := 0.75
		if mean, sd := float64(total)*p, math.Sqrt(float64(total)*p*(1-p)); math.Abs(float64(count[popular])-mean) > 5*sd {
			t.Fatalf("popular id drawn %d of %d times, want about %.0f", count[popular], total, mean)
		}
		// The next epoch counts its pairs again.
		rl := &wire.RoundList{Epoch: [32]byte{0xef}, Entries: []wire.ListEntry{{ID: loner}}, Pairs: []wire.ListPair{{Pos: 0, Entry: 0}}}
		c.decoys.set([]*proto.PoolEpoch{testPoolEpoch([32]byte{0xef}, 1, rl), first})
		if c.decoys.weight != 5 {
			t.Fatalf("pool of %d pairs after a second epoch, want 5", c.decoys.weight)
		}
	})
}

// closingOfLists is the closing record of epoch ep that shows each of
// lists published (and every other round of R without a list).
func closingOfLists(ep [32]byte, R int, lists ...*wire.RoundList) *wire.Closing {
	rec := &wire.Closing{Epoch: ep, Rounds: make([]wire.ClosingRound, R)}
	for _, rl := range lists {
		rec.Rounds[rl.Round] = wire.ClosingRound{State: wire.ClosedPublished, List: proto.ListDigest(rl)}
	}
	return rec
}

// TestPoolCanonical (§6.3 v3): an epoch's pool is fixed by its closing
// record alone: the lowest sampling keys, whatever order the pairs came
// in, at most MaxPoolPairs of them however many the epoch had, with the
// epoch's weight kept (its pairs, not its sample); a pool that differs
// from the record's digest in a pair or a count is refused, and another
// record (other lists) samples other pairs.
func TestPoolCanonical(t *testing.T) {
	ep := [32]byte{0xee, 2}
	rec := &wire.Closing{Epoch: ep, Rounds: []wire.ClosingRound{{State: wire.ClosedPublished, List: [32]byte{1}}, {State: wire.ClosedVoid, List: [32]byte{2}}}}
	var pairs []wire.PoolPair
	for i := range 3 * wire.MaxPoolPairs {
		pairs = append(pairs, wire.PoolPair{Pos: uint32(i % 64), ID: [32]byte{byte(i), byte(i >> 8)}})
	}
	a := proto.SamplePool(rec, pairs)
	rev := slices.Clone(pairs)
	slices.Reverse(rev)
	b := proto.SamplePool(rec, rev)
	if a.Total != uint32(len(pairs)) || len(a.Sample) != wire.MaxPoolPairs || proto.PoolDigest(a) != proto.PoolDigest(b) {
		t.Fatalf("pool of %d pairs, sample %d, same whatever the order: %v", a.Total, len(a.Sample), proto.PoolDigest(a) == proto.PoolDigest(b))
	}
	seed := proto.PoolSeed(rec)
	last := proto.PoolKey(seed, a.Sample[len(a.Sample)-1])
	inSample := map[wire.PoolPair]bool{}
	for _, p := range a.Sample {
		inSample[p] = true
	}
	for _, p := range pairs {
		k := proto.PoolKey(seed, p)
		if !inSample[p] && bytes.Compare(k[:], last[:]) < 0 {
			t.Fatalf("pair %v has a lower key than the sample's highest and is left out", p)
		}
	}
	rec.Pairs, rec.Pool = a.Total, proto.PoolDigest(a)
	if err := proto.CheckPool(rec, a); err != nil {
		t.Fatal(err)
	}
	bad := *a
	bad.Sample = slices.Clone(a.Sample)
	bad.Sample[0].ID[31] ^= 1
	if proto.CheckPool(rec, &bad) == nil {
		t.Fatal("a pool with another pair is taken")
	}
	bad = *a
	bad.Total--
	if proto.CheckPool(rec, &bad) == nil {
		t.Fatal("a pool with another weight is taken")
	}
	other := *rec
	other.Rounds = slices.Clone(rec.Rounds)
	other.Rounds[0].List[0] ^= 1
	if c := proto.SamplePool(&other, pairs); slices.Equal(c.Sample, a.Sample) {
		t.Fatal("another record's lists sample the same pairs")
	}
	// Draws weigh the epoch by its pairs: against a small epoch of
	// MaxPoolPairs/3 pairs it takes about 9/10 of them.
	small := make([]wire.PoolPair, wire.MaxPoolPairs/3)
	for i := range small {
		small[i] = wire.PoolPair{ID: [32]byte{0xff, byte(i), byte(i >> 8)}}
	}
	sp := proto.SamplePool(&wire.Closing{Epoch: [32]byte{3}}, small)
	c := decoyClient(5)
	c.decoys.set([]*proto.PoolEpoch{{Total: a.Total, Sample: a.Sample}, {Total: sp.Total, Sample: sp.Sample}})
	big, n := 0, 0
	for range 20000 {
		for _, id := range c.backgroundRequests(nil, 1) {
			n++
			if id[0] != 0xff {
				big++
			}
		}
	}
	if p := float64(big) / float64(n); math.Abs(p-0.9) > 0.02 {
		t.Fatalf("the large epoch took %.3f of the draws, want 0.9", p)
	}
}
