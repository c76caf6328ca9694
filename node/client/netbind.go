package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

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
// networks the directory was used on, one directory each.
const NetworksDir = "networks"

// networkServersFile lists, in a kept network's directory, its servers'
// peer ids, one a line.
const networkServersFile = "servers"

// maxKeptNetworks bounds the directories looked at for a network's state.
const maxKeptNetworks = 256

// boundFiles are the files of a data directory that belong to its network.
var boundFiles = []string{ClientDBFile, pendingFile, proto.LongTermKeyFile}

// bindAtStart binds the database opened at start, or holds it back until
// the first descriptor says which network this is.
func (c *Client) bindAtStart() {
	if c.db == nil {
		close(c.bound)
		return
	}
	rec, err := c.db.Network()
	if err != nil {
		c.log.Warn("network record unreadable; taking the data directory as this network's", "err", err)
	}
	c.netRec = peerSet(rec)
	if len(rec) == 0 || c.netRec[c.primary] {
		close(c.bound)
		return
	}
	c.unbound, c.db = c.db, nil
}

// waitBound waits until the data directory is bound to the network.
func (c *Client) waitBound(ctx context.Context) error {
	select {
	case <-c.bound:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return errors.New("node: client closed")
	}
}

// bindNetwork binds the data directory to the network of chain (a
// checked open descriptor's), once, and records chain as its servers.
// It runs on the client's loop, before anything of the epoch uses the
// database.
func (c *Client) bindNetwork(chain []peer.ID) {
	select {
	case <-c.bound:
	default:
		db := c.unbound
		c.unbound = nil
		if overlaps(c.netRec, chain) {
			c.setDB(db)
		} else {
			db.Close()
			c.setDB(c.switchNetwork(chain))
		}
		close(c.bound)
	}
	if c.db == nil || sameSet(c.netRec, chain) {
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
	c.netRec = peerSet(ids)
}

// setDB installs the bound database (Index reads it under syncMu).
func (c *Client) setDB(db *store.ClientDB) {
	c.syncMu.Lock()
	c.db = db
	c.syncMu.Unlock()
}

// switchNetwork moves the state of the recorded network aside, brings
// back the state kept for the network of chain if there is one, says so
// in one line, and opens the database (nil if it cannot).
func (c *Client) switchNetwork(chain []peer.ID) *store.ClientDB {
	dir := c.cfg.DataDir
	old := sortedIDs(c.netRec)
	kept, err := c.moveAside(old)
	if err != nil {
		// Nothing was moved, or a part: the database stays closed rather
		// than mixing two networks; the client goes on without one.
		c.notice("riffle: this data directory holds the state of another network, and moving it aside failed (%v); going on without the database", err)
		return nil
	}
	back, err := c.bringBack(chain)
	if err != nil {
		c.log.Warn("bring back a kept network's state", "err", err)
	}
	msg := fmt.Sprintf("riffle: this data directory held the state of another network (servers %s); it is kept in %s and comes back when this data directory is used on that network again",
		shortIDs(old), kept)
	if back != "" {
		msg += "; the state kept for this network is back from " + back
	}
	c.notice("%s", msg)
	c.netRec = map[peer.ID]bool{}
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
		c.netRec = peerSet(rec)
	}
	return db
}

// moveAside moves the bound files into a new directory under NetworksDir,
// named after the servers, and returns it.
func (c *Client) moveAside(servers []peer.ID) (string, error) {
	base := filepath.Join(c.cfg.DataDir, NetworksDir)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	var lines []string
	for _, p := range servers {
		lines = append(lines, p.String())
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	name := "network-" + hex.EncodeToString(sum[:6])
	dst := filepath.Join(base, name)
	for i := 2; ; i++ {
		err := os.Mkdir(dst, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > maxKeptNetworks {
			return "", err
		}
		dst = filepath.Join(base, fmt.Sprintf("%s-%d", name, i))
	}
	if err := proto.WriteFileDurably(filepath.Join(dst, networkServersFile), []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return "", err
	}
	for _, f := range boundFiles {
		err := os.Rename(filepath.Join(c.cfg.DataDir, f), filepath.Join(dst, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return dst, nil
}

// bringBack moves the files kept for the network of chain (a kept
// directory whose servers share one with chain) back into the data
// directory and removes that directory; it returns it ("" if none).
func (c *Client) bringBack(chain []peer.ID) (string, error) {
	base := filepath.Join(c.cfg.DataDir, NetworksDir)
	ents, err := os.ReadDir(base)
	if err != nil {
		return "", nil
	}
	for i, e := range ents {
		if i >= maxKeptNetworks {
			break
		}
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, networkServersFile))
		if err != nil || len(b) > 64<<10 {
			continue
		}
		set := map[peer.ID]bool{}
		for _, s := range strings.Fields(string(b)) {
			if p, err := peer.Decode(s); err == nil {
				set[p] = true
			}
		}
		if !overlaps(set, chain) {
			continue
		}
		for _, f := range boundFiles {
			if err := os.Rename(filepath.Join(dir, f), filepath.Join(c.cfg.DataDir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		os.Remove(filepath.Join(dir, networkServersFile))
		os.Remove(dir)
		return dir, nil
	}
	return "", nil
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

func peerSet(ids [][]byte) map[peer.ID]bool {
	out := make(map[peer.ID]bool, len(ids))
	for _, b := range ids {
		out[peer.ID(b)] = true
	}
	return out
}

func overlaps(set map[peer.ID]bool, chain []peer.ID) bool {
	for _, p := range chain {
		if set[p] {
			return true
		}
	}
	return false
}

func sameSet(set map[peer.ID]bool, chain []peer.ID) bool {
	if len(set) != len(chain) {
		return false
	}
	for _, p := range chain {
		if !set[p] {
			return false
		}
	}
	return true
}

func sortedIDs(set map[peer.ID]bool) []peer.ID {
	out := make([]peer.ID, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func shortIDs(ids []peer.ID) string {
	var s []string
	for _, p := range ids {
		s = append(s, p.ShortString())
	}
	return strings.Join(s, ", ")
}
