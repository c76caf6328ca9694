package client

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
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
const (
	ClientDBFile = "client.db"
	pendingFile  = "pending-epoch" // hex epoch id, space, rounds R
)

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
func (c *Client) keepSubmission(e *cepoch, sub *wire.Submit, mark *store.ShareMark) error {
	if c.db == nil {
		return nil
	}
	if !e.marked {
		line := hex.EncodeToString(e.v.ID[:]) + " " + strconv.Itoa(int(e.v.Desc.Params.Rounds)) + "\n"
		if err := os.WriteFile(filepath.Join(c.cfg.DataDir, pendingFile), []byte(line), 0o600); err != nil {
			return fmt.Errorf("node: mark pending epoch: %w", err)
		}
		e.marked = true
	}
	// Rounds more than W+2 behind this one have final lists (§5.1: round
	// r+1+W is sealed once round r+1's list is final): their onions are
	// never sent again, so they leave the file now, not at the epoch's end.
	keepFrom, behind := uint32(0), uint32(e.v.Desc.Params.W)+2
	if sub.Round > behind {
		keepFrom = sub.Round - behind
	}
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
	os.Remove(filepath.Join(c.cfg.DataDir, pendingFile))
}

// resendPending sends again the stored submissions of an epoch that a
// crash interrupted; the primary acknowledges identical bytes and refuses
// rounds of an epoch that is over, which is fine either way.
func (c *Client) resendPending(ctx context.Context) {
	if c.db == nil {
		return
	}
	raw, err := os.ReadFile(filepath.Join(c.cfg.DataDir, pendingFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	f := strings.Fields(string(raw))
	var id [32]byte
	idb, err1 := hex.DecodeString(f0(f))
	R, err2 := strconv.Atoi(f1(f))
	if err != nil || err1 != nil || err2 != nil || len(idb) != 32 || R < 1 || R > proto.MaxRounds {
		os.Remove(filepath.Join(c.cfg.DataDir, pendingFile))
		return
	}
	copy(id[:], idb)
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

func f0(f []string) string {
	if len(f) > 0 {
		return f[0]
	}
	return ""
}

func f1(f []string) string {
	if len(f) > 1 {
		return f[1]
	}
	return ""
}
