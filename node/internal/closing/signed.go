package closing

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// The one closing proposal a server signs for an epoch (§7 v3, issue 26
// F2) is on disk before its signature leaves (issue 25: every signature
// is persisted before it is sent): a server that crashed after signing
// one record of an epoch and holds the epoch again signs no other.

const (
	// File holds, in a data directory, the digest of the closing record
	// this server signed for each recent epoch (JSON).
	File = "closing-signed"
	// Keep bounds the epochs kept: records are proposed while their
	// epochs are held, a few numbers at most; the newest numbers stay.
	Keep = 64
)

// Choice is the record this server signed for one epoch.
type Choice struct {
	Number uint64 `json:"number"`
	Epoch  string `json:"epoch"`  // hex
	Digest string `json:"digest"` // hex
}

// Signed is the server's closing choices (its own lock: disk writes
// without the server's).
type Signed struct {
	mu     sync.Mutex
	loaded bool
	recs   []Choice
}

// Loaded makes s hold recs, as read from its directory.
func (s *Signed) Loaded(recs []Choice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs, s.loaded = recs, true
}

// Load reads the closing choices on record in dir. A server whose file
// cannot be read does not start, rather than refuse every closing record
// of its epochs in silence.
func Load(dir string) ([]Choice, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("node: closing records signed here unreadable: %w", err)
	}
	var recs []Choice
	if err := json.Unmarshal(b, &recs); err != nil {
		// Never sign on a record that may be lost.
		return nil, fmt.Errorf("node: closing records signed here unreadable: %w", err)
	}
	return recs, nil
}

// Take records that this server signs the closing record of digest dg
// for epoch (of number), durably, before the signature is made; it
// refuses another digest for an epoch already on record, here or on disk.
func (s *Signed) Take(dir string, number uint64, epoch, dg [32]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		recs, err := Load(dir)
		if err != nil {
			return err
		}
		s.recs, s.loaded = recs, true
	}
	e, d := hex.EncodeToString(epoch[:]), hex.EncodeToString(dg[:])
	for _, r := range s.recs {
		if r.Epoch == e {
			if r.Digest != d {
				return errors.New("node: another closing record of this epoch was signed here")
			}
			return nil
		}
	}
	recs := append(append([]Choice(nil), s.recs...), Choice{Number: number, Epoch: e, Digest: d})
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Number < recs[j].Number })
	if len(recs) > Keep {
		recs = recs[len(recs)-Keep:]
	}
	b, err := json.Marshal(recs)
	if err == nil {
		err = proto.WriteFileDurably(filepath.Join(dir, File), b)
	}
	if err != nil {
		return fmt.Errorf("node: closing record not signed: its choice not saved: %w", err)
	}
	s.recs = recs
	return nil
}
