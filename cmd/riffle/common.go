package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// Environment and file names through which a client finds its primary when
// --server is not given (in this order).
const (
	envServer      = "RIFFLE_SERVER"
	configDirName  = "riffle" // under the user config directory
	configFileName = "config" // "server = MULTIADDR" lines
	clientDataName = "client" // default client data directory, under configDirName
)

// verboseFlag turns on debug logging to stderr. Every command carries it, so
// `riffle share -v ...` works; commands look it up through the context's
// lineage, so a global flag of the same name works as well.
func verboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log debug messages to stderr"}
}

// verbose reports --verbose given before the command or after it (each
// command has its own flag, which hides the global one from c.Bool).
func verbose(c *cli.Context) bool {
	for _, cc := range c.Lineage() {
		if cc != nil && cc.Bool("verbose") {
			return true
		}
	}
	return false
}

// serverLogger is the log of a running server: what an operator follows
// (epochs opened, closed and ended with their reason, setups verified,
// rounds voided) at info level by default, everything under --verbose.
// No message ties a client to a slot, a chunk or a request.
func serverLogger(c *cli.Context) *slog.Logger {
	level := slog.LevelInfo
	if verbose(c) {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr(c), &slog.HandlerOptions{Level: level}))
}

// logger returns a debug logger on stderr under --verbose and nil (node's
// quiet default) otherwise.
func logger(c *cli.Context) *slog.Logger {
	if !verbose(c) {
		return nil
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// stderr is the command's error stream (tests may replace App.ErrWriter).
func stderr(c *cli.Context) io.Writer {
	if c.App.ErrWriter != nil {
		return c.App.ErrWriter
	}
	return os.Stderr
}

// stdout is the command's output stream.
func stdout(c *cli.Context) io.Writer {
	if c.App.Writer != nil {
		return c.App.Writer
	}
	return os.Stdout
}

// signalContext is cancelled on SIGINT or SIGTERM, so that long-running
// commands close their hosts and stores cleanly instead of dying mid-write.
// The signal is kept in interrupt for the exit code (130 or 143).
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			if sig, ok := s.(syscall.Signal); ok {
				interrupt.Store(int32(sig))
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}

// clientFlags are the flags every client command shares.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "the primary server's multiaddr with /p2p/<peer id> (else $" + envServer + ", else the config file)"},
		&cli.StringSliceFlag{Name: "require-server", Usage: "refuse epochs whose chain lacks this peer id (repeatable)"},
		&cli.IntFlag{Name: "min-anonymity", Value: node.DefaultMinAnonymity, EnvVars: []string{"RIFFLE_MIN_ANONYMITY"},
			Usage: "hold jobs (sending cover only) in epochs with fewer clients registered through the servers this client trusts (its primary and --require-server)"},
		&cli.BoolFlag{Name: "accept-budget-drops", EnvVars: []string{"RIFFLE_ACCEPT_BUDGET_DROPS"},
			Usage: "take epochs whose chain dropped a server of the previous chain for its refusal budget (else the client refuses them, says so and waits)"},
		&cli.BoolFlag{Name: "now", EnvVars: []string{"RIFFLE_NOW"},
			Usage: "without a running riffle client, join for this job alone (reveals when the job ran); riffle client: start jobs without the presence wait"},
		&cli.StringFlag{Name: "data", Usage: "client data directory (partial downloads); default under the user config directory"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no progress, only results and errors"},
		verboseFlag(),
	}
}

// configPath is the client configuration file: $XDG_CONFIG_HOME/riffle/config
// (os.UserConfigDir follows XDG on Unix).
func configPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate user config directory: %w", err)
	}
	return filepath.Join(dir, configDirName, configFileName), nil
}

// configLine is one "key = value" line of the config file.
type configLine struct {
	key, val string
	n        int // line number
}

// readConfig returns the "key = value" lines of the config file at path,
// none if the file is absent. Lines starting with '#' are comments. The
// file is small by nature: reading stops at maxConfigBytes so that a wrong
// path cannot make us read a disk image.
func readConfig(path string) ([]configLine, error) {
	const maxConfigBytes = 64 << 10
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	var out []configLine
	sc := bufio.NewScanner(io.LimitReader(f, maxConfigBytes))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("config %s line %d: want key = value", path, n)
		}
		out = append(out, configLine{key: strings.TrimSpace(key), val: strings.TrimSpace(val), n: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return out, nil
}

// readConfigServer returns the value of the last "server = ..." line of the
// config file at path, "" if the file or the line is absent.
func readConfigServer(path string) (string, error) {
	lines, err := readConfig(path)
	if err != nil {
		return "", err
	}
	var server string
	for _, l := range lines {
		if l.key == "server" {
			server = l.val
		}
	}
	return server, nil
}

// primary resolves the primary server: --server, else $RIFFLE_SERVER, else
// the config file. The address must carry /p2p/<peer id>: a client always
// requires its primary, so it must know who that is.
func primary(c *cli.Context) (string, error) {
	s, from := c.String("server"), "--server"
	if s == "" {
		s, from = strings.TrimSpace(os.Getenv(envServer)), "$"+envServer
	}
	if s == "" {
		path, err := configFile()
		if err != nil {
			return "", err
		}
		if s, err = readConfigServer(path); err != nil {
			return "", err
		}
		from = path
	}
	if s == "" {
		return "", errors.New("no server: give --server MULTIADDR, set " + envServer + ", or write \"server = MULTIADDR\" in the config file (riffle id --data DIR prints a server's addresses)")
	}
	a, err := ma.NewMultiaddr(s)
	if err != nil {
		return "", fmt.Errorf("server address %q from %s: %w", s, from, err)
	}
	if _, err := peer.AddrInfoFromP2pAddr(a); err != nil {
		return "", fmt.Errorf("server address %q from %s needs /p2p/<peer id>: %w", s, from, err)
	}
	return s, nil
}

// requiredServers parses --require-server peer ids.
func requiredServers(c *cli.Context) ([]peer.ID, error) {
	var out []peer.ID
	for _, s := range c.StringSlice("require-server") {
		id, err := peer.Decode(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--require-server %q: %w", s, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// clientDataDir returns --data or the default client data directory,
// created with mode 0700 (partial downloads are private).
func clientDataDir(c *cli.Context) (string, error) {
	dir := c.String("data")
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("locate user config directory (give --data): %w", err)
		}
		dir = filepath.Join(base, configDirName, clientDataName)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create client data directory: %w", err)
	}
	return dir, nil
}
