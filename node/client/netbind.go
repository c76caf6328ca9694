package client

import (
	"fmt"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/client/internal/netdir"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// A client's data directory is bound to one network. What it keeps of a
// network (the client database: synced index and cursors, decoy window,
// sealed onions, interrupted shares; the pending-epoch marker; the
// long-term key its primaries know it by) is that network's alone: shown
// or used on another, it would list files nobody there can serve and
// send requests, window ids and a key that tie the client to where it was
// before (principle 1 of docs/anonymity.md).
//
// A network is known by its servers: the client database records the
// servers of the last chain taken (store.PutNetwork). An epoch whose
// chain shares no server with the record belongs to another network;
// then the state moves aside, whole, into DIR/networks/<name>/, and the
// state kept there for the network of the new chain, if any, comes back.
// Nothing is deleted.
//
// The check needs the chain of a checked open descriptor. A client whose
// primary is a server of the record (or whose directory holds no
// network's state) is bound at start; any other waits for the first
// descriptor before it touches its database (Index waits too).

// NetworksDir holds, in a client data directory, the state of the other
// networks the directory was used on, one directory each (netdir).
const NetworksDir = netdir.NetworksDir

// boundFiles are the files of a data directory that belong to its network.
var boundFiles = []string{ClientDBFile, pendingFile, proto.LongTermKeyFile}

// bindAtStart binds the database opened at start, or holds it back until
// the first descriptor says which network this is (netdir.Binding).
func (c *Client) bindAtStart() {
	c.bind = netdir.NewBinding(c.cfg.DataDir, boundFiles)
	var rec [][]byte
	if c.db != nil {
		var err error
		if rec, err = c.db.Network(); err != nil {
			c.log.Warn("network record unreadable; taking the data directory as this network's", "err", err)
		}
	}
	c.db = c.bind.Start(c.db, rec, c.primary)
}

// bindNetwork binds the data directory to the network of chain (a
// checked open descriptor's), once, and records chain as its servers.
// It runs on the client's loop, before anything of the epoch uses the
// database.
func (c *Client) bindNetwork(chain []peer.ID) {
	if db, same, first := c.bind.Take(chain); first {
		if !same {
			db.Close()
			db = c.switchNetwork(chain)
		}
		c.setDB(db)
		c.bind.MarkBound()
	}
	if c.db == nil || c.bind.Recorded(chain) {
		return
	}
	ids := make([][]byte, 0, len(chain))
	for _, p := range chain[:min(len(chain), store.MaxNetworkServers)] {
		ids = append(ids, []byte(p))
	}
	if err := c.db.PutNetwork(ids); err != nil {
		c.log.Warn("record the network", "err", err)
		return
	}
	c.bind.Record(ids)
}

// setDB installs the bound database (the synced copy reads it under its lock).
func (c *Client) setDB(db *store.ClientDB) {
	c.icopy.Lock()
	c.db = db
	c.icopy.Unlock()
}

// switchNetwork moves the state of the recorded network aside, brings
// back the state kept for the network of chain if there is one, says so
// in one line, and opens the database (nil if it cannot).
func (c *Client) switchNetwork(chain []peer.ID) *store.ClientDB {
	line, backErr, err := c.bind.Switch(chain)
	if err != nil {
		// Nothing was moved, or a part: the database stays closed rather
		// than mixing two networks; the client goes on without one.
		c.notice("riffle: this data directory holds the state of another network, and moving it aside failed (%v); going on without the database", err)
		return nil
	}
	if backErr != nil {
		c.log.Warn("bring back a kept network's state", "err", backErr)
	}
	c.notice("%s", line)
	dir := c.cfg.DataDir
	if c.cfg.LongTermKey == nil {
		// The key this network's primaries know the client by (a fresh
		// one for a network it was never on).
		if lt, err := proto.LoadLongTermKey(dir, c.rand); err == nil {
			c.ltKey = lt
		} else {
			c.log.Warn("long-term key", "err", err)
		}
	}
	db, err := store.OpenClient(filepath.Join(dir, ClientDBFile), store.ClientOptions{Logger: c.log})
	if err != nil {
		c.log.Warn("client database unavailable; sealed onions are kept in memory only", "err", err)
		return nil
	}
	if rec, err := db.Network(); err == nil {
		c.bind.Record(rec)
	}
	return db
}

// notice prints a line the user must see, progress or not.
func (c *Client) notice(format string, args ...any) {
	w := c.cfg.Notices
	if w == nil {
		w = c.cfg.Progress
	}
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
	c.log.Warn("notice", "text", fmt.Sprintf(format, args...))
}
