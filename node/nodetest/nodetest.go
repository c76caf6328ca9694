// Package nodetest holds the test-only helpers over node/localnet, the
// in-process network on 127.0.0.1: New (a network closed when the test
// ends), Virtual (one in virtual time) and RandBytes. It imports testing,
// so only tests import it: the riffle binary uses localnet directly
// (TestBinaryDeps in cmd/riffle).
package nodetest

import (
	"context"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/riffle-net/riffle/node/localnet"
)

// The network's types and defaults, as localnet has them: node's tests
// name them here.
type (
	Config = localnet.Config
	Net    = localnet.Net
)

// DefaultServers is localnet.DefaultServers.
const DefaultServers = localnet.DefaultServers

// Start is localnet.Start.
func Start(ctx context.Context, cfg Config) (*Net, error) { return localnet.Start(ctx, cfg) }

// Logger is localnet.Logger: quiet unless RIFFLE_DEBUG is set.
func Logger() *slog.Logger { return localnet.Logger() }

// New starts a network for a test: its data under t.TempDir(), the logger
// of Logger when cfg has none, closed when the test ends; a failure to
// start fails the test.
func New(t testing.TB, cfg Config) *Net {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	n, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// RandBytes returns n random bytes.
func RandBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// RealTime is the context of a test's wait on real processes or sockets:
// it ends a minute before the test binary's -timeout, or after d when the
// binary has none. How long real servers take depends on the machine's
// load (at load 45, 3 servers and 8 clients on loopback shared 7 % of a
// core); what the test checks is that the network finishes, and the
// margin leaves time to fail with a message rather than a dump.
func RealTime(t testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := tt.Deadline(); ok && time.Until(end) > d+time.Minute {
			return context.WithDeadline(context.Background(), end.Add(-time.Minute))
		}
	}
	return context.WithTimeout(context.Background(), d)
}
