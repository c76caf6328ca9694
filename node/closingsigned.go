package node

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// The one closing proposal a server signs for an epoch (§7 v3, issue 26
// F2) is on disk before its signature leaves (issue 25: every signature
// is persisted before it is sent): a server that crashed after signing
// one record of an epoch and holds the epoch again signs no other.

const (
	// ClosingSignedFile holds, in a data directory, the digest of the
	// closing record this server signed for each recent epoch (JSON).
	ClosingSignedFile = "closing-signed"
	// closingSignedKeep bounds the epochs kept: records are proposed
	// while their epochs are held (closingHold, closingHeld), a few
	// numbers at most; the newest numbers stay.
	closingSignedKeep = 64
)

// closingChoice is the record this server signed for one epoch.
type closingChoice struct {
	Number uint64 `json:"number"`
	Epoch  string `json:"epoch"`  // hex
	Digest string `json:"digest"` // hex
}

// closingSignedState is the server's closing choices (its own lock: disk
// writes without s.mu).
type closingSignedState struct {
	mu     sync.Mutex
	loaded bool
	recs   []closingChoice
}

// loadClosingSigned reads the closing choices on record in dir. A server
// whose file cannot be read does not start (NewServer), rather than refuse
// every closing record of its epochs in silence.
func loadClosingSigned(dir string) ([]closingChoice, error) {
	b, err := os.ReadFile(filepath.Join(dir, ClosingSignedFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("node: closing records signed here unreadable: %w", err)
	}
	var recs []closingChoice
	if err := json.Unmarshal(b, &recs); err != nil {
		// Never sign on a record that may be lost.
		return nil, fmt.Errorf("node: closing records signed here unreadable: %w", err)
	}
	return recs, nil
}

// take records that this server signs the closing record of digest dg
// for epoch (of number), durably, before the signature is made; it
// refuses another digest for an epoch already on record, here or on disk.
func (cs *closingSignedState) take(dir string, number uint64, epoch, dg [32]byte) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.loaded {
		recs, err := loadClosingSigned(dir)
		if err != nil {
			return err
		}
		cs.recs, cs.loaded = recs, true
	}
	e, d := hex.EncodeToString(epoch[:]), hex.EncodeToString(dg[:])
	for _, r := range cs.recs {
		if r.Epoch == e {
			if r.Digest != d {
				return errors.New("node: another closing record of this epoch was signed here")
			}
			return nil
		}
	}
	recs := append(append([]closingChoice(nil), cs.recs...), closingChoice{Number: number, Epoch: e, Digest: d})
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Number < recs[j].Number })
	if len(recs) > closingSignedKeep {
		recs = recs[len(recs)-closingSignedKeep:]
	}
	if err := writeFileSync(filepath.Join(dir, ClosingSignedFile), recs); err != nil {
		return fmt.Errorf("node: closing record not signed: its choice not saved: %w", err)
	}
	cs.recs = recs
	return nil
}
