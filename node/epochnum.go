package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// Epoch numbers (docs/proto-node.md "Hostile peers and crashes"). A server
// keeps the highest epoch number it signed an open descriptor for, or saw
// certified (certs.go), in its data directory, so that a restart never
// counts from 1 again, and it accepts a proposed number N only in a
// bounded window above it: a leader cannot spend the number space
// (2^64−1 would leave no epoch after it). The certificate of N−1 is the
// first check; these bounds are the second.
const (
	// EpochNumberFile holds the last epoch number in a data directory
	// (decimal, one line), written before this server signs the epoch's
	// open descriptor.
	EpochNumberFile = "epoch-number"
	// maxEpochGap is how far above its last number a server accepts the
	// next one: room for epochs it missed while it was down (2^20 is
	// about a year of 30-second epochs), yet 2^44 epochs before a leader
	// that always jumps the most could exhaust the numbers.
	maxEpochGap = 1 << 20
	// maxFirstEpoch bounds the first number a server with no epoch on
	// record accepts (a new server joining a running group; more than
	// 4,000 years of 30-second epochs).
	maxFirstEpoch = 1 << 32
)

// checkEpochNumber is the rule a server applies to a proposed number n
// when its last is last (0: none on record).
func checkEpochNumber(last, n uint64) error {
	switch {
	case n <= last:
		return fmt.Errorf("node: epoch number %d not above %d", n, last)
	case last == 0 && n > maxFirstEpoch:
		return fmt.Errorf("node: first epoch number %d above %d", n, uint64(maxFirstEpoch))
	case last > 0 && n-last > maxEpochGap:
		return fmt.Errorf("node: epoch number %d more than %d above %d", n, maxEpochGap, last)
	}
	return nil
}

// loadEpochNumber reads the last epoch number of dir (0 if none).
func loadEpochNumber(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, EpochNumberFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("node: read epoch number: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("node: epoch number file %s: %w", filepath.Join(dir, EpochNumberFile), err)
	}
	return n, nil
}

// saveEpochNumber writes n to dir durably: a temporary file, synced, then
// renamed over the old one, so that a crash leaves the old or the new.
func saveEpochNumber(dir string, n uint64) error {
	return proto.WriteFileDurably(filepath.Join(dir, EpochNumberFile), []byte(strconv.FormatUint(n, 10)+"\n"))
}
