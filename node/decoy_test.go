package node

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// seeded is a deterministic random reader (ChaCha8), so that two clients
// given the same seed draw the same bytes.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func newSeeded(seed byte) seeded { return seeded{rand.NewChaCha8([32]byte{seed})} }

func decoyClient(seed byte) *Client {
	return &Client{rand: newSeeded(seed), inflight: map[[32]byte]bool{}, failed: map[[32]byte]bool{},
		retry: map[[32]byte]bool{}, wants: map[[32]byte]*getJob{}}
}

// feed gives a client the same public request lists: epochs of rounds,
// each list with a few ids (some repeated across rounds and epochs).
func feed(c *Client, epochs int) {
	for e := range epochs {
		for r := range 4 {
			rl := wire.RoundList{Epoch: [32]byte{0xee, byte(e)}, Round: uint32(r)}
			for i := range 5 {
				rl.Entries = append(rl.Entries, wire.ListEntry{ID: [32]byte{byte(e), byte((r + i) % 7)}})
			}
			// Each id asked for by one position, the same in every
			// round it is listed.
			for i := range 5 {
				rl.Pairs = append(rl.Pairs, wire.ListPair{Pos: uint32((r + i) % 7), Entry: uint32(i)})
			}
			sortPairs(rl.Pairs)
			c.decoys.note(&rl)
		}
		c.decoys.endEpoch()
	}
	c.closeAllDecoys()
}

// TestBackgroundRequests (§6.3 v3): decoys are drawn at rate ρ, uniformly
// over the distinct (position, id) pairs of the last E_d epochs' public
// request lists (here one position per id), and
// the draws are the same whatever the client holds, wants or failed to
// fetch: two clients with the same random bytes and the same public lists
// send the same decoys. A failed chunk is never a need (never requested on
// purpose) and goes out only when a draw lands on it.
func TestBackgroundRequests(t *testing.T) {
	virtual(t, func(t *testing.T) {
		idle, busy := decoyClient(1), decoyClient(1)
		if n := len(idle.backgroundRequests(nil, 1)); n != 0 {
			t.Fatalf("%d decoys with no public lists", n)
		}
		idle, busy = decoyClient(1), decoyClient(1)
		feed(idle, DecoyEpochs+2)
		feed(busy, DecoyEpochs+2)
		// The busy client failed to fetch one public id and had answers
		// corrupted before; the idle one holds and wants nothing.
		failed := [32]byte{byte(DecoyEpochs + 1), 3}
		busy.failed[failed] = true
		busy.retry[[32]byte{byte(DecoyEpochs), 1}] = true
		if ids := busy.neededIDs(4); len(ids) != 0 {
			t.Fatalf("failed ids are needs: %x", ids)
		}
		// Pool: the last E_d epochs, 7 distinct ids each.
		if busy.decoys.size != DecoyEpochs*7 {
			t.Fatalf("pool of %d ids, want %d", busy.decoys.size, DecoyEpochs*7)
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
		rho := float64(DecoyRateNum) / DecoyRateDen
		if mean, sd := draws*rho, math.Sqrt(draws*rho*(1-rho)); math.Abs(float64(total)-mean) > 5*sd {
			t.Fatalf("%d decoys in %d slots, want about %.0f", total, draws, mean)
		}
		// Uniform over the pool: every id within 5 standard deviations.
		pool := busy.decoys.size
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
	virtual(t, func(t *testing.T) {
		c := decoyClient(7)
		popular, loner := [32]byte{1}, [32]byte{2}
		ep := [32]byte{0xee}
		for r := range 6 {
			rl := wire.RoundList{Epoch: ep, Round: uint32(r), Entries: []wire.ListEntry{{ID: popular}, {ID: loner}}}
			// Position 0 asks for the loner in every round; positions 1 to 3
			// ask for the popular id, each in one round only.
			rl.Pairs = []wire.ListPair{{Pos: 0, Entry: 1}}
			if r < 3 {
				rl.Pairs = append(rl.Pairs, wire.ListPair{Pos: uint32(1 + r), Entry: 0})
			}
			c.decoys.note(&rl)
		}
		c.decoys.endEpoch()
		c.closeAllDecoys()
		if c.decoys.size != 4 {
			t.Fatalf("pool of %d pairs, want 4 (three positions for one id, one for the other)", c.decoys.size)
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
		rl := wire.RoundList{Epoch: [32]byte{0xef}, Entries: []wire.ListEntry{{ID: loner}}, Pairs: []wire.ListPair{{Pos: 0, Entry: 0}}}
		c.decoys.note(&rl)
		c.decoys.endEpoch()
		c.closeAllDecoys()
		if c.decoys.size != 5 {
			t.Fatalf("pool of %d pairs after a second epoch, want 5", c.decoys.size)
		}
	})
}

// closeAllDecoys admits every ended epoch's pairs (tests).
func (c *Client) closeAllDecoys() {
	for _, e := range c.decoys.ended {
		e.closed = true
	}
	c.decoys.resize()
}

// closingOfLists is the closing record of epoch ep that shows each of
// lists published (and every other round of R without a list).
func closingOfLists(ep [32]byte, R int, lists ...*wire.RoundList) *wire.Closing {
	rec := &wire.Closing{Epoch: ep, Rounds: make([]wire.ClosingRound, R)}
	for _, rl := range lists {
		rec.Rounds[rl.Round] = wire.ClosingRound{State: wire.ClosedPublished, List: listDigest(rl)}
	}
	return rec
}

// TestDecoysNeedClosing (§6.3 v3): an ended epoch's pairs are drawn only
// once its closing record came, and only those of rounds the record shows
// published with the list the client checked: every client of the epoch
// draws from the same rounds, whatever lists its primary gave it.
func TestDecoysNeedClosing(t *testing.T) {
	virtual(t, func(t *testing.T) {
		c := decoyClient(3)
		ep := [32]byte{0xee, 1}
		var lists []*wire.RoundList
		for r := range 3 {
			rl := &wire.RoundList{Epoch: ep, Round: uint32(r), Entries: []wire.ListEntry{{ID: [32]byte{byte(r + 1)}}}, Pairs: []wire.ListPair{{Pos: 0, Entry: 0}}}
			c.decoys.note(rl)
			lists = append(lists, rl)
		}
		c.decoys.endEpoch()
		for range 200 {
			if got := c.backgroundRequests(nil, 1); len(got) != 0 {
				t.Fatalf("decoy %x drawn from an epoch without a closing record", got[0][:1])
			}
		}
		if c.decoys.closedEpoch(ep) {
			t.Fatal("an epoch without a record counts as closed")
		}
		// The record shows rounds 0 and 2 published; round 1 with another
		// list than the one this client was shown.
		other := *lists[1]
		other.Entries = []wire.ListEntry{{ID: [32]byte{9}}}
		c.decoys.admit(closingOfLists(ep, 4, lists[0], &other, lists[2]))
		if !c.decoys.closedEpoch(ep) || c.decoys.size != 2 {
			t.Fatalf("closed %v, pool of %d pairs, want 2", c.decoys.closedEpoch(ep), c.decoys.size)
		}
		count := map[byte]int{}
		for range 2000 {
			for _, id := range c.backgroundRequests(nil, 1) {
				count[id[0]]++
			}
		}
		if count[1] == 0 || count[3] == 0 || count[2] != 0 || len(count) != 2 {
			t.Fatalf("draws %v, want ids 1 and 3 only", count)
		}
	})
}
