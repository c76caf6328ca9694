package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:  "id",
		Usage: "print a server's peer id and full multiaddrs",
		Description: `Prints the peer id of the identity in --data (creating the identity, mode
0600, if the directory has none), then one full multiaddr a line: the addresses
a running server bound, else those of --listen (default ` + strings.Join(node.DefaultListen, ", ") + `).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "the server's data directory; required"},
			&cli.StringSliceFlag{Name: "listen", Usage: "listen addresses to print when no server is running"},
			verboseFlag(),
		},
		Action: runID,
	})
}

func runID(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	dir := c.String("data")
	if dir == "" {
		return usagef("id needs --data DIR, the server's data directory")
	}
	if err := notClientData(dir); err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(dir, node.IdentityFile))
	priv, err := node.LoadIdentity(dir)
	if err != nil {
		return err
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("peer id of identity key: %w", err)
	}
	addrs, err := runningAddrs(dir)
	if err != nil {
		return err
	}
	if addrs == nil {
		listen := c.StringSlice("listen")
		if len(listen) == 0 {
			listen = node.DefaultListen
		}
		p2p, err := ma.NewComponent("p2p", id.String())
		if err != nil {
			return fmt.Errorf("p2p component of %s: %w", id, err)
		}
		for _, l := range listen {
			a, err := ma.NewMultiaddr(l)
			if err != nil {
				return fmt.Errorf("listen address %q: %w", l, err)
			}
			addrs = append(addrs, a.Encapsulate(p2p.Multiaddr()).String())
		}
	}
	if errors.Is(statErr, os.ErrNotExist) {
		fmt.Fprintf(stderr(c), "created a new identity in %s\n", filepath.Join(dir, node.IdentityFile))
	}
	w := stdout(c)
	fmt.Fprintln(w, id)
	for _, a := range addrs {
		fmt.Fprintln(w, a)
	}
	return nil
}

// runningAddrs reads the addresses a running server wrote into dir; nil if
// no server is running there. Each line must parse as a multiaddr: the file
// is ours, but a damaged one must not be echoed as if it were an address.
func runningAddrs(dir string) ([]string, error) {
	const maxAddrsBytes = 64 << 10
	f, err := os.Open(filepath.Join(dir, addrsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server addresses: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, maxAddrsBytes))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		if _, err := ma.NewMultiaddr(l); err != nil {
			return nil, fmt.Errorf("server address file %s: %q: %w", filepath.Join(dir, addrsFile), l, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read server addresses: %w", err)
	}
	return out, nil
}
