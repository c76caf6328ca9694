package node_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/nodetest"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
)

// TestControlSocket hands share, get and ls jobs to a running client.
func TestControlSocket(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	node.Long(t)
	tn := nodetest.New(t, nodetest.Config{Servers: 3, Clients: 3, Params: node.TestParams(64)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sock := filepath.Join(t.TempDir(), node.ControlSocket)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tn.Clients[0].ServeControl(sctx, sock) }()
	if err := wait.Until(ctx, time.Minute, func() bool { return node.ControlAvailable(sock) }); err != nil {
		t.Fatal("control socket never served")
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", st.Mode().Perm(), err)
	}
	if err := tn.Clients[1].ServeControl(ctx, sock); err == nil {
		t.Fatal("a second client took over a live control socket")
	}
	data := nodetest.RandBytes(t, 20<<10)
	file := filepath.Join(t.TempDir(), "ctl.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A handed-off job's progress comes back to the caller, not to the
	// daemon's own output.
	var lines []string
	var mu sync.Mutex
	pctx := node.WithProgress(ctx, func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() })
	link, err := node.ControlShare(pctx, sock, file, true)
	if err != nil {
		t.Fatal(err)
	}
	if link.Key == nil {
		t.Fatal("encrypted share returned a link without a key")
	}
	path, err := node.ControlGet(pctx, sock, link, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(all, "shared ctl.bin:") || !strings.Contains(all, "fetched "+filepath.Base(path)+" in") {
		t.Fatalf("progress through the control socket: %q", all)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ: %v", err)
	}
	// ls reads the synced copy: a public file shows once the next
	// epoch's sync has it; the private one never does (its manifest is
	// sealed, §6.4).
	pub := filepath.Join(t.TempDir(), "public.bin")
	if err := os.WriteFile(pub, data[:3<<10], 0o600); err != nil {
		t.Fatal(err)
	}
	plink, err := node.ControlShare(ctx, sock, pub, false)
	if err != nil {
		t.Fatal(err)
	}
	for shown := false; !shown; {
		idx, err := node.ControlIndex(ctx, sock)
		if err != nil {
			t.Fatalf("index: %v", err)
		}
		for _, e := range idx {
			if e.FileID == link.ID {
				t.Fatalf("ls shows the private file: %+v", e)
			}
			shown = shown || e.FileID == plink.ID
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := node.ControlShare(ctx, sock, filepath.Join(t.TempDir(), "missing"), false); err == nil {
		t.Fatal("share of a missing file succeeded")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if node.ControlAvailable(sock) {
		t.Fatal("socket still served after stop")
	}
}
