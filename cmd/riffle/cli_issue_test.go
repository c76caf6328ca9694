package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// These tests exec the binary of TestMain as a user would, against real
// servers on 127.0.0.1 (no mDNS), one per problem of the operator's day.

// proc is a running riffle process.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	errb *syncBuffer
	done chan struct{}
	err  error
}

// start execs riffle with args; the process gets SIGINT (then SIGKILL) at
// cleanup.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(riffleBin, args...), out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for p to exit and returns its exit code (-1: still running
// after d).
func (p *proc) wait(d time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		return -1
	}
}

// waitFor polls cond every 50 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait.UntilEvery(context.Background(), d, 50*time.Millisecond, cond); err != nil {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// testNet is a chain of servers on 127.0.0.1.
type testNet struct {
	env   []string
	addrs []string // one full multiaddr per server
	dirs  []string
	logs  []*proc
}

// startNet starts n servers that need minClients clients an epoch, with
// small, fast epochs.
func startNet(t *testing.T, n, minClients int) *testNet {
	t.Helper()
	tn := &testNet{env: cleanEnv(t)}
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		args := []string{"server", "--data", dir, "--listen", "/ip4/127.0.0.1/tcp/0", "--nick", fmt.Sprintf("s%d", i),
			"--min-servers", fmt.Sprint(n), "--min-clients", fmt.Sprint(minClients), "--no-mdns",
			"--chunk-size", "4096", "--rounds", "12", "--reg-window", "300ms", "--round-limit", "3s", "--round-interval", "10ms"}
		if n < 3 {
			args = append(args, "--insecure-small-group")
		}
		for _, a := range tn.addrs {
			args = append(args, "--peer", a)
		}
		tn.logs = append(tn.logs, start(t, tn.env, args...))
		tn.addrs = append(tn.addrs, waitAddrs(t, dir)[0])
		tn.dirs = append(tn.dirs, dir)
	}
	return tn
}

// startClientDaemon starts `riffle client` on data through server i and
// waits for its local socket.
func (tn *testNet) startClientDaemon(t *testing.T, i int, data string, extra ...string) *proc {
	t.Helper()
	p := start(t, tn.env, append([]string{"client", "--server", tn.addrs[i], "--data", data}, extra...)...)
	waitFor(t, 20*time.Second, "the client's local socket", func() bool {
		return webui.Available(filepath.Join(data, webui.SocketFile))
	})
	return p
}

// otherPeer returns a peer id that no server of the test runs under.
func otherPeer(t *testing.T, env []string) string {
	t.Helper()
	out, _, err := runBin(t, env, "id", "--data", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)[0]
}

// writeRandom writes a file of n random bytes and returns its path.
func writeRandom(t *testing.T, name string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Problem 1: a job handed to a running client runs under the flags the
// user gave, or is refused with the reason.
func TestHandoverHonoursFlags(t *testing.T) {
	tn := startNet(t, 1, 2)
	data := t.TempDir()
	tn.startClientDaemon(t, 0, data)
	stranger := otherPeer(t, tn.env)
	file, _ := writeRandom(t, "f.bin", 100)
	strangerAddr := "/ip4/127.0.0.1/tcp/1/p2p/" + stranger
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"share", "--data", data, "--require-server", stranger, file}, "does not require server " + stranger},
		{[]string{"share", "--data", data, "--server", strangerAddr, file}, "joins through server"},
		{[]string{"ls", "--data", data, "--server", strangerAddr}, "joins through server"},
		{[]string{"get", "--data", data, "--server", strangerAddr, "-o", t.TempDir(), "riffle:ty4uvsii5v7k4m3kp7a5ys373bmpez3hzhvjj5242iqyqbffsdzq"}, "joins through server"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, riffleBin, tc.args...)
		cmd.Env = tn.env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		cancel()
		if exitCodeOf(err) != 1 || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "refusing") {
			t.Errorf("riffle %s: %v, stderr %q; want exit 1 and a refusal naming %q", tc.args[0], err, errb.String(), tc.want)
		}
	}
	// With the flags the running client has, the job is handed over.
	out, errOut, err := runBin(t, tn.env, "status", "--data", data, "--json")
	if err != nil || !strings.Contains(out, `"primary"`) {
		t.Fatalf("status of the running client: %v %q %q", err, out, errOut)
	}
}

// Problem 5: a second `riffle client` on a data directory in use is
// refused.
func TestSecondClientRefused(t *testing.T) {
	tn := startNet(t, 1, 2)
	data := t.TempDir()
	tn.startClientDaemon(t, 0, data)
	_, errOut, err := runBin(t, tn.env, "client", "--server", tn.addrs[0], "--data", data)
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "already runs on data directory") {
		t.Fatalf("second client: %v, stderr %q", err, errOut)
	}
}

// Problem 4: a second server on a port in use is refused.
func TestServerPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	env := cleanEnv(t)
	listen := fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)
	dir := t.TempDir()
	start(t, env, "server", "--data", dir, "--listen", listen, "--no-mdns")
	waitAddrs(t, dir)
	p := start(t, env, "server", "--data", t.TempDir(), "--listen", listen, "--no-mdns")
	if code := p.wait(20 * time.Second); code != 1 || !strings.Contains(p.errb.String(), "address in use") {
		t.Fatalf("second server on %s: exit %d, stderr %q; want exit 1, \"address in use\"", listen, code, p.errb.String())
	}
}

// Problem 2: Ctrl-C on a share handed to a running client cancels it: the
// command exits 130 and says the file is not published, and it is not,
// though the client then runs epochs.
func TestHandoffShareInterrupt(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs and timeouts")
	}
	tn := startNet(t, 1, 2)
	data := t.TempDir()
	tn.startClientDaemon(t, 0, data)
	file, _ := writeRandom(t, "cancelled.bin", 3000)
	// One client: no epoch opens, the share waits.
	p := start(t, tn.env, "share", "--data", data, file)
	waitFor(t, 20*time.Second, "the share to be handed over", func() bool {
		return strings.Contains(p.errb.String(), "handing the job")
	})
	time.Sleep(500 * time.Millisecond)
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(20 * time.Second); code != exitInterrupted {
		t.Fatalf("interrupted share: exit %d, want %d; stderr:\n%s", code, exitInterrupted, p.errb.String())
	}
	t.Logf("interrupted share said:\n%s", p.errb.String())
	if e := p.errb.String(); !strings.Contains(e, "interrupted") || !strings.Contains(e, "not published") || strings.Contains(e, "closed network connection") {
		t.Fatalf("interrupted share said:\n%s", e)
	}
	// A second client lets epochs run. A share interrupted while its
	// chunks go out is withdrawn: what is still queued, its manifest
	// last, is not sent.
	tn.startClientDaemon(t, 0, t.TempDir())
	big, _ := writeRandom(t, "halfway.bin", 400<<10)
	p = start(t, tn.env, "share", "--data", data, big)
	sent := regexp.MustCompile(`share halfway.bin: [1-9][0-9]*/[0-9]+ chunks`)
	if err := wait.UntilEvery(context.Background(), 60*time.Second, 50*time.Millisecond, func() bool { return sent.MatchString(p.errb.String()) || p.wait(0) >= 0 }); err != nil || !sent.MatchString(p.errb.String()) {
		t.Fatalf("the share sent no chunks within 60 s:\n%s", p.errb.String())
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(20 * time.Second); code != exitInterrupted || !strings.Contains(p.errb.String(), "share withdrawn") || !strings.Contains(p.errb.String(), "not published") {
		t.Fatalf("share interrupted halfway: exit %d; stderr:\n%s", code, p.errb.String())
	}
	// A share after the interrupted ones gets its link, so the queue has
	// moved past where they were.
	file2, _ := writeRandom(t, "after.bin", 100)
	link, errOut, err := runBin(t, tn.env, "share", "--data", data, file2)
	if err != nil {
		t.Fatalf("share after the interrupt: %v\n%s", err, errOut)
	}
	// ls through the running client reads its synced index, which has
	// the share from the next epoch's sync on.
	var out string
	waitFor(t, 60*time.Second, "after.bin in the synced index", func() bool {
		o, errOut, err := runBin(t, tn.env, "ls", "--data", data)
		if err != nil {
			t.Fatalf("ls: %v\n%s", err, errOut)
		}
		out = o
		return strings.Contains(o, "after.bin")
	})
	if !strings.Contains(out, "after.bin") || strings.Contains(out, "cancelled.bin") || strings.Contains(out, "halfway.bin") {
		t.Fatalf("after a cancelled share and %s, ls lists:\n%s", strings.TrimSpace(link), out)
	}
}

// Problem 3: get checks its destination before fetching, never leaves
// state that blocks a retry, and a get run again after it finished says so
// and succeeds.
func TestGetDestination(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	tn := startNet(t, 1, 2)
	tn.startClientDaemon(t, 0, t.TempDir())
	file, want := writeRandom(t, "f.bin", 9000)
	out, errOut, err := runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", t.TempDir(), "--json", file)
	if err != nil {
		t.Fatalf("share: %v\n%s", err, errOut)
	}
	var shared shareResult
	if err := json.Unmarshal([]byte(out), &shared); err != nil || shared.File != file || !strings.HasPrefix(shared.Link, "riffle:") {
		t.Fatalf("share --json printed %q (%v)", out, err)
	}
	link := shared.Link
	get := func(data string, args ...string) (string, string, error) {
		return runBin(t, tn.env, append([]string{"get", "--server", tn.addrs[0], "--data", data}, args...)...)
	}
	// Bad destinations fail at once, naming the destination.
	notDir, _ := writeRandom(t, "plain", 1)
	existing, _ := writeRandom(t, "existing.bin", 5)
	for _, o := range []string{filepath.Join(t.TempDir(), "missing", "x.bin"), filepath.Join(notDir, "x.bin"), existing} {
		t0 := time.Now()
		_, errOut, err := get(t.TempDir(), "-o", o, link)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, o) && !strings.Contains(errOut, filepath.Dir(o)) || time.Since(t0) > 5*time.Second {
			t.Errorf("get -o %s: %v after %v, stderr %q; want a quick refusal naming it", o, err, time.Since(t0), errOut)
		}
	}
	if b, _ := os.ReadFile(existing); len(b) != 5 {
		t.Fatal("get wrote over an existing file")
	}
	// A finished get, run again, says so and succeeds without fetching.
	data := t.TempDir()
	dst := filepath.Join(t.TempDir(), "copy.bin")
	if _, errOut, err := get(data, "-o", dst, link); err != nil {
		t.Fatalf("get: %v\n%s", err, errOut)
	}
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("get wrote %v: bytes differ", err)
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	if st, _ := os.Stat(dst); st.Mode().Perm() != 0o666&^os.FileMode(umask) {
		t.Errorf("fetched file mode %o, want %o (0666 less the umask)", st.Mode().Perm(), 0o666&^umask)
	}
	t0 := time.Now()
	out, errOut, err = get(data, "-o", dst, link)
	if err != nil || strings.TrimSpace(out) != dst || !strings.Contains(errOut, "already holds this file") || time.Since(t0) > 5*time.Second {
		t.Fatalf("get again: %v, stdout %q, stderr %q", err, out, errOut)
	}
	out, _, err = get(data, "-o", dst, "--json", "--quiet", link)
	var got getResult
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Path != dst || !got.Already || got.Link != link {
		t.Fatalf("get --json again: %v, %q", err, out)
	}
	// A get into a directory that holds another file of the same name
	// fails, keeps what it fetched, and the retry elsewhere needs no fetch.
	data2, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.bin"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := get(data2, "-o", dir, link); exitCodeOf(err) != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("get onto an existing name: %v, stderr %q", err, errOut)
	}
	dir2 := t.TempDir()
	t0 = time.Now()
	out, errOut, err = runBin(t, tn.env, "get", "--server", "/ip4/127.0.0.1/tcp/1/p2p/"+otherPeer(t, tn.env), "--data", data2, "-o", dir2, link)
	if err != nil || time.Since(t0) > 10*time.Second {
		t.Fatalf("retry into another directory: %v after %v\n%s", err, time.Since(t0), errOut)
	}
	if b, err := os.ReadFile(strings.TrimSpace(out)); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("retry wrote %q (%v): bytes differ", out, err)
	}
}

// Problem 6: a share that cannot start says what it waits for and what
// to do, and --timeout ends it with the reason.
func TestShareSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs and timeouts")
	}
	tn := startNet(t, 1, 2)
	file, _ := writeRandom(t, "alone.bin", 100)
	t0 := time.Now()
	_, errOut, err := runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", t.TempDir(), "--timeout", "7s", file)
	if exitCodeOf(err) != 1 || time.Since(t0) > 30*time.Second {
		t.Fatalf("lonely share: %v after %v\n%s", err, time.Since(t0), errOut)
	}
	for _, want := range []string{"at least 2 clients", "timed out after 7s", "not published"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("lonely share's stderr lacks %q:\n%s", want, errOut)
		}
	}
	// A required server that is absent is named while waiting.
	stranger := otherPeer(t, tn.env)
	tn.startClientDaemon(t, 0, t.TempDir())
	_, errOut, err = runBin(t, tn.env, "share", "--server", tn.addrs[0], "--data", t.TempDir(), "--require-server", stranger, "--timeout", "7s", file)
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "required server "+stranger+" not in the chain") {
		t.Fatalf("share requiring an absent server: %v\n%s", err, errOut)
	}
}

// Problem 7: a get of a well-formed link to nothing says that the file is
// not in the synced index, and --timeout ends it.
func TestGetOfNothing(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs and timeouts")
	}
	tn := startNet(t, 1, 2)
	tn.startClientDaemon(t, 0, t.TempDir())
	const link = "riffle:ty4uvsii5v7k4m3kp7a5ys373bmpez3hzhvjj5242iqyqbffsdzq"
	_, errOut, err := runBin(t, tn.env, "get", "--server", tn.addrs[0], "--data", t.TempDir(), "-o", t.TempDir(), "--unlisted-epochs", "0", "--timeout", "10s", link)
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "is not in the index synced") || !strings.Contains(errOut, "timed out after 10s") {
		t.Fatalf("get of nothing: %v\n%s", err, errOut)
	}
}

// Problem 8: servers log roster joins and departures.
func TestServerLogsRoster(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("waits out epochs and timeouts")
	}
	tn := startNet(t, 2, 2)
	waitFor(t, 20*time.Second, "a roster join in the first server's log", func() bool {
		return strings.Contains(tn.logs[0].errb.String(), "server joined the roster")
	})
	if l := tn.logs[0].errb.String(); !strings.Contains(l, "nick=s1") {
		t.Fatalf("join logged without the peer's nick:\n%s", l)
	}
	// One id a line: the server's own once, in "server up"; a line about
	// another server names it as peer.
	for _, l := range strings.Split(tn.logs[0].errb.String(), "\n") {
		if strings.Contains(l, " server=") || strings.Contains(l, " self=") {
			t.Errorf("a line names the server itself: %s", l)
		}
		if strings.Contains(l, `msg="server up"`) && !strings.Contains(l, " id=12D3") {
			t.Errorf("server up without the server's id: %s", l)
		}
	}
	_ = tn.logs[1].cmd.Process.Signal(syscall.SIGINT)
	tn.logs[1].wait(15 * time.Second)
	waitFor(t, 60*time.Second, "a departure in the first server's log", func() bool {
		return strings.Contains(tn.logs[0].errb.String(), "server left the roster")
	})
	// And status shows the roster.
	out, errOut, err := runBin(t, tn.env, "status", "--data", tn.dirs[0])
	if err != nil || !strings.Contains(out, "roster") {
		t.Fatalf("server status: %v\n%s%s", err, out, errOut)
	}
}

// The rough edges of the command line, without a network.
func TestRoughEdges(t *testing.T) {
	env := cleanEnv(t)
	oneLine := func(s string) bool { return strings.Count(strings.TrimSpace(s), "\n") == 0 }
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, exitUsage, "unknown command \"bogus\""},
		{[]string{"server"}, exitUsage, "needs --data"},
		{[]string{"ls", "extra"}, exitUsage, "takes no arguments"},
		{[]string{"client", "extra"}, exitUsage, "takes no arguments"},
		{[]string{"share", "--nope", "x"}, exitUsage, "flag provided but not defined"},
		{[]string{"get", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY", "riffle:nope"}, exitError, "riffle: link 1: bad link"},
		// Surrounding spaces are not part of a link: it parses, and the
		// command gets as far as looking for a server.
		{[]string{"get", "--data", t.TempDir(), "-o", t.TempDir(), "  riffle:ty4uvsii5v7k4m3kp7a5ys373bmpez3hzhvjj5242iqyqbffsdzq\n"}, exitError, "no server"},
		// Upper case is the same link.
		{[]string{"get", "--data", t.TempDir(), "-o", t.TempDir(), "RIFFLE:TY4UVSII5V7K4M3KP7A5YS373BMPEZ3HZHVJJ5242IQYQBFFSDZQ"}, exitError, "no server"},
	} {
		_, errOut, err := runBin(t, env, tc.args...)
		if code := exitCodeOf(err); code != tc.code || !strings.Contains(errOut, tc.want) || !oneLine(errOut) || strings.Count(errOut, "riffle: ") != 1 {
			t.Errorf("riffle %q: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	help, _, err := runBin(t, env, "server", "--help")
	if err != nil || strings.Contains(help, "node's") || strings.Contains(help, "(default: 0)") || !strings.Contains(help, "(default: 262144)") {
		t.Errorf("server --help: %v\n%s", err, help)
	}
	help, _, err = runBin(t, env, "share", "--help")
	for _, f := range []string{"--json", "--quiet", "--timeout", "--min-clients"} {
		if err != nil || !strings.Contains(help, f) {
			t.Errorf("share --help lacks %s:\n%s", f, help)
		}
	}
}

// Names are shown with their control characters escaped.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain.txt":              "plain.txt",
		"evil\x1b[31m.txt":       `evil\x1b[31m.txt`,
		"two\nlines":             `two\nlines`,
		"caf\u00e9 \u65e5\u672c": "caf\u00e9 \u65e5\u672c",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := lsName(strings.Repeat("n", 255)); len([]rune(got)) != maxLsName {
		t.Errorf("a 255-byte name takes %d columns in ls", len([]rune(got)))
	}
}

// The config file gives flags their defaults: bare keys to the client
// commands, server.* keys to riffle server and riffle id; the command line
// wins; an unknown key is an error naming its line.
func TestConfigKeys(t *testing.T) {
	env := cleanEnv(t)
	cfg := filepath.Join(t.TempDir(), "config")
	env = append(env, configEnv+"="+cfg)
	srvDir := t.TempDir()
	notDir, _ := writeRandom(t, "file", 1)
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# test\nserver.data = " + srvDir + "\nserver.listen = /ip4/10.1.2.3/tcp/7\nserver.listen = /ip4/10.1.2.3/udp/7/quic-v1\n" +
		"data = " + notDir + "\nmin-anonymity = 3\naccept-budget-drops = true\n")
	out, errOut, err := runBin(t, env, "id")
	if err != nil || !strings.Contains(out, "/ip4/10.1.2.3/tcp/7/p2p/") || !strings.Contains(out, "/ip4/10.1.2.3/udp/7/quic-v1/p2p/") {
		t.Fatalf("id with server.data and server.listen from the config: %v\n%s%s", err, out, errOut)
	}
	// The command line wins.
	out, _, err = runBin(t, env, "id", "--listen", "/ip4/10.9.9.9/tcp/9")
	if err != nil || strings.Contains(out, "10.1.2.3") || !strings.Contains(out, "10.9.9.9") {
		t.Fatalf("id --listen over the config: %v\n%s", err, out)
	}
	// data applies to the client commands.
	_, errOut, err = runBin(t, env, "client", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY")
	if err == nil || !strings.Contains(errOut, "client data directory") {
		t.Fatalf("client with data from the config: %v %q", err, errOut)
	}
	write("min-anonimity = 3\n")
	_, errOut, err = runBin(t, env, "ls")
	if exitCodeOf(err) != 1 || !strings.Contains(errOut, "line 1: unknown key \"min-anonimity\"") {
		t.Fatalf("a misspelt key: %v %q", err, errOut)
	}
}

// The systemd unit of docs/operator.md names only flags that exist.
func TestOperatorUnit(t *testing.T) {
	unit, err := os.ReadFile("../../docs/riffle-server.service")
	if err != nil {
		t.Fatal(err)
	}
	help, _, err := runBin(t, cleanEnv(t), "server", "--help")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(unit), "\n") {
		cmd, ok := strings.CutPrefix(l, "ExecStart=")
		if !ok {
			continue
		}
		found = true
		f := strings.Fields(cmd)
		if len(f) < 2 || filepath.Base(f[0]) != "riffle" || f[1] != "server" {
			t.Fatalf("ExecStart runs %q", cmd)
		}
		for _, a := range f[2:] {
			if strings.HasPrefix(a, "--") && !strings.Contains(help, a+" ") {
				t.Errorf("the unit's flag %s is not in riffle server --help", a)
			}
		}
	}
	if !found {
		t.Fatal("the unit has no ExecStart")
	}
	// Every server.* key of the operator guide's example is known.
	guide, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(guide), "\n") {
		l = strings.TrimSpace(l)
		if k, _, ok := strings.Cut(l, " = "); ok && strings.HasPrefix(k, serverPrefix) && !knownConfigKey(k) {
			t.Errorf("operator.md uses the unknown config key %q", k)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "512": 512, "4KiB": 4096, "1.5 GiB": 3 << 29, "2GB": 2e9, "10m": 10 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"x", "-1", "5 parsecs", "1e30TiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

// Progress: a bar on a terminal driven by the moving events, plain
// lines elsewhere, nothing under --quiet; the last line is kept for a
// timeout's message either way.
func TestProgressModes(t *testing.T) {
	lines := []string{"epoch 1a2b3c4d: 3 servers, anonymity set 4 clients", "share f.bin: 3/10 chunks, round 7, 1.0 KiB/s, eta 9s", "share f.bin: 10/10 chunks, round 14, 1.0 KiB/s, eta 0s", "shared f.bin: 40000 bytes in 10 uploads (data and manifest chunks), 3s"}
	// The client's own line, then the job's events, whose lines are the
	// others.
	events := []client.JobEvent{
		{Kind: "share", Phase: client.PhaseMoving, Name: "f.bin", Done: 3, Total: 10, Round: 7, Rate: 1024, ETA: 9 * time.Second},
		{Kind: "share", Phase: client.PhaseMoving, Name: "f.bin", Done: 10, Total: 10, Round: 14, Rate: 1024},
		{Kind: "share", Phase: client.PhaseShared, Name: "f.bin", Bytes: 40000, Total: 10, Elapsed: 3 * time.Second},
	}
	var plain, bar, none bytes.Buffer
	pl := &progress{w: &plain}
	pb := &progress{w: &bar, tty: true}
	pq := &progress{w: &none, quiet: true}
	for _, p := range []*progress{pl, pb, pq} {
		p.line(lines[0])
		for _, e := range events {
			p.event(e)
		}
	}
	pb.finish()
	if plain.String() != strings.Join(lines, "\n")+"\n" {
		t.Errorf("lines mode printed %q", plain.String())
	}
	if b := bar.String(); !strings.Contains(b, "share f.bin") || !strings.Contains(b, "10/10") || strings.Contains(b, "3/10 chunks, round") || !strings.Contains(b, "shared f.bin") {
		t.Errorf("bar mode printed %q", b)
	}
	if none.Len() != 0 || pq.lastLine() != lines[3] {
		t.Errorf("quiet mode printed %q, kept %q", none.String(), pq.lastLine())
	}
}

// TestMaxRateRefused: `riffle client --max-rate` below what the group's
// constants allow stops at the group's first descriptor, exit status 1,
// naming the figure and the flag; the config file's key does the same.
func TestMaxRateRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers")
	}
	tn := startNet(t, 3, 2)
	check := func(env []string, args ...string) {
		t.Helper()
		out, errOut, err := runBinFor(t, 60*time.Second, env, append([]string{"client", "--server", tn.addrs[0], "--data", t.TempDir()}, args...)...)
		if code := exitCodeOf(err); code != 1 {
			t.Fatalf("client over budget: exit %d (%v), want 1\nstdout %s\nstderr %s", code, err, out, errOut)
		}
		for _, want := range []string{"over the client's budget", "/h sent", "--max-rate 1.0 KiB/s"} {
			if !strings.Contains(errOut, want) {
				t.Fatalf("stderr lacks %q:\n%s", want, errOut)
			}
		}
	}
	check(tn.env, "--max-rate", "1KiB/s")
	env := append([]string(nil), tn.env...)
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, []byte("max-rate = 3600KiB/h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(append(env, configEnv+"="+cfg))
}

// TestRateAndIntervalFlags: --max-rate reads a size a second or an hour;
// --round-interval is refused outside the pace's range, naming it.
func TestRateAndIntervalFlags(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "1KiB/s": 1024, "1KiB": 1024, "3600KiB/h": 1024, "2MB/s": 2e6} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseRate("fast"); err == nil {
		t.Error("parseRate(fast) accepted")
	}
	p := node.DefaultParams()
	if q, err := paramsInterval(p, 2*time.Second); err != nil || q.RoundIntervalMs != 2000 {
		t.Fatalf("2s: %+v, %v", q, err)
	}
	for _, d := range []time.Duration{time.Millisecond, 61 * time.Second, 1500 * time.Microsecond} {
		if _, err := paramsInterval(p, d); err == nil || !strings.Contains(err.Error(), "round interval") {
			t.Errorf("round interval %v: %v", d, err)
		}
	}
}
