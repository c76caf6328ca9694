package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// Tests of issue 27, "day two": what a user meets after the first share.

// writeConfig writes the config file of env (cleanEnv's XDG directory).
func writeConfig(t *testing.T, env []string, text string) string {
	t.Helper()
	xdg := strings.TrimPrefix(env[len(env)-1], "XDG_CONFIG_HOME=")
	path := filepath.Join(xdg, configDirName, configFileName)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Point 2: every command that takes a flag the config file can set reads
// the file; status, resume and ui once looked at the default data
// directory whatever the file said.
func TestConfigAppliesToEveryCommand(t *testing.T) {
	for _, cmd := range newApp().Commands {
		if takesConfig(cmd) && cmd.Before == nil {
			t.Errorf("riffle %s takes config flags but does not read the config file", cmd.Name)
		}
	}
	for _, name := range []string{"status", "resume", "ui", "share", "get", "ls", "client", "server", "id"} {
		var found bool
		for _, cmd := range newApp().Commands {
			if cmd.Name == name {
				found = takesConfig(cmd)
			}
		}
		if !found {
			t.Errorf("riffle %s does not count as taking the config file", name)
		}
	}

	env := cleanEnv(t)
	data := filepath.Join(t.TempDir(), "configured")
	writeConfig(t, env, "data = "+data+"\n")
	for _, cmd := range []string{"status", "resume"} {
		_, errOut, err := runBin(t, env, cmd)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, "no riffle client runs on data directory "+data) {
			t.Errorf("riffle %s with data in the config: %v, stderr %q; want it to look at %s", cmd, err, errOut, data)
		}
	}
	// ui finds the client that runs on the configured directory (here a
	// listening socket and the URL file such a client writes) instead of
	// starting a second client elsewhere.
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(data, webui.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const url = "http://127.0.0.1:7777/"
	if err := os.WriteFile(filepath.Join(data, uiURLFile), []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runBin(t, env, "ui")
	if err != nil || strings.TrimSpace(out) != url {
		t.Errorf("riffle ui with data in the config: %v, stdout %q, stderr %q; want %s", err, out, errOut, url)
	}
}

// Point 9: a boolean in the config file is written as people write one.
func TestConfigBooleans(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	t.Setenv(configEnv, cfg)
	run := func(text string, args ...string) (bool, error) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		clear(setFromConfig)
		var got bool
		app := &cli.App{Name: "riffle", Writer: &strings.Builder{}, ErrWriter: &strings.Builder{}, Commands: []*cli.Command{{
			Name: "probe", Flags: clientFlags(), Before: applyConfig,
			Action: func(c *cli.Context) error { got = c.Bool("quiet"); return nil },
		}}}
		err := app.Run(append([]string{"riffle", "probe"}, args...))
		return got, err
	}
	for val, want := range map[string]bool{"yes": true, "Yes": true, "on": true, "true": true, "1": true, "no": false, "OFF": false, "false": false, "0": false} {
		got, err := run("quiet = " + val + "\n")
		if err != nil || got != want {
			t.Errorf("quiet = %s: %v, %v; want %v", val, got, err, want)
		}
	}
	if _, err := run("# c\nquiet = maybe\n"); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "yes/no") {
		t.Errorf("quiet = maybe: %v; want an error naming line 2 and the words accepted", err)
	}
	// The command line still wins.
	if got, err := run("quiet = yes\n", "--quiet=false"); err != nil || got {
		t.Errorf("--quiet=false over quiet = yes: %v, %v", got, err)
	}
}

// withoutEnv returns env less the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// Point 3: a command handed to a running client takes that client's
// settings and says so; only a flag the user set that the client does not
// honour refuses the job, and the refusal names the flag.
func TestHandoverTakesClientSettings(t *testing.T) {
	tn := startNet(t, 1, 2)
	data := t.TempDir()
	tn.startClientDaemon(t, 0, data, "--min-anonymity", "3", "--accept-budget-drops")
	file, _ := writeRandom(t, "f.bin", 100)
	// No $RIFFLE_MIN_ANONYMITY: the command's own default (8) is more than
	// the client's 3, and the client's setting is taken.
	env := withoutEnv(tn.env, "RIFFLE_MIN_ANONYMITY")
	handed := func(env []string, args ...string) {
		t.Helper()
		p := start(t, env, args...)
		waitFor(t, 20*time.Second, "riffle "+args[0]+" to hand its job over or fail", func() bool {
			return strings.Contains(p.errb.String(), "handing the job") || p.wait(0) >= 0
		})
		e := p.errb.String()
		if !strings.Contains(e, "under its settings: server ") || !strings.Contains(e, "min-anonymity 3") || !strings.Contains(e, "accept-budget-drops") {
			t.Errorf("riffle %q: stderr %q; want the job handed over under the client's settings, said", args, e)
		}
	}
	handed(env, "share", "--data", data, file)
	handed(env, "ls", "--data", data)
	// The config file gives defaults, not an explicit wish.
	writeConfig(t, env, "min-anonymity = 8\naccept-budget-drops = no\n")
	handed(env, "share", "--data", data, file)
	// Stricter than the client asked for explicitly: refused, naming the
	// flag (or the variable).
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{env, []string{"share", "--data", data, "--min-anonymity", "8", file}, "--min-anonymity 8:"},
		{append(env, "RIFFLE_MIN_ANONYMITY=9"), []string{"share", "--data", data, file}, "$RIFFLE_MIN_ANONYMITY 9:"},
		{env, []string{"ls", "--data", data, "--accept-budget-drops=false"}, "--accept-budget-drops=false:"},
	} {
		_, errOut, err := runBin(t, tc.env, tc.args...)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "refusing") {
			t.Errorf("riffle %q: %v, stderr %q; want a refusal naming %q", tc.args, err, errOut, tc.want)
		}
	}
	// A weaker wish than the client's is no conflict.
	handed(env, "ls", "--data", data, "--min-anonymity", "2")
}

// Point 5: a one-character typo in a link is refused at once, and says to
// check the link.
func TestLinkTypoRefused(t *testing.T) {
	env := cleanEnv(t)
	link := chunker.Link{ID: chunker.Sum([]byte("typo"))}.String()
	i := len(link) / 2
	c := byte('a')
	if link[i] == c {
		c = 'b'
	}
	typo := link[:i] + string(c) + link[i+1:]
	t0 := time.Now()
	_, errOut, err := runBin(t, env, "get", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY",
		"--data", t.TempDir(), "-o", t.TempDir(), typo)
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "checksum does not match") || !strings.Contains(errOut, "check the link") || time.Since(t0) > 10*time.Second {
		t.Fatalf("get of a mistyped link: %v after %v, stderr %q; want a refusal at once that says to check the link", err, time.Since(t0), errOut)
	}
	// resume takes a link with its checksums, or its id alone.
	for _, arg := range []string{link, strings.TrimPrefix(link, chunker.LinkScheme), chunker.Sum([]byte("typo")).String()} {
		_, errOut, err := runBin(t, env, "resume", "--data", t.TempDir(), arg)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, "nothing to resume") {
			t.Errorf("resume %s: %v, stderr %q; want the id taken (and no client found)", arg, err, errOut)
		}
	}
	// A link cut short says so too.
	_, errOut, err = runBin(t, env, "get", "--data", t.TempDir(), "-o", t.TempDir(), link[:len(link)-1])
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "check the link") {
		t.Fatalf("get of a link cut short: %v, stderr %q", err, errOut)
	}
}

// Point 5: a get of an id that the index lacks gives up after a bound of
// epochs, with a hint, instead of waiting forever; handed to a running
// client too.
func TestGetUnlistedGivesUp(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs")
	}
	tn := startNet(t, 1, 2)
	// Two running clients: epochs open whatever the gets do.
	cover := t.TempDir()
	tn.startClientDaemon(t, 0, cover)
	tn.startClientDaemon(t, 0, t.TempDir())
	link := chunker.Link{ID: chunker.Sum([]byte("nobody shared this"))}.String()
	for _, args := range [][]string{
		{"get", "--server", tn.addrs[0], "--data", t.TempDir(), "-o", t.TempDir(), "--timeout", "90s", link},
		{"get", "--data", cover, "-o", t.TempDir(), "--unlisted-epochs", "1", "--timeout", "90s", link},
	} {
		t0 := time.Now()
		_, errOut, err := runBin(t, tn.env, args...)
		el := time.Since(t0)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, "is not in the index synced at the start of") ||
			!strings.Contains(errOut, "check the link") || strings.Contains(errOut, "timed out") {
			t.Fatalf("riffle %q: %v after %v, stderr:\n%s\nwant it to give up before --timeout and say to check the link", args, err, el, errOut)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		t.Logf("riffle %s gave up after %v: %s", strings.Join(args[1:4], " "), el.Round(100*time.Millisecond), lines[len(lines)-1])
	}
}

// jsonKeys returns every object key in the JSON encoding of v, at any
// depth.
func jsonKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				keys = append(keys, k)
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(x)
	sort.Strings(keys)
	return keys
}

// Point 9: `status --json` has the snake_case keys of the web UI's JSON
// API, to the last one.
func TestStatusJSONKeys(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	client := client.ClientStatus{Require: []string{"x"}, Epoch: "e", Chain: []node.ChainServer{{ID: "a"}}, DataDir: "d",
		AcceptBudgetDrops: true, Waiting: "w", Stats: client.Stats{Epochs: 1}, Paused: []client.PausedJob{{ID: "p"}}}
	server := node.ServerStatus{Roster: []node.RosterMember{{ID: "r"}}, Epoch: "e", Chain: []node.ChainServer{{ID: "a"}}}
	for _, v := range []any{client, server} {
		for _, k := range jsonKeys(t, v) {
			if !snake.MatchString(k) {
				t.Errorf("%T: JSON key %q is not snake_case", v, k)
			}
		}
	}
}

// Point 9: `ls --json` has the keys of a file in the web UI's JSON API
// (published, not time), and `get --json` always says "already".
func TestListAndGetJSON(t *testing.T) {
	ls, api := jsonKeys(t, lsEntry{}), jsonKeys(t, webui.FileView{})
	if !slices.Equal(ls, api) {
		t.Errorf("ls --json keys %q, the API's %q", ls, api)
	}
	b, _ := json.Marshal(getResult{Link: "riffle:x", Path: "p"})
	if !strings.Contains(string(b), `"already":false`) {
		t.Errorf("get --json of a fresh fetch: %s; want \"already\":false", b)
	}
}

// Point 9: `-o out/` names a directory, made when missing; a file in a
// missing directory says how to ask for one.
func TestGetOutputNewDirectory(t *testing.T) {
	base := t.TempDir()
	for _, out := range []string{filepath.Join(base, "out") + "/", filepath.Join(base, "a", "b") + "/"} {
		d, err := checkDestination(out, 2)
		if st, serr := os.Stat(out); err != nil || !d.isDir || !d.created || serr != nil || !st.IsDir() {
			t.Errorf("-o %s: %+v, %v; want the directory made", out, d, err)
		}
	}
	if _, err := checkDestination(filepath.Join(base, "missing", "f.txt"), 1); err == nil || !strings.Contains(err.Error(), "end -o with /") {
		t.Errorf("-o into a missing directory: %v; want a hint to end -o with /", err)
	}
	if _, err := checkDestination(filepath.Join(base, "nodir"), 2); err == nil || !strings.Contains(err.Error(), "to have it created") {
		t.Errorf("-o missing with two links: %v", err)
	}
	// A get that fails takes back the directory it made.
	env := cleanEnv(t)
	out := filepath.Join(base, "taken-back") + "/"
	link := chunker.Link{ID: chunker.Sum([]byte("d"))}.String()
	_, errOut, err := runBin(t, env, "get", "--data", t.TempDir(), "-o", out, link)
	if _, serr := os.Stat(out); exitCodeOf(err) != 1 || !strings.Contains(errOut, "no server") || serr == nil {
		t.Errorf("get -o %s without a server: %v, %q, stat %v; want it past the destination check and the directory gone", out, err, errOut, serr)
	}
}

// Point 9: `riffle server` (and `riffle id`) refuse a client's data
// directory instead of writing into it.
func TestServerRefusesClientData(t *testing.T) {
	env := cleanEnv(t)
	for _, name := range []string{node.LongTermKeyFile, client.ClientDBFile} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"server", "--data", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--no-mdns"},
			{"id", "--data", dir},
		} {
			_, errOut, err := runBinFor(t, 20*time.Second, env, args...)
			if exitCodeOf(err) != 1 || !strings.Contains(errOut, "client's data directory") || !strings.Contains(errOut, name) {
				t.Errorf("riffle %s on a client's directory (%s): %v, stderr %q; want a refusal", args[0], name, err, errOut)
			}
			if _, err := os.Stat(filepath.Join(dir, node.IdentityFile)); err == nil {
				t.Errorf("riffle %s wrote an identity into a client's directory", args[0])
			}
		}
	}
}

// lsNames runs `riffle ls --json` with args and returns the names listed
// and stderr.
func lsNames(t *testing.T, env []string, args ...string) ([]string, string) {
	t.Helper()
	out, errOut, err := runBin(t, env, append([]string{"ls", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("riffle ls %q: %v\n%s", args, err, errOut)
	}
	var rows []lsEntry
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names, errOut
}

// Point 1: a data directory is bound to the network its state came from.
// Used on another network it shows none of the first one's index, a get
// of the first one's link gives up as for any unlisted id, and the first
// network's state comes back when the directory is used there again.
func TestDataDirBoundToNetwork(t *testing.T) {
	t.Parallel() // real processes in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs two networks")
	}
	a, b := startNet(t, 1, 2), startNet(t, 1, 2)
	a.startClientDaemon(t, 0, t.TempDir())
	b.startClientDaemon(t, 0, t.TempDir())
	fa, _ := writeRandom(t, "only-on-a.bin", 5000)
	fb, _ := writeRandom(t, "only-on-b.bin", 3000)
	share := func(tn *testNet, file string) string {
		t.Helper()
		out, errOut, err := runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", t.TempDir(), "--quiet", file)
		if err != nil {
			t.Fatalf("share %s: %v\n%s", file, err, errOut)
		}
		return strings.TrimSpace(out)
	}
	linkA := share(a, fa)
	share(b, fb)
	data := t.TempDir()
	if names, _ := lsNames(t, a.env, "--server", a.addrs[0], "--data", data); !slices.Contains(names, "only-on-a.bin") {
		t.Fatalf("ls on network A: %q", names)
	}
	names, errOut := lsNames(t, b.env, "--server", b.addrs[0], "--data", data)
	if slices.Contains(names, "only-on-a.bin") || !slices.Contains(names, "only-on-b.bin") {
		t.Errorf("ls on network B with A's data directory: %q; want B's files only", names)
	}
	if !strings.Contains(errOut, "held the state of another network") || !strings.Contains(errOut, filepath.Join(data, client.NetworksDir)) {
		t.Errorf("moving to network B said: %q; want one line saying where A's state is kept", errOut)
	}
	t0 := time.Now()
	_, errOut, err := runBin(t, b.env, "get", "--server", b.addrs[0], "--data", data, "-o", t.TempDir(), "--unlisted-epochs", "1", "--timeout", "80s", linkA)
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "check the link") || strings.Contains(errOut, "timed out") {
		t.Errorf("get of A's link on network B: %v after %v, stderr:\n%s\nwant it to give up and say to check the link", err, time.Since(t0), errOut)
	}
	names, errOut = lsNames(t, a.env, "--server", a.addrs[0], "--data", data)
	if !slices.Contains(names, "only-on-a.bin") || slices.Contains(names, "only-on-b.bin") {
		t.Errorf("ls back on network A: %q; want A's files only", names)
	}
	if !strings.Contains(errOut, "the state kept for this network is back") {
		t.Errorf("back on network A: %q; want A's state brought back", errOut)
	}
	kept, _ := os.ReadDir(filepath.Join(data, client.NetworksDir))
	if len(kept) != 1 {
		t.Errorf("%s holds %d networks' state; want B's alone", client.NetworksDir, len(kept))
	}
}

// makeFolder writes a folder with nested files, an empty file, an empty
// subfolder and a link out of it; it returns the folder and its files
// (path → bytes; a path ending in / is an empty folder).
func makeFolder(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "album")
	files := map[string][]byte{"cover.txt": []byte("a cover\n"), "empty.txt": {}, "disc 1/track.bin": nil,
		"disc 1/notes/deep.txt": []byte("deep"), "disc 2/": nil}
	_, files["disc 1/track.bin"] = writeRandom(t, "x", 9000)
	for p, b := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret, _ := writeRandom(t, "secret.txt", 100)
	if err := os.Symlink(secret, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	return root, files
}

// checkFolder compares the folder at dir with files.
func checkFolder(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for p, want := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if st, err := os.Stat(full); err != nil || !st.IsDir() {
				t.Errorf("%s: want an empty folder: %v", full, err)
			}
			continue
		}
		if got, err := os.ReadFile(full); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want %d", full, len(got), err, len(want))
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "link-out")); err == nil {
		t.Errorf("the link was shared")
	}
}

// Point 7: a folder is shared as one link, beside a file in the same
// share, and `get` restores it as a tree, byte for byte; links and special
// files are skipped and named.
func TestShareFolder(t *testing.T) {
	t.Parallel() // real processes in real time: overlap their waits
	tn := startNet(t, 1, 2)
	tn.startClientDaemon(t, 0, t.TempDir())
	root, files := makeFolder(t)
	single, singleBytes := writeRandom(t, "single.bin", 3000)
	out, errOut, err := runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", t.TempDir(), "--quiet", single, root)
	if err != nil {
		t.Fatalf("share of a file and a folder: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "skipping link-out (a symbolic link") {
		t.Errorf("share of a folder with a link: stderr %q; want the link named as skipped", errOut)
	}
	links := strings.Fields(out)
	if len(links) != 2 {
		t.Fatalf("share printed %q; want two links", out)
	}
	dest := filepath.Join(t.TempDir(), "out") + "/"
	data := t.TempDir()
	out, errOut, err = runBin(t, tn.env, "get", "--server", tn.addrs[0], "--data", data, "-o", dest, "--unlisted-epochs", "0", "--timeout", "80s", links[0], links[1])
	if err != nil {
		t.Fatalf("get of a file and a folder: %v\n%s", err, errOut)
	}
	paths := strings.Fields(out)
	if len(paths) != 2 || paths[1] != filepath.Join(dest, "album") {
		t.Fatalf("get printed %q; want the file and %s", out, filepath.Join(dest, "album"))
	}
	if b, err := os.ReadFile(paths[0]); err != nil || !slices.Equal(b, singleBytes) {
		t.Errorf("the file: %v, bytes differ", err)
	}
	checkFolder(t, paths[1], files)
	// Run again: the folder is there, with the same contents.
	_, errOut, err = runBin(t, tn.env, "get", "--server", tn.addrs[0], "--data", data, "-o", dest, links[1])
	if err != nil || !strings.Contains(errOut, "already holds this file") {
		t.Errorf("get of the folder again: %v, %q; want it found in place", err, errOut)
	}
	// A folder changed since is not "already there", and not overwritten.
	os.WriteFile(filepath.Join(paths[1], "cover.txt"), []byte("changed"), 0o644)
	_, errOut, err = runBin(t, tn.env, "get", "--server", tn.addrs[0], "--data", data, "-o", dest, "--unlisted-epochs", "0", "--timeout", "80s", links[1])
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("get of the folder over a changed copy: %v, %q; want a refusal", err, errOut)
	}
}

// chunksDone is the largest d of the "d/t chunks" progress lines in s.
func chunksDone(s string) (done, total int) {
	for _, m := range regexp.MustCompile(`(\d+)/(\d+) chunks`).FindAllStringSubmatch(s, -1) {
		var d, n int
		fmt.Sscan(m[1], &d)
		fmt.Sscan(m[2], &n)
		if d > done {
			done, total = d, n
		}
	}
	return done, total
}

// killedShare starts a share of file on data, waits until it reports some
// chunks published, and kills it (SIGKILL: no clean-up of any kind).
func killedShare(t *testing.T, tn *testNet, data, file string) int {
	t.Helper()
	p := start(t, tn.env, "share", "--server", tn.addrs[0], "--data", data, file)
	var done int
	waitFor(t, 60*time.Second, "the share to report progress", func() bool {
		done, _ = chunksDone(p.errb.String())
		return done > 0 || p.wait(0) >= 0
	})
	if p.wait(0) >= 0 {
		t.Fatalf("the share ended before it could be killed: %s", p.errb.String())
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	return done
}

// Point 6: a share killed partway resumes when run again: it sends only
// what did not go out, says so, and the link fetches byte for byte, or
// lacks at most the chunks the share reported in doubt.
func TestShareResumesAfterKill(t *testing.T) {
	t.Parallel() // real processes in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs")
	}
	tn := startNet(t, 1, 2)
	tn.startClientDaemon(t, 0, t.TempDir())
	file, want := writeRandom(t, "big.bin", 40*4096+100)
	data := t.TempDir()
	before := killedShare(t, tn, data, file)
	out, errOut, err := runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", data, file)
	if err != nil {
		t.Fatalf("share run again: %v\n%s", err, errOut)
	}
	m := regexp.MustCompile(`resuming: (\d+) of (\d+) chunks went out in an earlier run`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("share run again says nothing of a resume:\n%s", errOut)
	}
	var sent, total int
	fmt.Sscan(m[1], &sent)
	fmt.Sscan(m[2], &total)
	if sent < before || sent >= total || !strings.Contains(errOut, fmt.Sprintf("%d of them in an earlier run", sent)) {
		t.Errorf("resumed with %d of %d chunks gone out (the killed run reported %d published):\n%s", sent, total, before, errOut)
	}
	if first, _ := chunksDone(errOut); first != 0 && first < sent {
		t.Errorf("progress of the resumed share went back to %d", first)
	}
	t.Logf("killed after %d chunks published; resumed with %d of %d gone out", before, sent, total)
	link := strings.TrimSpace(out)
	// A kill between a round's onion stored (its chunk marked sent) and
	// its sending loses that chunk: it is not sent again, and the share
	// says how many are in doubt (node's TestResumeAfterLostOnion kills
	// at that moment). The get then lacks at most those.
	doubt := 0
	if m := regexp.MustCompile(`(\d+) chunk\(s\) went out just before the earlier run stopped`).FindStringSubmatch(errOut); m != nil {
		fmt.Sscan(m[1], &doubt)
		if !strings.Contains(errOut, "never seen published: the link may not fetch the whole file") {
			t.Errorf("the resumed share warned of %d chunks in doubt, but its last line does not say so:\n%s", doubt, errOut)
		}
	}
	got, getErr, err := runBin(t, tn.env, "get", "--server", tn.addrs[0], "--data", t.TempDir(), "-o", filepath.Join(t.TempDir(), "copy.bin"), "--unlisted-epochs", "0", "--timeout", "80s", link)
	if err != nil {
		done, all := chunksDone(getErr)
		if doubt == 0 || all == 0 || all-done > doubt {
			t.Fatalf("get of the resumed share (%d chunks in doubt): %v\n%s", doubt, err, getErr)
		}
		t.Logf("the get lacks %d of %d chunks, of the %d the share reported in doubt", all-done, all, doubt)
		return
	}
	if b, err := os.ReadFile(strings.TrimSpace(got)); err != nil || !slices.Equal(b, want) {
		t.Fatalf("the resumed share fetched back differs (%v)", err)
	}
}

// The "second day" walk of issue 27, as a user meets it: a set-up from
// the config file alone, a folder shared, a private share killed and run
// again, a mistyped link, the data directory moved to another network and
// back.
func TestSecondDayWalk(t *testing.T) {
	t.Parallel() // real processes in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs two networks (about a minute)")
	}
	t0 := time.Now()
	a, b := startNet(t, 1, 2), startNet(t, 1, 2)
	a.startClientDaemon(t, 0, t.TempDir())
	b.startClientDaemon(t, 0, t.TempDir())
	env := a.env
	data := t.TempDir()
	writeConfig(t, env, "# the second day\nserver = "+a.addrs[0]+"\ndata = "+data+"\nquiet = yes\n")
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := runBin(t, env, args...)
		if err != nil {
			t.Fatalf("riffle %q: %v\n%s", args, err, errOut)
		}
		return strings.TrimSpace(out), errOut
	}
	// A folder, from the config alone.
	root, files := makeFolder(t)
	folderLink, _ := run("share", root)
	// A private share killed partway, run again: it resumes.
	file, want := writeRandom(t, "private.bin", 30*4096)
	p := start(t, env, "share", "--encrypt", "--quiet=false", file)
	waitFor(t, 60*time.Second, "the private share to report progress", func() bool {
		d, _ := chunksDone(p.errb.String())
		return d > 0 || p.wait(0) >= 0
	})
	if p.wait(0) >= 0 {
		t.Fatalf("the private share ended before it could be killed:\n%s", p.errb.String())
	}
	p.cmd.Process.Kill()
	p.wait(10 * time.Second)
	privLink, errOut := run("share", "--encrypt", "--quiet=false", file)
	if !strings.Contains(errOut, "resuming: ") || !strings.Contains(privLink, "#") {
		t.Errorf("the private share run again: link %q, stderr:\n%s\nwant it resumed", privLink, errOut)
	}
	// A typo in a link is refused at once.
	typo := []byte(folderLink)
	typo[20] ^= 1
	if _, errOut, err := runBin(t, env, "get", "-o", t.TempDir(), string(typo)); exitCodeOf(err) != 1 || !strings.Contains(errOut, "check the link") {
		t.Errorf("get of a mistyped link: %v, %q", err, errOut)
	}
	// Both links fetched byte for byte.
	dest := filepath.Join(t.TempDir(), "got") + "/"
	out, _ := run("get", "-o", dest, "--unlisted-epochs", "0", "--timeout", "80s", folderLink, privLink)
	paths := strings.Fields(out)
	if len(paths) != 2 {
		t.Fatalf("get printed %q", out)
	}
	checkFolder(t, paths[0], files)
	if got, err := os.ReadFile(paths[1]); err != nil || !slices.Equal(got, want) {
		t.Errorf("the resumed private file differs (%v)", err)
	}
	// The data directory on network B: A's index is not shown, and comes
	// back on A.
	names, errOut := lsNames(t, env, "--server", b.addrs[0])
	if slices.Contains(names, "album.rtree") || !strings.Contains(errOut, "held the state of another network") {
		t.Errorf("ls on network B: %q, %q; want A's state moved aside and said", names, errOut)
	}
	names, errOut = lsNames(t, env)
	if !slices.Contains(names, "album.rtree") || !strings.Contains(errOut, "is back from") {
		t.Errorf("ls back on network A: %q, %q", names, errOut)
	}
	t.Logf("second-day walk: %v", time.Since(t0).Round(time.Second))
}
