// Package netdir keeps a client data directory's state to one network
// (docs/anonymity.md, principle 1; the long-term key of docs/protocol.md
// §4.1 is part of it): the files of another network move aside, whole,
// into DIR/networks/<name>/, and the files kept for a network come back
// when the directory is used on it again. Nothing is deleted. A network
// is known by its servers: a kept directory lists them, and a chain that
// shares a server with the list is that network. Binding holds the
// database opened at start back until the first chain says which network
// this is. It takes no lock: the client's loop drives it (node/client's
// netbind.go).
package netdir

import (
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
)

// NetworksDir holds, in a client data directory, the state of the other
// networks the directory was used on, one directory each.
const NetworksDir = "networks"

// ServersFile lists, in a kept network's directory, its servers' peer
// ids, one a line.
const ServersFile = "servers"

// MaxKept bounds the directories looked at for a network's state.
const MaxKept = 256

// MoveAside moves files of dir into a new directory under NetworksDir,
// named after servers, and returns it.
func MoveAside(dir string, files []string, servers []peer.ID) (string, error) {
	base := filepath.Join(dir, NetworksDir)
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
		if !errors.Is(err, fs.ErrExist) || i > MaxKept {
			return "", err
		}
		dst = filepath.Join(base, fmt.Sprintf("%s-%d", name, i))
	}
	if err := proto.WriteFileDurably(filepath.Join(dst, ServersFile), []byte(strings.Join(lines, "\n")+"\n")); err != nil {
		return "", err
	}
	for _, f := range files {
		err := os.Rename(filepath.Join(dir, f), filepath.Join(dst, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return dst, nil
}

// BringBack moves the files kept for the network of chain (a kept
// directory whose servers share one with chain) back into dir and
// removes that directory; it returns it ("" if none).
func BringBack(dir string, files []string, chain []peer.ID) (string, error) {
	base := filepath.Join(dir, NetworksDir)
	ents, err := os.ReadDir(base)
	if err != nil {
		return "", nil
	}
	for i, e := range ents {
		if i >= MaxKept {
			break
		}
		if !e.IsDir() {
			continue
		}
		kept := filepath.Join(base, e.Name())
		b, err := os.ReadFile(filepath.Join(kept, ServersFile))
		if err != nil || len(b) > 64<<10 {
			continue
		}
		set := map[peer.ID]bool{}
		for _, s := range strings.Fields(string(b)) {
			if p, err := peer.Decode(s); err == nil {
				set[p] = true
			}
		}
		if !Overlaps(set, chain) {
			continue
		}
		for _, f := range files {
			if err := os.Rename(filepath.Join(kept, f), filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		os.Remove(filepath.Join(kept, ServersFile))
		os.Remove(kept)
		return kept, nil
	}
	return "", nil
}

// PeerSet is the set of the peer ids ids.
func PeerSet(ids [][]byte) map[peer.ID]bool {
	out := make(map[peer.ID]bool, len(ids))
	for _, b := range ids {
		out[peer.ID(b)] = true
	}
	return out
}

// Overlaps reports whether chain has a server of set.
func Overlaps(set map[peer.ID]bool, chain []peer.ID) bool {
	for _, p := range chain {
		if set[p] {
			return true
		}
	}
	return false
}

// SameSet reports whether chain's servers are set's.
func SameSet(set map[peer.ID]bool, chain []peer.ID) bool {
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

// SortedIDs is set's ids, sorted.
func SortedIDs(set map[peer.ID]bool) []peer.ID {
	out := make([]peer.ID, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// ShortIDs is ids as a person reads them.
func ShortIDs(ids []peer.ID) string {
	var s []string
	for _, p := range ids {
		s = append(s, p.ShortString())
	}
	return strings.Join(s, ", ")
}
