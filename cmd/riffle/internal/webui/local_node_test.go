package webui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node/client"

	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestLocalSocketNode hands share, get and ls jobs to a running client
// over its local socket (what was node's TestControlSocket).
func TestLocalSocketNode(t *testing.T) {
	if testing.Short() {
		t.Skip("a network in real time")
	}
	t.Parallel() // real sockets in real time: overlap their waits
	params := node.Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: 64, MaxClients: node.MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000, RoundIntervalMs: node.MinRoundIntervalMs}
	tn := nodetest.New(t, nodetest.Config{Servers: 3, Clients: 3, Params: params})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	uctx, stopUI := context.WithCancel(ctx)
	u, err := New(uctx, NodeClient{C: tn.Clients[0]}, Options{DownloadDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Wait()
	defer stopUI()
	sock := filepath.Join(t.TempDir(), SocketFile)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- u.ServeLocal(sctx, sock) }()
	if err := wait.Until(ctx, 30*time.Second, func() bool { return Available(sock) }); err != nil {
		t.Fatalf("local socket never served: %v", err)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", st.Mode().Perm(), err)
	}
	lc := dialLocal(t, sock)
	data := nodetest.RandBytes(t, 20<<10)
	file := filepath.Join(t.TempDir(), "ctl.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A handed-off job's events come back to the caller, not to the
	// running client's own output.
	var lines []string
	var mu sync.Mutex
	sharedAs := ""
	line := func(e client.JobEvent) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, e.Line())
		if e.Phase == client.PhaseShared {
			sharedAs = e.Link
		}
	}
	link, err := lc.Share(ctx, file, true, 0, line)
	if err != nil {
		t.Fatal(err)
	}
	if link.Key == nil {
		t.Fatal("encrypted share returned a link without a key")
	}
	mu.Lock()
	got := sharedAs
	mu.Unlock()
	if got != link.String() {
		t.Fatalf("the shared event names link %q, the share returned %s", got, link)
	}
	path, err := lc.Get(ctx, link, t.TempDir(), 0, 0, line)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(all, "shared ctl.bin:") || !strings.Contains(all, "fetched "+filepath.Base(path)+" in") {
		t.Fatalf("progress through the local socket: %q", all)
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
	plink, err := lc.Share(ctx, pub, false, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Until(ctx, 5*time.Minute, func() bool {
		idx, err := lc.Index(ctx)
		if err != nil {
			t.Fatalf("index: %v", err)
		}
		shown := false
		for _, e := range idx {
			if e.ID == link.ID.String() {
				t.Fatalf("ls shows the private file: %+v", e)
			}
			shown = shown || e.ID == plink.ID.String()
		}
		return shown
	}); err != nil {
		t.Fatalf("the public file never shown: %v", err)
	}
	if _, err := lc.Share(ctx, filepath.Join(t.TempDir(), "missing"), false, 0, nil); err == nil {
		t.Fatal("share of a missing file succeeded")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if Available(sock) {
		t.Fatal("socket still served after stop")
	}
}
