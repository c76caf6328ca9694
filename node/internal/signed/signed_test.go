package signed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
)

// TestMarksNeverBoth (§3 "One certificate per number"): a server that
// signed the timeout of n signs no final descriptor of n, and the other
// way round, after a restart too; a data directory of an older version
// (an epoch number, no marks) takes the most it can have signed.
func TestMarksNeverBoth(t *testing.T) {
	dir := t.TempDir()
	var m Marks
	if err := m.Mark(dir, 5, true); err != nil {
		t.Fatal(err)
	}
	if err := m.Mark(dir, 5, false); err == nil {
		t.Fatal("the timeout of a number whose final descriptor was signed")
	}
	if err := m.Mark(dir, 6, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Mark(dir, 6, true); err == nil {
		t.Fatal("the final descriptor of a number whose timeout was signed")
	}
	var again Marks
	if !again.TimeoutSigned(dir, 6) || again.TimeoutSigned(dir, 7) {
		t.Fatal("after a restart: the timeout of 6 and only up to 6 signed")
	}
	if err := again.Mark(dir, 5, false); err == nil {
		t.Fatal("after a restart: the timeout of 5, whose final descriptor was signed")
	}
	old := t.TempDir()
	if err := certs.SaveNumber(old, 7); err != nil {
		t.Fatal(err)
	}
	var up Marks
	if err := up.Mark(old, 8, true); err == nil {
		t.Fatal("an upgraded directory at 7 signs the final descriptor of 8 (its timeout may be signed)")
	}
	if err := up.Mark(old, 7, false); err == nil {
		t.Fatal("an upgraded directory at 7 signs the timeout of 7 (its final descriptor may be signed)")
	}
	if err := up.Mark(old, 9, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PhaseFile)); err != nil {
		t.Fatal(err)
	}
}

// TestAmnesiaEnds (§3 "Lost records"): a server that lost its records
// signs nothing until, caught up to T, the number T+1 is certified; in a
// group with no certificate, until more than half of the other founders
// say they hold none.
func TestAmnesiaEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a Amnesia
		a.Start(nil)
		if !errors.Is(a.Lost(0), ErrLostRecords) {
			t.Fatal("not lost at start")
		}
		var top atomic.Uint64 // read by the loop's goroutine
		top.Store(4)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Loop(context.Background(), time.Second, top.Load, func(context.Context) bool { return true })
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if !errors.Is(a.Lost(4), ErrLostRecords) {
			t.Fatal("signs again at the number it caught up to")
		}
		top.Store(5)
		<-done
		if a.Lost(5) != nil {
			t.Fatal("still lost once the next number is certified")
		}
	})
	none, some := (&wire.Certs{}).Marshal(), (&wire.Certs{Certs: []wire.Cert{{Kind: wire.CertTimeout, Number: 1, Chain: [][]byte{{1}, {2}}, Sigs: []wire.CertSig{{Index: 0}}}}}).Marshal()
	var check wire.Certs
	if err := check.Unmarshal(some); err != nil || len(check.Certs) != 1 {
		t.Fatalf("a page of one certificate: %v", err)
	}
	for _, tc := range []struct {
		reps [][]byte
		want bool
	}{{[][]byte{none, none, nil}, true}, {[][]byte{none, nil, nil}, false}, {[][]byte{none, none, some}, false}} {
		if got := FoundersHoldNone(tc.reps, 3); got != tc.want {
			t.Errorf("%d replies: %v, want %v", len(tc.reps), got, tc.want)
		}
	}
}
