package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// riffleBin is the binary built once by TestMain; the tests of this file
// exec it as a user would.
var riffleBin string

func TestMain(m *testing.M) {
	// The tests run real processes that wait on real time, not on the
	// CPU (under a minute of CPU in all): up to 8 run at once however
	// few the cores (go test's default is one a core); -parallel
	// overrides.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "8")
	}
	dir, err := os.MkdirTemp("", "riffle-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	riffleBin = filepath.Join(dir, "riffle")
	// -tags= as a user builds it, whatever GOFLAGS says
	// (TestBinaryHasNoTestHooks reads its symbols).
	build := exec.Command("go", "build", "-tags=", "-o", riffleBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build riffle:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment of a child: no RIFFLE_SERVER, and a config
// directory of the test's own, so that the developer's config never leaks
// in. The XDG_CONFIG_HOME entry is last.
func cleanEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envServer+"=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	// The test networks are small: as the demo prints, clients take
	// part whatever the anonymity set.
	return append(env, "RIFFLE_MIN_ANONYMITY=1", "RIFFLE_NOW=1", "XDG_CONFIG_HOME="+t.TempDir())
}

// runBin execs riffle with args and returns stdout, stderr and the error.
func runBin(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	// Generous: a network command may wait out a round limit (10 s and
	// more) when the network loses a round under load.
	return runBinFor(t, 90*time.Second, env, args...)
}

// runBinFor is runBin with its own deadline: a bench runs whole networks
// one after another, each of which may wait out a round limit under load.
func runBinFor(t *testing.T, limit time.Duration, env []string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, riffleBin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := runBin(t, cleanEnv(t), "version")
	if err != nil {
		t.Fatal(err)
	}
	// One version story (issue 27, point 10): the design version of
	// docs/protocol.md and the wire version of the stream ids, each
	// labelled.
	wire := fmt.Sprintf("/riffle/%d", node.ProtocolVersion)
	if !strings.HasPrefix(out, "riffle ") || strings.Count(out, "\n") != 1 || strings.Contains(out, "protocol v2") ||
		!strings.Contains(out, fmt.Sprintf("protocol design v%d", node.DesignVersion)) || !strings.Contains(out, "wire protocol "+wire) {
		t.Fatalf("version printed %q", out)
	}
	for _, p := range []string{string(node.ProtoRoster), string(node.ProtoEpoch), string(node.ProtoRound), string(node.ProtoClient), string(node.ProtoPIR)} {
		if !strings.HasPrefix(p, wire+"/") {
			t.Errorf("stream protocol %s is not under %s", p, wire)
		}
	}
	spec, err := os.ReadFile("../../docs/protocol.md")
	if err != nil || !strings.HasPrefix(string(spec), fmt.Sprintf("# The riffle protocol, version %d\n", node.DesignVersion)) {
		t.Errorf("docs/protocol.md does not say version %d in its title: %v", node.DesignVersion, err)
	}
}

func TestHelpListsCommands(t *testing.T) {
	out, _, err := runBin(t, cleanEnv(t), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"server", "id", "share", "get", "ls", "client", "status", "resume", "demo", "bench", "version"} {
		if !helpLists(out, cmd) {
			t.Errorf("--help does not list %q:\n%s", cmd, out)
		}
	}
}

// helpLists reports whether some line of help text starts (after spaces)
// with the command name followed by a space or a comma.
func helpLists(help, name string) bool {
	for _, l := range strings.Split(help, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, name+" ") || strings.HasPrefix(l, name+",") {
			return true
		}
	}
	return false
}

func TestIDStableAndPrivate(t *testing.T) {
	env := cleanEnv(t)
	dir := filepath.Join(t.TempDir(), "srv")
	out1, err1, err := runBin(t, env, "id", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	out2, err2, err := runBin(t, env, "id", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(err1, "created a new identity") || err2 != "" {
		t.Errorf("id stderr %q then %q: want the creation noted once", err1, err2)
	}
	if out1 != out2 {
		t.Fatalf("id changed between runs:\n%s\n%s", out1, out2)
	}
	lines := strings.Split(strings.TrimSpace(out1), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "12D3KooW") {
		t.Fatalf("id printed %q, want a peer id line then addresses", out1)
	}
	for _, a := range lines[1:] {
		if !strings.HasSuffix(a, "/p2p/"+lines[0]) {
			t.Errorf("address %q does not end in /p2p/%s", a, lines[0])
		}
	}
	st, err := os.Stat(filepath.Join(dir, node.IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("identity file mode %o, want 600", st.Mode().Perm())
	}
	out3, _, err := runBin(t, env, "id", "--data", filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.SplitN(out3, "\n", 2)[0] == lines[0] {
		t.Fatal("two data directories share a peer id")
	}
	// Without a running server, --listen chooses the printed addresses.
	out4, _, err := runBin(t, env, "id", "--data", dir, "--listen", "/ip4/10.1.2.3/tcp/7")
	if err != nil {
		t.Fatal(err)
	}
	if want := lines[0] + "\n/ip4/10.1.2.3/tcp/7/p2p/" + lines[0] + "\n"; out4 != want {
		t.Fatalf("id --listen printed %q, want %q", out4, want)
	}
}

func TestClientNeedsServer(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runBin(t, cleanEnv(t), "share", "--data", t.TempDir(), f)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("share without a server: err %v, want exit status 1", err)
	}
	if !strings.HasPrefix(errOut, "riffle: no server") {
		t.Fatalf("stderr %q, want it to start with \"riffle: no server\"", errOut)
	}
	// A server address without /p2p/ is refused before any network use,
	// naming where it came from.
	env := append(cleanEnv(t), envServer+"=/ip4/127.0.0.1/tcp/1")
	_, errOut, err = runBin(t, env, "ls", "--data", t.TempDir())
	if err == nil || !strings.Contains(errOut, "needs /p2p/") || !strings.Contains(errOut, "$"+envServer) {
		t.Fatalf("ls with a bare address: err %v, stderr %q", err, errOut)
	}
	// A missing file is refused before joining.
	_, errOut, err = runBin(t, cleanEnv(t), "share", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY", filepath.Join(t.TempDir(), "absent"))
	if err == nil || !strings.Contains(errOut, "no such file") {
		t.Fatalf("share of a missing file: err %v, stderr %q", err, errOut)
	}
	// A malformed link is refused with its position.
	_, errOut, err = runBin(t, cleanEnv(t), "get", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY", "riffle:nope")
	if err == nil || !strings.HasPrefix(errOut, "riffle: link 1:") {
		t.Fatalf("get of a bad link: err %v, stderr %q", err, errOut)
	}
	const link = "riffle:ty4uvsii5v7k4m3kp7a5ys373bmpez3hzhvjj5242iqyqbffsdzq"
	_, errOut, err = runBin(t, cleanEnv(t), "get", "--server", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY", link, link)
	if err == nil || !strings.Contains(errOut, "link 2 names the same file as link 1") {
		t.Fatalf("get of a repeated link: err %v, stderr %q", err, errOut)
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	const addr = "/ip4/127.0.0.1/tcp/4433/p2p/12D3KooWEUbcN5uGcp14c1WytkD63tKzr8uSb5sSGsUGvPedroqY"
	if err := os.WriteFile(path, []byte("# riffle\n\nserver = /ip4/10.0.0.1/tcp/1\n  server=  "+addr+"  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readConfigServer(path)
	if err != nil || got != addr {
		t.Fatalf("readConfigServer = %q, %v; want the last server line %q", got, err, addr)
	}
	if got, err := readConfigServer(filepath.Join(dir, "absent")); got != "" || err != nil {
		t.Fatalf("absent config: %q, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("server\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigServer(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("malformed config: %v, want an error naming line 1", err)
	}
	// The binary reads $XDG_CONFIG_HOME/riffle/config when nothing else
	// names a server: an address there without /p2p/ is refused naming the
	// file, which shows the file was read.
	env := cleanEnv(t)
	xdg := strings.TrimPrefix(env[len(env)-1], "XDG_CONFIG_HOME=")
	if err := os.MkdirAll(filepath.Join(xdg, configDirName), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(xdg, configDirName, configFileName)
	if err := os.WriteFile(cfg, []byte("server = /ip4/127.0.0.1/tcp/1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := runBin(t, env, "ls", "--data", t.TempDir())
	if err == nil || !strings.Contains(errOut, cfg) {
		t.Fatalf("config-file address: err %v, stderr %q; want an error naming %s", err, errOut, cfg)
	}
}

func TestParamsWithRanges(t *testing.T) {
	p, err := paramsWith(node.DefaultParams(), 16<<10, 8, 1, 250*time.Millisecond, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if p.ChunkSize != 16<<10 || p.Rounds != 8 || p.K != 1 || p.RegWindowMs != 250 || p.RoundLimitMs != 5000 {
		t.Fatalf("params %+v", p)
	}
	if q, _ := paramsWith(node.DefaultParams(), 0, 0, 0, 0, 0); q != node.DefaultParams() {
		t.Fatalf("zero overrides changed the defaults: %+v", q)
	}
	for _, bad := range []struct{ chunk, rounds, k int }{{100, 0, 0}, {0, -1, 0}, {0, 0, 1000}, {64 << 20, 0, 0}} {
		if _, err := paramsWith(node.DefaultParams(), bad.chunk, bad.rounds, bad.k, 0, 0); err == nil {
			t.Errorf("paramsWith(%+v) accepted", bad)
		}
	}
	for _, limit := range []time.Duration{50 * time.Millisecond, 11 * time.Minute, time.Hour} {
		if _, err := paramsWith(node.DefaultParams(), 0, 0, 0, 0, limit); err == nil {
			t.Errorf("round limit %v accepted", limit)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 40000: "39.1 KiB", 3 << 20: "3.0 MiB", 1 << 40: "1.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSampleDeterministic(t *testing.T) {
	a, _ := io.ReadAll(sampleReader(1000))
	b, _ := io.ReadAll(sampleReader(1000))
	if len(a) != 1000 || !bytes.Equal(a, b) {
		t.Fatalf("sample not deterministic: %d bytes", len(a))
	}
	// The 4 MiB default sample's digest, as printed by the demo: a change of
	// generator would make old transcripts incomparable.
	h := sha256.New()
	if _, err := io.Copy(h, sampleReader(demoDefaultSize)); err != nil {
		t.Fatal(err)
	}
	const want = "ec4c04845d3160216fc02359408f3f5da5521dc681dffe1415a81afa8ba78aa5"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Fatalf("default sample sha256 %s, want %s", got, want)
	}
}

// TestDemo runs a small demo end to end through the binary: 3 servers and
// 4 clients on loopback share and fetch a 100 000-byte sample.
func TestDemo(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network")
	}
	out, errOut, err := runBin(t, cleanEnv(t), "demo", "--clients", "4", "--size", "100000", "--chunk-size", "16384", "--rounds", "16")
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for _, want := range []string{"bytes identical", "anonymity set 4", "goodput: share", "stopping"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("16, 64,200")
	if err != nil || len(got) != 3 || got[0] != 16 || got[1] != 64 || got[2] != 200 {
		t.Fatalf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "16,,64", "1", "x", "16;64"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

// TestDemoKeep checks that the commands `demo --keep` prints work from
// another process: ls lists the sample, get fetches it, and SIGINT stops
// the network cleanly.
func TestDemoKeep(t *testing.T) {
	t.Parallel() // real processes or sockets in real time: overlap their waits
	if testing.Short() {
		t.Skip("runs a loopback network")
	}
	env := cleanEnv(t)
	cmd := exec.Command(riffleBin, "demo", "--keep", "--clients", "3", "--size", "20000", "--chunk-size", "16384", "--rounds", "16")
	cmd.Env = env
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			<-done
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdoutPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	var server, link string
	var all []string
	timeout := time.After(60 * time.Second)
	for server == "" || link == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("demo --keep ended early:\n%s\nstderr:\n%s", strings.Join(all, "\n"), errb.String())
			}
			all = append(all, l)
			f := strings.Fields(l)
			if len(f) == 3 && f[2] == "ls" && strings.HasPrefix(f[0], envServer+"=") {
				server = strings.TrimPrefix(f[0], envServer+"=")
			}
			if len(f) == 6 && f[2] == "get" {
				link = f[5]
			}
		case <-timeout:
			t.Fatalf("demo --keep printed no commands in 60 s:\n%s", strings.Join(all, "\n"))
		}
	}
	go func() {
		for range lines {
		}
	}()
	// Two files in one share, the second encrypted, then both links in
	// one get into a directory.
	srcDir := t.TempDir()
	plain, secret := bytes.Repeat([]byte("plain "), 5000), bytes.Repeat([]byte("secret "), 3000)
	if err := os.WriteFile(filepath.Join(srcDir, "a.txt"), plain, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srcDir, "b.txt"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	senv := append(env, envServer+"="+server)
	out, errOut, err := runBin(t, senv, "share", "--data", t.TempDir(), filepath.Join(srcDir, "a.txt"), filepath.Join(srcDir, "b.txt"))
	if err != nil {
		t.Fatalf("share of two files: %v\n%s", err, errOut)
	}
	links := strings.Fields(out)
	if len(links) != 2 || strings.Contains(links[0], "#") || strings.Contains(links[1], "#") {
		t.Fatalf("share printed %q, want two public links", out)
	}
	out, errOut, err = runBin(t, senv, "share", "--encrypt", "--data", t.TempDir(), filepath.Join(srcDir, "b.txt"))
	if err != nil {
		t.Fatalf("encrypted share: %v\n%s", err, errOut)
	}
	enc := strings.TrimSpace(out)
	if !strings.Contains(enc, "#") {
		t.Fatalf("encrypted share printed %q, want a link with a key", enc)
	}
	outDir := t.TempDir()
	out, errOut, err = runBin(t, senv, "get", "--data", t.TempDir(), "-o", outDir, links[0], enc)
	if err != nil {
		t.Fatalf("get of two links: %v\n%s", err, errOut)
	}
	if paths := strings.Fields(out); len(paths) != 2 {
		t.Fatalf("get printed %q, want two paths", out)
	}
	for name, want := range map[string][]byte{"a.txt": plain, "b.txt": secret} {
		got, err := os.ReadFile(filepath.Join(outDir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s fetched: %d bytes, %v; want the %d shared", name, len(got), err, len(want))
		}
	}
	out, errOut, err = runBin(t, append(env, envServer+"="+server), "ls", "--json", "--data", t.TempDir())
	if err != nil || !strings.Contains(out, link) || !strings.Contains(out, `"sample.bin"`) {
		t.Fatalf("ls through the kept network: %v\n%s\n%s", err, out, errOut)
	}
	dst := filepath.Join(t.TempDir(), "s.bin")
	if _, errOut, err := runBin(t, append(env, envServer+"="+server), "get", "--data", t.TempDir(), "-o", dst, link); err != nil {
		t.Fatalf("get through the kept network: %v\n%s", err, errOut)
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(sampleReader(20000))
	if !bytes.Equal(got, want) {
		t.Fatalf("fetched %d bytes differ from the demo's sample", len(got))
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Fatalf("demo --keep after SIGINT: %v\n%s", err, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("demo --keep did not stop within 20 s of SIGINT")
	}
}

func TestMoveNoClobber(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.WriteFile(src, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := moveNoClobber(src, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "one" {
		t.Fatalf("moved file: %q, %v", b, err)
	}
	if _, err := os.Stat(src); !os.IsNotExist(err) {
		t.Fatalf("source still there: %v", err)
	}
	if err := os.WriteFile(src, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := moveNoClobber(src, dst); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("move over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "one" {
		t.Fatalf("existing file overwritten with %q", b)
	}
}

// TestVerboseAnywhere: -v works before the command and after it.
func TestVerboseAnywhere(t *testing.T) {
	for args, want := range map[string]bool{"riffle -v x": true, "riffle x -v": true, "riffle x": false, "riffle --verbose x --verbose": true} {
		var got bool
		app := &cli.App{Flags: []cli.Flag{verboseFlag()}, Commands: []*cli.Command{{
			Name: "x", Flags: []cli.Flag{verboseFlag()},
			Action: func(c *cli.Context) error { got = logger(c) != nil; return nil },
		}}}
		if err := app.Run(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: verbose %v, want %v", args, got, want)
		}
	}
}
