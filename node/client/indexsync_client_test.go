//go:build riffletest

package client

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestWindowOldPoolsLogged (§6.4 v3, issue 26): a window epoch whose
// pool an older build signed (wire.PoolV1) names no manifest ids; the
// start's check leaves it out and says so in one log line naming the
// epochs, and checks the others' ids as before.
func TestWindowOldPoolsLogged(t *testing.T) {
	var buf bytes.Buffer
	c := &Client{primary: peer.ID("primary"), log: slog.New(slog.NewTextHandler(&buf, nil))}
	c.icopy.Host = indexHost{c}
	c.icopy.Load()
	held := [32]byte{0xa1}
	c.icopy.Fill(held, []byte("m"))
	c.decoys.set([]*proto.PoolEpoch{
		{Number: 7, Manifests: [][32]byte{held}},
		{Number: 6, IDLess: true},
		{Number: 5, IDLess: true},
	})
	c.checkWindow(context.Background(), nil, true)
	out := buf.String()
	if !strings.Contains(out, "older build") || !strings.Contains(out, "epochs=\"[6 5]\"") {
		t.Fatalf("no line names the id-less epochs: %q", out)
	}
	due, idless := windowDue(c.decoys.epochs)
	if len(due) != 1 || due[0] != held || len(idless) != 2 {
		t.Fatalf("due %x, id-less %v", due, idless)
	}
}
