package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/riffle-net/riffle/node"
)

// statusFile is written by a running server into its data directory every
// statusEvery: its node.ServerStatus as JSON, read by `riffle status`. The
// server removes it when it stops; a file older than statusStale is left
// by a server that died.
const (
	statusFile  = "status.json"
	statusEvery = 2 * time.Second
	statusStale = 5 * statusEvery
)

// checkPorts refuses listen addresses whose TCP or UDP port another
// process holds. libp2p binds with SO_REUSEPORT, so without this check a
// second server on a used port starts and shares it with the first; a
// plain bind, as here, fails on a port held by anyone.
func checkPorts(listen []string) error {
	for _, s := range listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return fmt.Errorf("listen address %q: %w", s, err)
		}
		// /udp/PORT/quic-v1 is a UDP port: strip what lies above it.
		base, _ := ma.SplitFunc(a, func(c ma.Component) bool {
			return c.Protocol().Code != ma.P_IP4 && c.Protocol().Code != ma.P_IP6 && c.Protocol().Code != ma.P_TCP && c.Protocol().Code != ma.P_UDP
		})
		network, addr, err := manet.DialArgs(base)
		if err != nil {
			continue // not an IP address: libp2p says what is wrong
		}
		if _, port, _ := net.SplitHostPort(addr); port == "0" {
			continue
		}
		switch network {
		case "tcp", "tcp4", "tcp6":
			l, err := net.Listen(network, addr)
			if err != nil {
				return portError(s, err)
			}
			l.Close()
		case "udp", "udp4", "udp6":
			l, err := net.ListenPacket(network, addr)
			if err != nil {
				return portError(s, err)
			}
			l.Close()
		}
	}
	return nil
}

func portError(listen string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen %s: address in use (another riffle server, or another program, holds the port; give another --listen)", listen)
	}
	return fmt.Errorf("listen %s: %w", listen, err)
}

// writeStatus keeps the status file of a running server fresh until ctx
// ends, then removes it.
func writeStatus(ctx context.Context, s *node.Server, dir string) {
	path := filepath.Join(dir, statusFile)
	defer os.Remove(path)
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		b, err := json.Marshal(s.Status())
		if err == nil {
			_ = writeFileAtomic(path, b, 0o600)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// parseSize parses a byte count with an optional unit: B, KiB, MiB, GiB,
// TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000); "" is 0.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number and a unit such as GiB", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	if v*mult >= 1<<62 {
		return 0, fmt.Errorf("size %q too large", s)
	}
	return int64(v * mult), nil
}
