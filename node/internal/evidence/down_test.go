package evidence

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestDownAttest (§3, a server down): this server attests a chain server
// down only once it is not live here, one signature a position; another
// server's ask is answered only once its own probe failed or it holds an
// abort saying so; once the epoch ended, an outage that began after the
// end is not attested (TestLateOutageNotAttested end to end).
func TestDownAttest(t *testing.T) {
	f := newFixture(t, 4, true)
	ep, p := f.h.ep, f.ks[2].id
	if a := f.svc.DownAttest(ep, 2); a != nil {
		t.Fatal("a live server attested down")
	}
	if f.svc.DownAttest(ep, 0) != nil || f.svc.DownAttest(ep, 9) != nil {
		t.Fatal("this server, or a position outside the chain, attested down")
	}
	delete(f.h.roster, p)
	if a := f.svc.AskedDown(ep, 2); a != nil {
		t.Fatal("asked, attested down before this server's own probe failed")
	}
	ep.Down.Probed(2)
	a := f.svc.AskedDown(ep, 2)
	if a == nil || a.Kind != wire.AbortDown || a.Round != 2 || a.Lacking != 1<<2 {
		t.Fatalf("after the probe failed: %+v", a)
	}
	if f.svc.DownAttest(ep, 2) != a || f.h.signs != 1 || ep.Down.Attested(2) != a {
		t.Fatalf("attested again: %d signatures", f.h.signs)
	}
	// Ended with server 3 live at the end, and then gone: not attested,
	// nor with a hello after the end.
	f.h.end, f.h.liveAtEnd = time.Now(), 1<<3
	delete(f.h.roster, f.ks[3].id)
	if f.svc.DownAttest(ep, 3) != nil {
		t.Fatal("an outage after the end was attested (live at the end)")
	}
	f.h.liveAtEnd = 0
	f.h.seen = map[peer.ID]time.Time{f.ks[3].id: f.h.end.Add(time.Second)}
	if f.svc.DownAttest(ep, 3) != nil {
		t.Fatal("an outage after the end was attested (a hello since)")
	}
	f.h.seen[f.ks[3].id] = f.h.end.Add(-time.Second)
	if f.svc.DownAttest(ep, 3) == nil {
		t.Fatal("an outage that began before the end was not attested")
	}
}

// TestDownAbortsBounded: the down aborts kept a position are bounded, a
// repeat kept once, a position outside the chain none.
func TestDownAbortsBounded(t *testing.T) {
	f := newFixture(t, 3, true)
	d := f.h.ep.Down
	for i := range 2 * maxDownAborts {
		a := f.abort(t, 1, wire.AbortDown, 2)
		a.Reason = []byte{byte(i)}
		d.noteAbort(a, 3)
		d.noteAbort(a, 3)
	}
	if n := len(d.aborts[2]); n != maxDownAborts {
		t.Fatalf("%d down aborts kept for one position, want %d", n, maxDownAborts)
	}
	if d.noteAbort(f.abort(t, 1, wire.AbortDown, 3), 3) || len(d.aborts[3]) != 0 {
		t.Fatal("a down abort of a position outside the chain was kept")
	}
}

// TestBacked: an abort is backed against position j when more than half
// of the other m − 1 servers attest j lacking; j's own does not count.
func TestBacked(t *testing.T) {
	att := func(signers ...uint16) *wire.Charge {
		ev := &wire.Charge{Kind: wire.EvAbort}
		for _, s := range signers {
			ev.Attests = append(ev.Attests, wire.Attest{AttestReq: wire.AttestReq{Kind: wire.AbortDown, Round: 1}, Lacking: 1 << 1, Signer: s})
		}
		return ev
	}
	for _, c := range []struct {
		signers []uint16
		m       int
		want    bool
	}{
		{[]uint16{0}, 3, false},
		{[]uint16{0, 2}, 3, true},
		{[]uint16{0, 1}, 3, false},
		{[]uint16{0, 2}, 5, false},
		{[]uint16{0, 2, 3}, 5, true},
	} {
		if got := Backed(att(c.signers...), c.m, 1); got != c.want {
			t.Errorf("signers %v of %d: backed %v, want %v", c.signers, c.m, got, c.want)
		}
	}
}
