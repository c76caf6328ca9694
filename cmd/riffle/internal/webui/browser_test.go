package webui

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// findChromium returns the path of a Chromium (or Chrome) binary, "" if
// none is installed.
func findChromium() string {
	if p := os.Getenv("RIFFLE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserParams keep the browser test short: 16 KiB chunks and epochs of
// 16 rounds, so that a file shared in one epoch is in the index the
// clients sync at the start of the next.
func browserParams() node.Params {
	return node.Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: 16, MaxClients: node.MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000, RoundIntervalMs: node.MinRoundIntervalMs}
}

// serveTest serves h on a free loopback port and returns its base URL.
func serveTest(t *testing.T, mk func(addr string) http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mk(ln.Addr().String()), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestBrowser drives the UI with headless Chromium against a real network
// on 127.0.0.1 (3 servers, 4 clients): the index and its search, a share
// uploaded from the browser, a fetch by pasted link, and compares bytes
// both ways. Screenshots of every page go to the test's temp dir (and to
// $RIFFLE_UI_SCREENSHOTS, which is how docs/ui/ is made).
func TestBrowser(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("SKIPPING THE BROWSER TEST: no Chromium found (install the Debian package chromium, or set RIFFLE_CHROMIUM)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()

	// The network: 3 servers and 4 clients; the UI's client counts its
	// index requests: the UI never sends one of its own, however often its
	// pages are loaded.
	const nServers, nClients = 3, 4
	var indexReqs atomic.Int64
	tn := nodetest.New(t, nodetest.Config{Servers: nServers, Clients: nClients, Params: browserParams(), Nick: "<s",
		Client: func(i int, c *client.ClientConfig) {
			if i == 1 {
				c.OnSend = func(t uint8, _ int) {
					if wire.Type(t) == wire.TypeIndexReq {
						indexReqs.Add(1)
					}
				}
			}
		}})
	servers, clients := tn.Servers, tn.Clients
	other, mine := clients[0], clients[1] // the UI is client 1's

	// Client 0 shares a file the browser will find and fetch.
	theirs := randomBytes(t, 40<<10)
	theirLink, err := other.Share(ctx, bytes.NewReader(theirs), "report & notes (q1).pdf", false)
	if err != nil {
		t.Fatal(err)
	}

	dl := t.TempDir()
	if os.Getenv("RIFFLE_UI_SCREENSHOTS") != "" {
		// The committed screenshots show a path of no machine.
		dl = filepath.Join(os.TempDir(), "riffle-ui-downloads")
		os.RemoveAll(dl)
		t.Cleanup(func() { os.RemoveAll(dl) })
	}
	base := serveTest(t, func(addr string) http.Handler {
		u, err := New(ctx, NodeClient{C: mine}, Options{Addr: addr, DownloadDir: dl})
		if err != nil {
			t.Fatal(err)
		}
		go u.Run(ctx)
		return u
	})
	sbase := serveTest(t, func(addr string) http.Handler {
		u, err := NewServerUI(NodeServer{S: servers[0]}, Options{Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		go u.Run(ctx)
		return u
	})

	// The browser.
	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1100, 760))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first run starts the browser, for as long as bctx lives.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	shots := t.TempDir()
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
				return err
			}
			if dir := os.Getenv("RIFFLE_UI_SCREENSHOTS"); dir != "" {
				return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
			}
			return nil
		})
	}
	// do runs steps with a bound of its own; on failure it tells where
	// the browser was and what it showed.
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, 20*time.Second)
		defer scancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			dctx, dcancel := context.WithTimeout(bctx, 5*time.Second)
			defer dcancel()
			loc, _ := chromedp.Run(dctx, chromedp.Location())
			body, _ := chromedp.Run(dctx, chromedp.Text(css("body")))
			t.Fatalf("browser: %s: %v (at %s: %.500q)", what, err, loc, body)
		}
	}
	str := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(bctx, a)
		if err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
		return v
	}
	// until reloads url and reads sel's text until it contains want.
	until := func(url, sel, want string) string {
		t.Helper()
		var text string
		if err := wait.UntilEvery(ctx, 150*time.Second, 300*time.Millisecond, func() bool {
			do("load "+url, chromedp.Navigate(url))
			text = str("read "+sel, chromedp.Text(css(sel)))
			if strings.Contains(text, "failed") {
				t.Fatalf("%s: %s", url, text)
			}
			return strings.Contains(text, want)
		}); err != nil {
			t.Fatalf("%s: %q never showed %q (last %q)", url, sel, want, text)
		}
		return text
	}

	t.Logf("network up")
	// Index: the file appears once client 1 synced an index that has it
	// (at the start of an epoch); then a search finds it.
	until(base+"/", "#files tbody", "report & notes (q1).pdf")
	do("index", shot("index"),
		chromedp.SetValue(css("#q"), "REPORT"),
		chromedp.Click(css("#search")))
	// The click starts a navigation: the old page's #files is still there
	// until the search's page has loaded, so wait for its URL first.
	loc := ""
	_ = wait.UntilEvery(context.Background(), 30*time.Second, 200*time.Millisecond, func() bool { // loc is checked below
		// Reading the location while the page navigates may fail with
		// "Inspected target navigated or closed": that is the navigation
		// under way, so read again.
		l, err := chromedp.Run(bctx, chromedp.Location())
		if err != nil {
			return false
		}
		loc = l
		return strings.Contains(loc, "q=REPORT")
	})
	if !strings.Contains(loc, "q=REPORT") {
		t.Fatalf("search went to %s", loc)
	}
	do("search", chromedp.WaitVisible(css("#files")))
	if rows := str("search", chromedp.Text(css("#files tbody"))); !strings.Contains(rows, "report & notes (q1).pdf") {
		t.Fatalf("search: %q", rows)
	}
	do("file page", chromedp.Click(css("#files tbody td.name a")), chromedp.WaitVisible(css("#chunks")))
	fileURL := str("file url", chromedp.Location())
	if row := str("chunks", chromedp.Text(css("#chunks tbody tr"))); !strings.Contains(row, "manifest") || !strings.Contains(row, "not fetched here") {
		t.Errorf("before the get, the manifest row says %q", row)
	}
	if html := str("file page", chromedp.OuterHTML(css("main"))); !strings.Contains(html, theirLink.ID.String()) {
		t.Fatalf("file page lacks the file id")
	}

	t.Logf("index and search done")
	// Share from the browser.
	mineData := randomBytes(t, 40<<10+123)
	upload := filepath.Join(t.TempDir(), "from the browser.bin")
	if err := os.WriteFile(upload, mineData, 0o600); err != nil {
		t.Fatal(err)
	}
	do("share form", chromedp.Navigate(base+"/share"), shot("share"),
		chromedp.SetUploadFiles(css("#file"), []string{upload}),
		chromedp.Click(css("#share")),
		chromedp.WaitVisible(css("#state")))
	jobURL := str("job url", chromedp.Location())
	until(jobURL, "#state", "done")
	myLink := str("link", chromedp.Value(css("#link")))
	do("copy", chromedp.Click(css("#copy")), shot("share-done"))
	if copied := str("copy", chromedp.Text(css("#copy"))); copied != "copied" {
		t.Errorf("copy button says %q", copied)
	}
	link, err := chunker.ParseLink(myLink)
	if err != nil {
		t.Fatalf("shared link %q: %v", myLink, err)
	}
	// Another client fetches what the browser shared.
	gotPath, err := other.Get(ctx, link, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(gotPath); !bytes.Equal(got, mineData) || filepath.Base(gotPath) != "from the browser.bin" {
		t.Fatalf("the file shared from the browser came back as %s, %d bytes, equal %v", gotPath, len(got), bytes.Equal(got, mineData))
	}

	// Fetch the other client's file by pasting its link.
	do("get form", chromedp.Navigate(base+"/get"),
		chromedp.SetValue(css("#link"), theirLink.String()), shot("get"),
		chromedp.Click(css("#fetch")),
		chromedp.WaitVisible(css("#state")))
	jobURL = str("job url", chromedp.Location())
	until(jobURL, "#state", "done")
	do("fetched", chromedp.WaitVisible(css("#download")), shot("get-done"))
	path := str("path", chromedp.Text(css("#path")))
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, theirs) {
		t.Fatalf("fetched file %s: %v, equal %v", path, err, bytes.Equal(got, theirs))
	}
	// Now the file's page shows its manifest held here.
	do("file page after the get", chromedp.Navigate(fileURL), chromedp.WaitVisible(css("#chunks")), shot("file"))
	if row := str("chunks", chromedp.Text(css("#chunks tbody tr"))); strings.Contains(row, "not fetched") || !strings.Contains(row, "held") {
		t.Errorf("after the get, the manifest row says %q", row)
	}
	resp, err := http.Get(jobURL + "/file")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, theirs) {
		t.Fatalf("download: %d bytes, equal %v", len(body), bytes.Equal(body, theirs))
	}

	// Network and server pages.
	netText := until(base+"/network", "main", "anonymity set")
	for _, want := range []string{"4 clients", "<s0", "primary"} {
		if !strings.Contains(netText, want) {
			t.Errorf("network page lacks %q", want)
		}
	}
	do("network", shot("network"))
	srv := until(sbase+"/", "main", "Epochs")
	for _, want := range []string{"<s0", "<s1", "<s2", "running"} {
		if !strings.Contains(srv, want) {
			t.Errorf("server page lacks %q", want)
		}
	}
	do("server", shot("server"))
	// Two index requests per epoch joined, its start's and its end
	// check's (§6.4; 16 rounds hold no checkpoint), and one epoch's two
	// more for the epoch under way: none for the dozens of page loads
	// above.
	if n, epochs := indexReqs.Load(), mine.Stats().Epochs; n > int64(2*epochs+2) {
		t.Errorf("the UI's client sent %d index requests in %d epochs", n, epochs)
	}
	t.Logf("screenshots in %s", shots)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return b
}
