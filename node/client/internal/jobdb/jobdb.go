// Package jobdb is what a client keeps on disk of its epoch and its
// shares, beside the client database (store.ClientDB): the pending-epoch
// marker that names the epoch whose sealed onions are stored, so that a
// client restarted after a crash sends them again (docs/protocol.md §5.1
// v2, §5.4), how far back a round's onion is kept, and the resume record
// of an interrupted share (docs/anonymity.md, "What your client's
// behaviour depends on"). It takes no lock: the client calls it from its
// loop and its jobs, as it called the code it replaces.
package jobdb

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// PendingFile is the marker of the epoch whose submissions are stored:
// hex epoch id, space, rounds R.
const PendingFile = "pending-epoch"

// MarkPending writes the marker of epoch id of rounds R into dir.
func MarkPending(dir string, id [32]byte, R int) error {
	line := hex.EncodeToString(id[:]) + " " + strconv.Itoa(R) + "\n"
	return os.WriteFile(filepath.Join(dir, PendingFile), []byte(line), 0o600)
}

// DropPending removes the marker.
func DropPending(dir string) { os.Remove(filepath.Join(dir, PendingFile)) }

// Pending reads the marker of dir: the epoch and its rounds, ok false if
// there is none. A marker that does not parse is removed.
func Pending(dir string) (id [32]byte, R int, ok bool) {
	raw, err := os.ReadFile(filepath.Join(dir, PendingFile))
	if errors.Is(err, os.ErrNotExist) {
		return id, 0, false
	}
	f := strings.Fields(string(raw))
	idb, err1 := hex.DecodeString(field(f, 0))
	R, err2 := strconv.Atoi(field(f, 1))
	if err != nil || err1 != nil || err2 != nil || len(idb) != 32 || R < 1 || R > proto.MaxRounds {
		DropPending(dir)
		return id, 0, false
	}
	copy(id[:], idb)
	return id, R, true
}

func field(f []string, i int) string {
	if len(f) > i {
		return f[i]
	}
	return ""
}

// KeepFrom is the first round whose onion is kept once round r's is
// stored, in an epoch of pace W: rounds more than W+2 behind have final
// lists (§5.1: round r+1+W is sealed once round r+1's list is final), so
// their onions are never sent again.
func KeepFrom(r uint32, W int) uint32 {
	if behind := uint32(W) + 2; r > behind {
		return r - behind
	}
	return 0
}

// Resumable is the resume record of a share, found or to be made.
type Resumable struct {
	Key     *[32]byte // nil: no database, nothing is kept
	Found   bool
	Link    string
	FileKey []byte // a private file's key, from the recorded link
	States  map[store.ID]uint8
}

// PrivateKey is the record key of a private share: a hash of the
// plaintext, the chunk size b and the name.
func PrivateKey(plain []byte, name string, b int) [32]byte {
	sum := sha256.Sum256(plain)
	h := sha256.New()
	h.Write([]byte("riffle/share-resume/private"))
	h.Write(sum[:])
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(b)))
	h.Write([]byte(name))
	return [32]byte(h.Sum(nil))
}

// Find looks up the record under key in db (nil: none).
func Find(db *store.ClientDB, key [32]byte, private bool) Resumable {
	if db == nil {
		return Resumable{}
	}
	res := Resumable{Key: &key}
	link, states, ok, err := db.ResumeShare(key)
	if err != nil || !ok {
		return res
	}
	if private {
		l, err := chunker.ParseLink(link)
		if err != nil || l.Key == nil {
			return res
		}
		res.FileKey = l.Key[:]
	}
	res.Found, res.Link, res.States = true, link, states
	return res
}
