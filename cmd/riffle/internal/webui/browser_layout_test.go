package webui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/riffle-net/riffle/internal/wait"
)

// TestBrowserPhone drives the UI over a fake client in headless Chromium
// at 390 px wide, a phone (issue 27 point 9): no page, the index table
// included, overflows sideways; a bad link gives an HTML page with the
// reason and a way back to the form, the link kept; the network page
// updates in place from the JSON API, without reloading.
func TestBrowserPhone(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("SKIPPING THE BROWSER TEST: no Chromium found (install the Debian package chromium, or set RIFFLE_CHROMIUM)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	f := newFake()
	f.files = append(f.files, File{ID: fileID("long"), Name: strings.Repeat("a-very-long-file-name-", 8) + ".tar.gz", Size: 60 << 20, Chunks: 240, Published: t0})
	var u *UI
	base := serveTest(t, func(addr string) http.Handler {
		var err error
		u, err = New(ctx, f, Options{Addr: addr, DownloadDir: t.TempDir(), ShareDirs: []string{t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		go u.Run(ctx)
		return u
	})
	t.Cleanup(u.Wait)
	sbase := serveTest(t, func(addr string) http.Handler {
		s, err := NewServerUI(&fakeServer{st: ServerStatus{PeerID: "12D3KooWSelf", Nick: "me", Chain: []string{"12D3KooWOther", "12D3KooWSelf"},
			Epochs: []EpochInfo{{ID: "0a0b0c0d", Number: 3, Clients: 16, Rounds: 64, ChunkSize: 256 << 10, Listed: 12, Void: []uint32{4}}}}}, Options{Addr: addr})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	// A finished get, for the job page.
	resp, err := http.PostForm(base+"/api/get", url.Values{"csrf": {u.Token()}, "link": {File{ID: fileID("a")}.Link()}})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("get: %v %v", resp, err)
	}
	resp.Body.Close()
	jobs := u.jobs.list("get")
	if len(jobs) != 1 {
		t.Fatalf("%d get jobs", len(jobs))
	}

	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(390, 844))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The first run starts the browser, for as long as bctx lives.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, 20*time.Second)
		defer scancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	do("viewport", chromedp.EmulateViewport(390, 844))
	for _, p := range []string{base + "/", base + "/?q=very", base + "/file/" + fileID("long").String(), base + "/get", base + "/share",
		base + "/network", base + "/jobs/" + jobs[0].ID, base + "/no/such/page", sbase + "/"} {
		do("load "+p, chromedp.Navigate(p), chromedp.WaitReady(chromedp.CSS("main")))
		w, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if w > 390 {
			t.Errorf("%s is %d px wide at 390 px", p, w)
		}
	}

	// A typo in a link: an HTML page with the reason, and back to the
	// form with the link kept.
	const typo = "riffle:kx3typo"
	do("bad link", chromedp.Navigate(base+"/get"), chromedp.SetValue(chromedp.CSS("#link"), typo), chromedp.Click(chromedp.CSS("#fetch")),
		chromedp.WaitVisible(chromedp.CSS("#reason")))
	if reason, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#reason"))); !strings.Contains(reason, "bad link") {
		t.Errorf("error page says %q", reason)
	}
	do("back", chromedp.Click(chromedp.CSS("#back")), chromedp.WaitVisible(chromedp.CSS("#fetch")))
	if v, _ := chromedp.Run(bctx, chromedp.Value(chromedp.CSS("#link"))); v != typo {
		t.Errorf("back on the form, the link is %q", v)
	}

	// The network page updates in place: a mark set in the page survives
	// the update.
	do("network", chromedp.Navigate(base+"/network"), chromedp.WaitVisible(chromedp.CSS("#epoch")))
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[int](`window.riffleMark = 1`)); err != nil {
		t.Fatal(err)
	}
	f.epochs.Add(1)
	text := ""
	_ = wait.UntilEvery(context.Background(), 15*time.Second, 200*time.Millisecond, func() bool { // text is checked below
		text, _ = chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`[data-text="epoch"]`)))
		return strings.Contains(text, "#8")
	})
	if !strings.Contains(text, "#8") {
		t.Errorf("the network page still shows %q", text)
	}
	if mark, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.riffleMark === 1`)); err != nil || !mark {
		t.Errorf("the network page reloaded (mark %v, %v)", mark, err)
	}

	// A get waiting for an epoch says what it waits for on its page, not
	// "0/0 chunks" alone (issue 27 point 4), within 390 px.
	f.mu.Lock()
	f.block = make(chan struct{})
	f.waiting = "waiting for the next epoch: epoch 9 is running at the primary (round 3 of 64, about 40s left); this client joins the one after it"
	f.mu.Unlock()
	resp, err = http.PostForm(base+"/api/get", url.Values{"csrf": {u.Token()}, "link": {File{ID: fileID("b")}.Link()}})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("waiting get: %v %v", resp, err)
	}
	resp.Body.Close()
	defer close(f.block)
	var waiting string
	for _, j := range u.jobs.list("get") {
		if j.ID != jobs[0].ID {
			waiting = j.ID
		}
	}
	do("waiting job", chromedp.Navigate(base+"/jobs/"+waiting), chromedp.WaitVisible(chromedp.CSS("#waiting")))
	if text, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#waiting"))); !strings.Contains(text, "about 40s left") {
		t.Errorf("the waiting job's page says %q", text)
	}
	if w, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || w > 390 {
		t.Errorf("the waiting job's page is %d px wide at 390 px (%v)", w, err)
	}
}
