package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestUIFlagsRefusePublic: a non-loopback --ui needs --ui-public, and the
// command fails before it starts anything.
func TestUIFlagsRefusePublic(t *testing.T) {
	env := cleanEnv(t)
	for _, args := range [][]string{
		{"client", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN", "--ui", "0.0.0.0:7777"},
		{"ui", "--data", t.TempDir(), "--ui", "192.0.2.1:7777"},
		{"server", "--data", t.TempDir(), "--ui", "0.0.0.0:7778"},
	} {
		_, errOut, err := runBin(t, env, args...)
		if err == nil || !strings.Contains(errOut, "not loopback") || !strings.Contains(errOut, "--ui-public") {
			t.Errorf("riffle %s: %v, stderr %q", strings.Join(args, " "), err, errOut)
		}
	}
	// A --share-dir that is no directory is refused before the client
	// starts.
	_, errOut, err := runBin(t, env, "ui", "--data", t.TempDir(), "--share-dir", filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(errOut, "--share-dir") {
		t.Errorf("riffle ui --share-dir MISSING: %v, stderr %q", err, errOut)
	}
	if _, errOut, err := runBin(t, env, "demo", "--ui"); err == nil || !strings.Contains(errOut, "--keep") {
		t.Errorf("demo --ui without --keep: %v %q", err, errOut)
	}
}

// TestUIServe runs a server with its operator view and a client with its
// UI as processes: both answer on loopback, the server view refuses every
// POST, the client UI refuses a POST without its token, and `riffle ui`
// prints the running client's URL instead of starting another.
func TestUIServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server and a client")
	}
	e := &cliEnv{bin: riffleBin, env: cleanEnv(t)}
	sdir := t.TempDir()
	serr := e.startDaemon(t, "server", "--data", sdir, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns", "--nick", "<op>", "--ui", "127.0.0.1:0")
	addr := waitAddrs(t, sdir)[0]
	re := regexp.MustCompile(`web ui (http://127\.0\.0\.1:\d+/)`)
	var surl string
	_ = wait.UntilEvery(context.Background(), 20*time.Second, 100*time.Millisecond, func() bool { // an empty surl fails below
		if m := re.FindStringSubmatch(serr()); m != nil {
			surl = m[1]
		}
		return surl != ""
	})
	if surl == "" {
		t.Fatalf("server printed no UI URL:\n%s", serr())
	}
	body := httpGet(t, surl, 200)
	if !strings.Contains(body, "&lt;op&gt;") || !strings.Contains(body, "Epochs") {
		t.Errorf("server page: %.300q", body)
	}
	if resp, err := http.PostForm(surl, url.Values{}); err != nil || resp.StatusCode != 405 {
		t.Errorf("POST to the server view: %v %v", resp.StatusCode, err)
	}

	cdir := t.TempDir()
	e.startDaemon(t, "client", "--server", addr, "--data", cdir, "--ui", "127.0.0.1:0")
	var curl string
	_ = wait.UntilEvery(context.Background(), 20*time.Second, 100*time.Millisecond, func() bool { // an empty curl fails below
		if b, err := os.ReadFile(filepath.Join(cdir, uiURLFile)); err == nil {
			curl = strings.TrimSpace(string(b))
		}
		return curl != ""
	})
	if curl == "" {
		t.Fatal("client wrote no UI URL")
	}
	for _, p := range []string{"", "get", "share", "network", "api/status", "api/index"} {
		httpGet(t, curl+p, 200)
	}
	if get := httpGet(t, curl+"get", 200); !strings.Contains(get, filepath.Join(cdir, uiDownloadsSubdir)) {
		t.Errorf("the get page does not name %s", filepath.Join(cdir, uiDownloadsSubdir))
	}
	out := e.run(t, t.Context(), "ui", "--data", cdir)
	if strings.TrimSpace(out) != curl {
		t.Errorf("riffle ui printed %q, want %q", out, curl)
	}
	// State changes need the token: without it nothing starts.
	resp, err := http.PostForm(curl+"api/get", url.Values{"link": {"riffle:x"}})
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("POST without token: %v %v", resp.StatusCode, err)
	}
	tok, err := os.ReadFile(filepath.Join(cdir, uiTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(cdir, uiTokenFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", st.Mode())
	}
	req, _ := http.NewRequest("POST", curl+"api/get", strings.NewReader("link=riffle:bad"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Riffle-Token", strings.TrimSpace(string(tok)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("POST of a bad link with the token: %v %v", resp.StatusCode, err)
	}
	// Without --share-dir no path is shared: not the UI's own token file
	// (issue 27 point 8), which a public UI would otherwise publish.
	req, _ = http.NewRequest("POST", curl+"api/share", strings.NewReader(url.Values{"path": {filepath.Join(cdir, uiTokenFile)}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Riffle-Token", strings.TrimSpace(string(tok)))
	// Bounded: a share that is taken waits to be queued, without an epoch
	// for ever.
	resp, err = (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("share of the token file by path: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "--share-dir") {
		t.Fatalf("share of the token file by path: %d %s", resp.StatusCode, b)
	}
	if jobs := httpGet(t, curl+"api/jobs", 200); !strings.Contains(jobs, `"jobs": []`) {
		t.Errorf("refused requests started jobs: %s", jobs)
	}
}

func httpGet(t *testing.T, u string, code int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %d, want %d: %s", u, resp.StatusCode, code, b)
	}
	return string(b)
}
