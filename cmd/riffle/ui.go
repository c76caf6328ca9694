package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// The web UI (cmd/riffle/internal/webui, docs/webui.md). A client with --ui writes the
// UI's URL and token into its data directory, so that `riffle ui` can
// print them instead of starting a second client.
const (
	uiURLFile         = "ui.url"
	uiTokenFile       = "ui.token"
	defaultClientUI   = "127.0.0.1:7777"
	defaultServerUI   = "127.0.0.1:7778"
	uiDownloadsSubdir = "ui-downloads"
)

func init() {
	register(&cli.Command{
		Name:  "ui",
		Usage: "print the URL of the running client's web UI, or start a client with one",
		Description: `If a riffle client runs with this data directory and a web UI, prints the UI's
URL. Otherwise starts a client with its web UI on --ui (loopback by default),
prints the URL and runs until SIGINT or SIGTERM, as "riffle client --ui" does.
Nothing is opened: paste the URL into a browser.`,
		Flags:  append(clientFlags(), uiFlags(defaultClientUI)...),
		Action: runUI,
	})
}

// uiFlags are the web UI flags of a client; def is --ui's value when the
// command serves a UI by default ("" for none).
func uiFlags(def string) []cli.Flag { return []cli.Flag{uiFlag(def), uiPublicFlag(), shareDirFlag()} }

// shareDirFlag allows the UI's share form to take paths under a
// directory; without it the form takes uploads only (a path share from a
// public UI would publish any file the client can read).
func shareDirFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "share-dir", Usage: "let the web UI share files by path under `DIR` (repeatable; default: uploads only; the data directory never)"}
}

func uiFlag(def string) cli.Flag {
	return &cli.StringFlag{Name: "ui", Value: def, Usage: "serve the web UI on this host:port (loopback unless --ui-public)"}
}

func uiPublicFlag() cli.Flag {
	return &cli.BoolFlag{Name: "ui-public", Usage: "allow a non-loopback --ui address (every request then needs the UI's token)"}
}

func runUI(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("ui takes no arguments, got %q", c.Args().First())
	}
	dir, err := clientDataDir(c)
	if err != nil {
		return err
	}
	if webui.Available(filepath.Join(dir, webui.SocketFile)) {
		b, err := os.ReadFile(filepath.Join(dir, uiURLFile))
		if err != nil {
			return fmt.Errorf("a client runs with %s but serves no web UI: stop it and start it with --ui", dir)
		}
		fmt.Fprintln(stdout(c), strings.TrimSpace(string(b)))
		return nil
	}
	return runClient(c)
}

// checkUIFlags refuses a --ui address that is not loopback without
// --ui-public, and a --share-dir that is no directory, before anything
// starts.
func checkUIFlags(c *cli.Context) error {
	for _, d := range c.StringSlice("share-dir") {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("--share-dir %s: not a directory", d)
		}
	}
	if addr := c.String("ui"); addr != "" {
		_, err := webui.CheckAddr(addr, c.Bool("ui-public"))
		return err
	}
	return nil
}

// serveUI listens on addr (refused unless loopback or public) and serves h
// until ctx ends. It returns the bound address.
func serveUI(ctx context.Context, c *cli.Context, addr string, public bool, h func(bound string) (http.Handler, error)) (string, error) {
	warn, err := webui.CheckAddr(addr, public)
	if err != nil {
		return "", err
	}
	if warn != "" {
		fmt.Fprintln(stderr(c), warn)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("web ui: %w", err)
	}
	bound := ln.Addr().String()
	handler, err := h(bound)
	if err != nil {
		ln.Close()
		return "", err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr(c), "riffle: web ui: %v\n", err)
		}
	}()
	return bound, nil
}

// uiURL is the address to paste into a browser: a public UI's carries
// the token (stored in a cookie on the first visit).
func uiURL(bound, token string, public bool) string {
	u := "http://" + bound + "/"
	if public {
		u += "?token=" + token
	}
	return u
}

// startClientUI returns the web UI of cl, fetching into downloads and
// sharing by path only under shareDirs, and serves it on addr unless addr
// is "" (then url is ""). With dataDir set and a UI served, its URL and
// token are written there for `riffle ui` and curl. The UI serves, and
// its jobs run, until ctx ends; ui.Wait returns once every job it started
// has returned, so that the caller closes the client after them.
func startClientUI(ctx context.Context, c *cli.Context, cl *client.Client, addr string, public bool, dataDir, downloads string, shareDirs []string) (ui *webui.UI, url string, err error) {
	opts := webui.Options{Public: public, DownloadDir: downloads, ShareDirs: shareDirs, DataDir: dataDir}
	if addr == "" {
		ui, err := webui.New(ctx, webui.NodeClient{C: cl}, opts)
		return ui, "", err
	}
	bound, err := serveUI(ctx, c, addr, public, func(bound string) (http.Handler, error) {
		var err error
		opts.Addr = bound
		ui, err = webui.New(ctx, webui.NodeClient{C: cl}, opts)
		return ui, err
	})
	if err != nil {
		return nil, "", err
	}
	go ui.Run(ctx)
	url = uiURL(bound, ui.Token(), public)
	if dataDir != "" {
		if err := writeFileAtomic(filepath.Join(dataDir, uiTokenFile), []byte(ui.Token()+"\n"), 0o600); err != nil {
			return nil, "", err
		}
		if err := writeFileAtomic(filepath.Join(dataDir, uiURLFile), []byte(url+"\n"), 0o600); err != nil {
			return nil, "", err
		}
		go func() {
			<-ctx.Done()
			os.Remove(filepath.Join(dataDir, uiURLFile))
			os.Remove(filepath.Join(dataDir, uiTokenFile))
		}()
	}
	return ui, url, nil
}

// startServerUI serves the read-only operator view of s on addr.
func startServerUI(ctx context.Context, c *cli.Context, s *node.Server, addr string, public bool) (string, error) {
	var ui *webui.ServerUI
	bound, err := serveUI(ctx, c, addr, public, func(bound string) (http.Handler, error) {
		var err error
		ui, err = webui.NewServerUI(webui.NodeServer{S: s}, webui.Options{Addr: bound, Public: public})
		return ui, err
	})
	if err != nil {
		return "", err
	}
	go ui.Run(ctx)
	return uiURL(bound, ui.Token(), public), nil
}

// startDemoUI serves the web UI of one demo client and the operator view
// of the first server, on their usual ports or, when those are taken, on
// free ones. It prints both URLs, and returns a wait for the client UI's
// jobs (see startClientUI).
func startDemoUI(ctx context.Context, c *cli.Context, dn *demoNet, base string) (func(), error) {
	try := func(addr string, start func(string) (string, error)) (string, error) {
		url, err := start(addr)
		if err != nil {
			url, err = start("127.0.0.1:0")
		}
		return url, err
	}
	dl := filepath.Join(base, "ui-downloads")
	wait := func() {}
	curl, err := try(defaultClientUI, func(a string) (string, error) {
		ui, url, err := startClientUI(ctx, c, dn.clients[0], a, false, "", dl, nil)
		if err == nil {
			wait = ui.Wait
		}
		return url, err
	})
	if err != nil {
		return nil, err
	}
	surl, err := try(defaultServerUI, func(a string) (string, error) { return startServerUI(ctx, c, dn.servers[0], a, false) })
	if err != nil {
		return wait, err
	}
	fmt.Fprintf(stdout(c), "web UI of client 0: %s (fetched files go to %s)\n", curl, dl)
	fmt.Fprintf(stdout(c), "operator view of server 0: %s\n", surl)
	return wait, nil
}
