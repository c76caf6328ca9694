package resend

import (
	"bytes"
	"crypto/rand"
	"testing"
	"testing/synctest"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestResendRule: the decision for a chunk of a round that did not
// publish it, once its epoch has ended (§5.2 v3). Without a record signed
// by all m servers it counts as published; with one, a public chunk waits
// 1 + G full epochs (at least one, at most WaitMax) and a private
// file is encrypted again.
func TestResendRule(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, private := range []bool{false, true} {
			act, _, err := Rule(RecordNone, private, rand.Reader)
			if err != nil || act != Never {
				t.Fatalf("no record, private %v: %v %v, want Never", private, act, err)
			}
		}
		act, _, err := Rule(RecordMissing, true, rand.Reader)
		if err != nil || act != Reencrypt {
			t.Fatalf("private with a record: %v %v, want Reencrypt", act, err)
		}
		seen := map[int]bool{}
		for range 400 {
			act, w, err := Rule(RecordMissing, false, rand.Reader)
			if err != nil || act != Later {
				t.Fatalf("public with a record: %v %v, want Later", act, err)
			}
			if w < 1 || w > WaitMax {
				t.Fatalf("wait %d full epochs, want 1..%d", w, WaitMax)
			}
			seen[w] = true
		}
		if !seen[1] || !seen[2] {
			t.Fatalf("waits drawn %v: not random", seen)
		}
		// The draw of a wait: bytes with the low bit set extend it.
		if _, w, _ := Rule(RecordMissing, false, bytes.NewReader([]byte{1, 1, 0})); w != 3 {
			t.Fatalf("wait %d from bytes 1,1,0, want 3", w)
		}
		if _, w, _ := Rule(RecordMissing, false, bytes.NewReader([]byte{1, 1, 1, 1, 1})); w != WaitMax {
			t.Fatalf("wait %d from all ones, want the cap %d", w, WaitMax)
		}
	})
}

// TestCovers: a closing record settles a chunk when it shows the chunk's
// round void or published with the very list that lacked the chunk; the
// record is due CloseWaitMax windows after the epoch's own.
func TestCovers(t *testing.T) {
	list := [32]byte{7}
	rec := &wire.Closing{Rounds: []wire.ClosingRound{
		{State: wire.ClosedPublished, List: list},
		{State: wire.ClosedPublished, List: [32]byte{8}},
		{State: wire.ClosedVoid, List: list},
		{State: wire.ClosedNone, List: list},
	}}
	for r, want := range []bool{true, false, true, false, false} {
		if got := Covers(rec, uint32(r), list); got != want {
			t.Errorf("round %d: covers %v, want %v", r, got, want)
		}
	}
	if Due(5, 5+CloseWaitMax) || !Due(5, 6+CloseWaitMax) {
		t.Error("Due")
	}
}
