//go:build riffletest

package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWipedFounderSignsNothing: three founders ran epochs. One founder
// lost its records (its data directory but its identity key) and
// restarted while a second was down; the third, corrupt, hides its
// certificates and proposes number 1 again over itself and the wiped
// one, more than half of the founders. Before, the wiped founder, with
// no certificate on record, prepared number 1 a second time (a fork of
// the log). Now it signs nothing until the log moves past its window: it
// refuses the Prepare, as long as more than half of the other founders
// have not said they hold no certificate.
func TestWipedFounderSignsNothing(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		fn := startFounded(t, 3, 3, 2, testParams(2), nil)
		fn.waitEpochs(t, 0, 2*time.Minute)
		srv := append([]*Server(nil), fn.servers...)
		sort.Slice(srv, func(i, j int) bool { return bytes.Compare([]byte(srv[i].ID()), []byte(srv[j].ID())) < 0 })
		wiped, down, bad := srv[0], srv[1], srv[2]
		bad.hooks.Store(&serverHooks{hideCerts: func() bool { return true }})
		cfg := wiped.cfg
		_ = down.Close()
		_ = wiped.Close()
		ents, err := os.ReadDir(cfg.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != IdentityFile {
				if err := os.RemoveAll(filepath.Join(cfg.DataDir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg.Peers = []string{bad.Addrs()[0].String()}
		again, err := NewServer(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { again.Close() })
		if err := wait.Until(context.Background(), time.Minute, func() bool { return again.roster.get(bad.ID()) != nil }); err != nil {
			t.Fatal("the corrupt founder never in the wiped one's roster")
		}
		time.Sleep(5 * time.Second) // its catch-up has run and found nothing
		if top := again.cert.Top(); top != 0 {
			t.Fatalf("the wiped founder took certificates up to %d from a founder that hides them", top)
		}
		p := wire.Prepare{Number: 1, Params: bad.cfg.Params.Wire(), Chain: [][]byte{[]byte(again.ID()), []byte(bad.ID())}}
		_, _ = rand.Read(p.Nonce[:])
		if proto.LeaderOf(1, []peer.ID{again.ID(), bad.ID()}) != bad.ID() {
			t.Fatal("the corrupt founder does not lead number 1 over the two")
		}
		_, _, err = again.onPrepare(bad.ID(), p.Marshal())
		if err == nil {
			t.Fatal("the wiped founder prepared number 1 again")
		}
		if !strings.Contains(err.Error(), "lost its records") {
			t.Fatalf("refused, but not for its lost records: %v", err)
		}
		t.Logf("number 1 again refused by the wiped founder: %v", err)
	})
}
