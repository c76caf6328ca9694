package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/jobdb"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// Sealed onions are stored before they are sent (§5.1 v2): the client DB
// keeps each round's signed submission (the Submit frame: onion and
// registration-key signature), and a marker file names the epoch they
// belong to. A client restarted after a crash sends the stored submissions
// of that epoch again, byte for byte, before it joins the next one, so its
// slot stays filled for its cover window (§5.4) and no round is ever sealed
// twice. Nothing secret is stored: the submissions are what the primary
// receives anyway. The stored rounds are dropped at the epoch's end.
const ClientDBFile = "client.db"

// pendingFile is the pending-epoch marker (jobdb).
const pendingFile = jobdb.PendingFile

// openClientDB opens the client DB of cfg.DataDir, or returns nil: another
// riffle process holding it must not stop this one from taking part.
func (c *Client) openClientDB() {
	if c.cfg.DataDir == "" {
		return
	}
	if err := os.MkdirAll(c.cfg.DataDir, 0o700); err != nil {
		c.log.Warn("client data directory", "err", err)
		return
	}
	db, err := store.OpenClient(filepath.Join(c.cfg.DataDir, ClientDBFile), store.ClientOptions{Logger: c.log})
	if err != nil {
		c.log.Warn("client database unavailable; sealed onions are kept in memory only", "err", err)
		return
	}
	c.db = db
}

// keepSubmission stores a round's signed submission before it is sent.
// mark, if any, is the chunk the onion carries, kept as sent in the same
// transaction (share_resume.go).
func (e *cepoch) keepSubmission(sub *wire.Submit, mark *store.ShareMark) error {
	c := e.c
	if c.db == nil {
		return nil
	}
	if !e.marked {
		if err := jobdb.MarkPending(c.cfg.DataDir, e.v.ID, int(e.v.Desc.Params.Rounds)); err != nil {
			return fmt.Errorf("node: mark pending epoch: %w", err)
		}
		e.marked = true
	}
	// Rounds whose onions are never sent again leave the file now, not
	// at the epoch's end.
	keepFrom := jobdb.KeepFrom(sub.Round, int(e.v.Desc.Params.W))
	return c.db.PutOnionMarked(e.v.ID, sub.Round, sub.Marshal(), keepFrom, mark)
}

// dropSubmissions forgets an ended epoch's stored submissions.
func (c *Client) dropSubmissions(id [32]byte) {
	if c.db == nil {
		return
	}
	if _, err := c.db.DropOnions(id); err != nil {
		c.log.Warn("drop stored onions", "err", err)
	}
	jobdb.DropPending(c.cfg.DataDir)
}

// resendPending sends again the stored submissions of an epoch that a
// crash interrupted; the primary acknowledges identical bytes and refuses
// rounds of an epoch that is over, which is fine either way.
func (c *Client) resendPending(ctx context.Context) {
	if c.db == nil {
		return
	}
	id, R, ok := jobdb.Pending(c.cfg.DataDir)
	if !ok {
		return
	}
	sent := 0
	for r := 0; r < R; r++ {
		frame, err := c.db.Onion(id, uint32(r))
		if err != nil {
			continue
		}
		if _, err := c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeSubmit, Body: frame, Timeout: transport.ShortTimeout}); err == nil {
			sent++
		}
	}
	c.log.Info("resent stored submissions of an interrupted epoch", "accepted", sent)
	c.dropSubmissions(id)
}
