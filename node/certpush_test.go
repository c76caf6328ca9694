//go:build riffletest

package node

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestForgedPushCostsNothing (issue 25): a roster server's CertPush of a
// forged certificate, of a number ahead or of one whose certificate here
// outranks it, is refused before it pokes the sync or starts a push-back;
// a signed one does either, and at most one push-back of a number to a
// peer, certs.MaxPushBacks to a peer, is in flight, the table empty after.
func TestForgedPushCostsNothing(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		s := loneServer(t)
		defer s.Close()
		keys := newCertKeys(t, 3)
		chain := make([][]byte, len(keys))
		for i, k := range keys {
			s.roster.saw(k.id, "k", nil)
			chain[i] = []byte(k.id)
		}
		const top = 20
		for n := uint64(1); n <= top; n++ {
			s.cert.Keep(finalCertBy(t, keys, keys, n))
		}
		var pokes, backs atomic.Int32
		release := make(chan struct{})
		s.hooks.Store(&serverHooks{
			syncPoked: func() { pokes.Add(1) },
			pushBack:  func(peer.ID, uint64) { backs.Add(1); <-release },
		})
		from := keys[0].id
		push := func(c *wire.Cert) error {
			_, _, err := s.cert.OnCertPush(from, c.Marshal())
			return err
		}
		// Signed by every server but the number's leader (VerifyCertIn).
		timeout := func(n uint64, forged bool) *wire.Cert {
			c := &wire.Cert{Kind: wire.CertTimeout, Number: n, Chain: chain}
			for i, k := range keys {
				if i == int(n%uint64(len(keys))) {
					continue
				}
				sig := [64]byte{1}
				if !forged {
					sig = certSign(t, k, proto.TimeoutDigest(n, chain))
				}
				c.Sigs = append(c.Sigs, wire.CertSig{Index: uint16(i), Sig: sig})
			}
			return c
		}
		forgedAhead := finalCertBy(t, keys, keys, top+5)
		forgedAhead.Sigs[1].Sig = [64]byte{1}
		refused := 0
		for range 100 {
			if push(forgedAhead) != nil {
				refused++
			}
			if push(timeout(top, true)) != nil {
				refused++
			}
		}
		synctest.Wait()
		if refused != 200 {
			t.Errorf("%d of 200 forged pushes refused", refused)
		}
		if n, b := pokes.Load(), backs.Load(); n != 0 || b != 0 {
			t.Errorf("100 forged pushes of each kind poked the sync %d times and started %d push-backs, want none", n, b)
		}
		if err := push(finalCertBy(t, keys, keys, top+5)); err != nil {
			t.Fatal(err)
		}
		if n := pokes.Load(); n != 1 {
			t.Errorf("a signed certificate ahead poked the sync %d times, want 1", n)
		}
		// Signed ones outranked here: numbers 2..top, each pushed five
		// times while the push-backs hang.
		for range 5 {
			for n := uint64(2); n <= top; n++ {
				if err := push(timeout(n, false)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := wait.Until(context.Background(), time.Second, func() bool { return backs.Load() >= certs.MaxPushBacks }); err != nil {
			t.Fatalf("%d push-backs started for 19 signed outranked numbers, want %d", backs.Load(), certs.MaxPushBacks)
		}
		if b := backs.Load(); b != certs.MaxPushBacks {
			t.Errorf("%d push-backs started for 5 pushes each of 19 signed outranked numbers, want %d", b, certs.MaxPushBacks)
		}
		close(release)
		if err := wait.Until(context.Background(), time.Minute, func() bool {
			return s.cert.PushBacks() == 0
		}); err != nil {
			t.Fatal("push-backs still held in the table after they ended")
		}
		if err := push(timeout(top, false)); err != nil {
			t.Fatal(err)
		}
		if err := wait.Until(context.Background(), time.Second, func() bool { return backs.Load() == certs.MaxPushBacks+1 }); err != nil {
			t.Errorf("no push-back once the others ended (%d in all)", backs.Load())
		}
	})
}
