package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// TestControlSocket hands share, get and ls jobs to a running client.
func TestControlSocket(t *testing.T) {
	tn := startNet(t, 3, 3, testParams(64))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sock := filepath.Join(t.TempDir(), ControlSocket)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tn.clients[0].ServeControl(sctx, sock) }()
	for !ControlAvailable(sock) {
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", st.Mode().Perm(), err)
	}
	if err := tn.clients[1].ServeControl(ctx, sock); err == nil {
		t.Fatal("a second client took over a live control socket")
	}
	data := randBytes(t, 20<<10)
	file := filepath.Join(t.TempDir(), "ctl.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A handed-off job's progress comes back to the caller, not to the
	// daemon's own output.
	var lines []string
	var mu sync.Mutex
	pctx := WithProgress(ctx, func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() })
	link, err := ControlShare(pctx, sock, file, true)
	if err != nil {
		t.Fatal(err)
	}
	if link.Key == nil {
		t.Fatal("encrypted share returned a link without a key")
	}
	path, err := ControlGet(pctx, sock, link, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(all, "shared ctl.bin:") || !strings.Contains(all, "fetched "+path) {
		t.Fatalf("progress through the control socket: %q", all)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched bytes differ: %v", err)
	}
	// ls reads the synced copy: the file shows once the next epoch's
	// sync has it.
	for {
		idx, err := ControlIndex(ctx, sock)
		if err != nil {
			t.Fatalf("index: %v", err)
		}
		if len(idx) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := ControlShare(ctx, sock, filepath.Join(t.TempDir(), "missing"), false); err == nil {
		t.Fatal("share of a missing file succeeded")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ControlAvailable(sock) {
		t.Fatal("socket still served after stop")
	}
}

// FuzzControl: the control requests decode without panics, and an accepted
// request re-encodes to the same bytes.
func FuzzControl(f *testing.F) {
	f.Add(uint8(0), encCtlShare("/tmp/a file", true))
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("x"))}, "/tmp/out"))
	key := chunker.FileKey{1}
	f.Add(uint8(1), encCtlGet(chunker.Link{ID: chunker.Sum([]byte("y")), Key: &key}, "/d"))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		if which%2 == 0 {
			path, enc, err := parseCtlShare(b)
			if err == nil && !bytes.Equal(encCtlShare(path, enc), b) {
				t.Fatal("share request decode→encode differs")
			}
			return
		}
		link, dir, err := parseCtlGet(b)
		if err == nil && !bytes.Equal(encCtlGet(link, dir), b) {
			t.Fatal("get request decode→encode differs")
		}
	})
}
