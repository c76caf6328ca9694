package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/chunker"
)

// A get learns its file from the index synced at each epoch's start
// (§6.4 v3). A link that no index lists (a typo that kept the checksum
// valid, a link from before checksums, a share that never finished) would
// wait forever; a get may instead give up once the syncs of a number of
// epochs since it began lacked the file. A file whose share finished is
// listed from the next epoch on, but a server's index may lag its chain's
// by an epoch or two under load (seen in TestCLI), and the first sync
// counted may have begun before the get: DefaultUnlistedEpochs leaves
// room for both.

// DefaultUnlistedEpochs is the bound of a get handed over the control
// socket without one of its own.
const DefaultUnlistedEpochs = 4

// ErrNotListed is wrapped by the error of a get given up because the
// index lacked its file.
var ErrNotListed = errors.New("no such file in the index")

// unlistedKey carries a get's bound in its context.
type unlistedKey struct{}

// WithUnlistedEpochs returns ctx with a get run under it given up once
// the index synced at the start of n epochs since it began lacked its
// file (n 0: no bound, the get waits until ctx ends).
func WithUnlistedEpochs(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, unlistedKey{}, n)
}

func unlistedEpochsOf(ctx context.Context) (int, bool) {
	n, ok := ctx.Value(unlistedKey{}).(int)
	return n, ok && n > 0
}

// unlisted returns the error that ends a get of id when the syncs since
// syncs0 (the count when the get began) that lacked the file reached n;
// the caller saw that the current sync lacks it (c.mu not held).
func (c *Client) unlisted(id chunker.ID, syncs0, n int, bounded bool) error {
	if !bounded {
		return nil
	}
	c.mu.Lock()
	lacked := c.idx.syncs - syncs0
	c.mu.Unlock()
	if lacked < n {
		return nil
	}
	epochs := fmt.Sprintf("%d epochs", lacked)
	if lacked == 1 {
		epochs = "1 epoch"
	}
	return fmt.Errorf("%w: file %s is not in the index synced at the start of %s since this get began", ErrNotListed, id, epochs)
}
