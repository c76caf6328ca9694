package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// addrsFile is written by a running server into its data directory: its
// full multiaddrs, one a line, so that `riffle id` can print the addresses
// actually bound (a "tcp/0" listen address gets its port only at start).
// The server removes it when it stops.
const addrsFile = "addrs"

func init() {
	defaults := node.DefaultParams()
	register(&cli.Command{
		Name:  "server",
		Usage: "run a riffle server until SIGINT or SIGTERM",
		Description: `A server keeps its identity and store in --data and listens only where told:
by default on 127.0.0.1 (TCP and QUIC, port 4433). To serve the world, listen on
a public address, e.g. --listen /ip4/0.0.0.0/tcp/4433 --listen /ip4/0.0.0.0/udp/4433/quic-v1,
and give other servers' addresses (riffle id) with --peer. The leader (first
server of the chain) fixes the epoch parameters; --chunk-size, --rounds and the
timing flags matter only there.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "data directory (identity key, store); required"},
			&cli.StringSliceFlag{Name: "listen", Usage: "multiaddr to listen on (repeatable; default " + strings.Join(node.DefaultListen, ", ") + ")"},
			&cli.StringSliceFlag{Name: "peer", Usage: "bootstrap server multiaddr with /p2p/<peer id> (repeatable)"},
			&cli.StringFlag{Name: "nick", Usage: "a short name shown to clients"},
			&cli.IntFlag{Name: "min-servers", Value: node.DefaultMinServers, Usage: "no epoch starts with fewer servers in the chain"},
			&cli.BoolFlag{Name: "insecure-small-group", Usage: "for tests only: let --min-servers and --founder make chains of 1 or 2 servers, which give no anonymity"},
			&cli.IntFlag{Name: "min-clients", Value: node.DefaultMinClients, Usage: "no epoch starts with a smaller anonymity set"},
			&cli.BoolFlag{Name: "no-mdns", Usage: "do not discover servers on the local network"},
			&cli.StringSliceFlag{Name: "allow-server", Usage: "serve only in chains whose other servers all have these peer ids (repeatable; default: any server)"},
			&cli.StringSliceFlag{Name: "founder", Usage: "peer id of a founder of the group, this server's own included: the same list on every server (repeatable; none: any server may found it)"},
			&cli.StringFlag{Name: "quota", Usage: "cap on the chunk data stored, e.g. 20GiB (0: none; the file is about 2 % larger)"},
			&cli.DurationFlag{Name: "retention", Usage: "drop chunks not published, fetched or requested for this long, e.g. 720h (0: keep forever)"},
			&cli.IntFlag{Name: "chunk-size", Usage: "epoch parameter b in bytes, as leader", DefaultText: fmt.Sprint(defaults.ChunkSize)},
			&cli.IntFlag{Name: "rounds", Usage: "epoch parameter R, rounds per epoch, as leader", DefaultText: fmt.Sprint(defaults.Rounds)},
			&cli.IntFlag{Name: "k", Usage: "epoch parameter k, request slots per client and round, as leader", DefaultText: fmt.Sprint(defaults.K)},
			&cli.DurationFlag{Name: "reg-window", Usage: "registration window of an epoch, a group constant (every server of the group sets the same)", DefaultText: (time.Duration(defaults.RegWindowMs) * time.Millisecond).String()},
			&cli.DurationFlag{Name: "round-limit", Usage: "a round not filled in this time ends the epoch, as leader", DefaultText: (time.Duration(defaults.RoundLimitMs) * time.Millisecond).String()},
			&cli.DurationFlag{Name: "round-interval", Usage: "the group pace: no round starts sooner than this after the previous one (a group constant: set it alike on every server)",
				DefaultText: (time.Duration(defaults.RoundIntervalMs) * time.Millisecond).String()},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the server's run to `FILE` (go tool pprof)"},
			&cli.StringFlag{Name: "memprofile", Usage: "write a heap profile to `FILE` at the server's highest live heap (sampled every second; go tool pprof)"},
			verboseFlag(),
			uiFlag(""), uiPublicFlag(),
		},
		Action: runServer,
	})
}

// serverParams applies the leader parameter flags to node's defaults.
func serverParams(c *cli.Context) (node.Params, error) {
	p, err := paramsWith(node.DefaultParams(), c.Int("chunk-size"), c.Int("rounds"), c.Int("k"), c.Duration("reg-window"), c.Duration("round-limit"))
	if err != nil {
		return p, err
	}
	return paramsInterval(p, c.Duration("round-interval"))
}

// paramsInterval sets the group pace to d unless d is 0, checking its
// range (docs/protocol.md §5).
func paramsInterval(p node.Params, d time.Duration) (node.Params, error) {
	if d == 0 {
		return p, nil
	}
	lo, hi := time.Duration(node.MinRoundIntervalMs)*time.Millisecond, time.Duration(node.MaxRoundIntervalMs)*time.Millisecond
	if d < lo || d > hi || d%time.Millisecond != 0 {
		return p, fmt.Errorf("round interval %v out of range [%v, %v] (whole milliseconds)", d, lo, hi)
	}
	p.RoundIntervalMs = uint32(d.Milliseconds())
	return p, nil
}

// paramsWith overrides the non-zero settings of p, checking their ranges
// (the server checks them again; this gives the flag's name in the error).
func paramsWith(p node.Params, chunk, rounds, k int, reg, limit time.Duration) (node.Params, error) {
	if chunk != 0 {
		if chunk < node.MinChunkSize || chunk > node.MaxChunkSize {
			return p, fmt.Errorf("chunk size %d bytes out of range [%d, %d]", chunk, node.MinChunkSize, node.MaxChunkSize)
		}
		p.ChunkSize = uint32(chunk)
	}
	if rounds != 0 {
		if rounds < 1 || rounds > node.MaxRounds {
			return p, fmt.Errorf("rounds %d out of range [1, %d]", rounds, node.MaxRounds)
		}
		p.Rounds = uint32(rounds)
	}
	if k != 0 {
		if k < 1 || k > node.MaxK {
			return p, fmt.Errorf("k %d out of range [1, %d]", k, node.MaxK)
		}
		p.K = uint16(k)
	}
	const maxMs = 1<<32 - 1
	if reg != 0 {
		if reg < time.Millisecond || reg.Milliseconds() > maxMs {
			return p, fmt.Errorf("registration window %v out of range", reg)
		}
		p.RegWindowMs = uint32(reg.Milliseconds())
	}
	if limit != 0 {
		if limit.Milliseconds() < node.MinRoundLimitMs || limit.Milliseconds() > node.MaxRoundLimitMs {
			return p, fmt.Errorf("round limit %v outside [%v, %v]", limit, node.MinRoundLimitMs*time.Millisecond, node.MaxRoundLimitMs*time.Millisecond)
		}
		p.RoundLimitMs = uint32(limit.Milliseconds())
	}
	return p, nil
}

func runServer(c *cli.Context) (err error) {
	if err := noArgs(c); err != nil {
		return err
	}
	if c.String("data") == "" {
		return usagef("server needs --data DIR (its identity key and store live there)")
	}
	if err := notClientData(c.String("data")); err != nil {
		return err
	}
	params, err := serverParams(c)
	if err != nil {
		return err
	}
	quota, err := parseSize(c.String("quota"))
	if err != nil {
		return usagef("--quota: %v", err)
	}
	if c.Duration("retention") < 0 {
		return usagef("--retention must not be negative")
	}
	var allow []peer.ID
	for _, a := range c.StringSlice("allow-server") {
		id, err := peer.Decode(strings.TrimSpace(a))
		if err != nil {
			return usagef("--allow-server %q: %v", a, err)
		}
		allow = append(allow, id)
	}
	var founders []peer.ID
	for _, a := range c.StringSlice("founder") {
		id, err := peer.Decode(strings.TrimSpace(a))
		if err != nil {
			return usagef("--founder %q: %v", a, err)
		}
		founders = append(founders, id)
	}
	if !c.Bool("insecure-small-group") {
		if err := checkGroupSize(c.Int("min-servers"), founders); err != nil {
			return err
		}
	}
	if err := checkUIFlags(c); err != nil {
		return err
	}
	endProfiles, err := startProfiles(c.String("cpuprofile"), c.String("memprofile"))
	if err != nil {
		return err
	}
	defer func() {
		if _, perr := endProfiles(); err == nil {
			err = perr
		}
	}()
	ctx, stop := signalContext(c.Context)
	defer stop()
	dir := c.String("data")
	listen := c.StringSlice("listen")
	if len(listen) == 0 {
		listen = node.DefaultListen
	}
	if err := checkPorts(listen); err != nil {
		return err
	}
	s, err := node.NewServer(ctx, node.ServerConfig{
		DataDir:      dir,
		Listen:       c.StringSlice("listen"),
		Peers:        c.StringSlice("peer"),
		Nick:         c.String("nick"),
		MinServers:   c.Int("min-servers"),
		MinClients:   c.Int("min-clients"),
		NoLAN:        c.Bool("no-mdns"),
		AllowServers: allow,
		Founders:     founders,
		Params:       params,
		StoreOptions: node.StoreOptions{QuotaBytes: quota, Retention: c.Duration("retention")},
		Logger:       serverLogger(c),
	})
	if err != nil {
		return err
	}
	var lines []string
	for _, a := range s.Addrs() {
		lines = append(lines, a.String())
	}
	path := filepath.Join(dir, addrsFile)
	if err := writeFileAtomic(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		s.Close()
		return err
	}
	// One line per address on stderr at start (the log's "server up"
	// line has them too, in one field): an operator needs them to connect
	// clients and peers, and scripts can read them.
	for _, l := range lines {
		fmt.Fprintf(stderr(c), "listening %s\n", l)
	}
	if addr := c.String("ui"); addr != "" {
		url, err := startServerUI(ctx, c, s, addr, c.Bool("ui-public"))
		if err != nil {
			s.Close()
			return err
		}
		fmt.Fprintf(stderr(c), "web ui %s\n", url)
	}
	statusDone := make(chan struct{})
	go func() { defer close(statusDone); writeStatus(ctx, s, dir) }()
	<-ctx.Done()
	<-statusDone
	fmt.Fprintln(stderr(c), "riffle server stopping")
	os.Remove(path)
	if err := s.Close(); err != nil {
		return fmt.Errorf("close server: %w", err)
	}
	return nil
}

// minGroup is the fewest servers of a group: anonymity needs one honest
// server besides a corrupt one, and the majority rule (docs/protocol.md
// §3) needs more than half of the group honest with one corrupt.
const minGroup = 3

// checkGroupSize refuses a configuration whose chains or founding group
// could hold fewer than minGroup servers.
func checkGroupSize(minServers int, founders []peer.ID) error {
	if minServers < minGroup {
		return usagef("--min-servers %d: a chain needs at least %d servers (anonymity needs an honest server beside a corrupt one, and accountability a majority of them honest)", minServers, minGroup)
	}
	distinct := map[peer.ID]bool{}
	for _, p := range founders {
		distinct[p] = true
	}
	if n := len(distinct); n > 0 && n < minGroup {
		return usagef("%d founders (--founder): a group needs at least %d, as a chain does (--min-servers)", n, minGroup)
	}
	return nil
}

// notClientData refuses a client's data directory as a server's: the
// server would write its identity and store among the client's files.
// A client's directory is known by the files a client writes there.
func notClientData(dir string) error {
	for _, name := range []string{node.LongTermKeyFile, client.ClientDBFile, webui.SocketFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s is a riffle client's data directory (it holds %s): give the server a directory of its own", dir, name)
		}
	}
	return nil
}

// writeFileAtomic writes data to a temporary file next to path and renames it
// into place, so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
