package proto

import (
	"crypto/sha256"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/store"
)

// Manifests in the index (§7): the caps and what counts as one.

const (
	// ManifestsPerPseudonym is c: a pseudonym's candidates in an epoch.
	ManifestsPerPseudonym = 4
	// IndexCeilingBytes bounds the manifest bytes the index takes per R
	// rounds, however many publish: 256 chunks at the default b, so that
	// at n = 200 a manifest chunk of every client fits one epoch.
	IndexCeilingBytes = 64 << 20
	// MaxIndexItems bounds the entries, and the manifests, of a client's
	// synced copy of the index (each page is bounded by its reply cap).
	MaxIndexItems = 1 << 20
)

// A pool names every manifest id an epoch's lists name: at most the
// ceiling at the smallest chunk, plus one (node/internal/manifests'
// IndexBudget).
const _ = uint(wire.MaxPoolManifests - (IndexCeilingBytes/MinChunkSize + 1))

// SyncedManifests checks the manifests of a synced index: each must parse;
// its id is the SHA-256 of its bytes. Others are dropped.
func SyncedManifests(raw [][]byte) map[[32]byte][]byte {
	out := make(map[[32]byte][]byte, len(raw))
	for _, b := range raw {
		if _, err := chunker.DecodeManifest(b); err != nil {
			continue
		}
		out[sha256.Sum256(b)] = b
	}
	return out
}

// IsManifest reports whether a chunk parses as a manifest, as the servers
// decide it.
func IsManifest(chunk []byte) bool {
	if !chunker.IsManifest(chunk) {
		return false
	}
	_, err := chunker.DecodeManifest(chunk)
	return err == nil
}

// IndexFromWire is a received index; its entries have Epoch zero.
func IndexFromWire(idx []wire.IndexEntry) []store.IndexEntry {
	out := make([]store.IndexEntry, len(idx))
	for i, e := range idx {
		out[i] = store.IndexEntry{FileID: e.FileID, Name: string(e.Name), Size: e.Size, Chunks: e.Chunks, Round: e.Round, Time: time.Unix(e.Time, 0)}
	}
	return out
}

// IndexCeiling is the byte ceiling in manifest chunks of b bytes per R
// rounds.
func IndexCeiling(b uint32) int { return max(1, IndexCeilingBytes/int(max(b, 1))) }

// IndexCap is the most manifest chunks the index takes per R rounds from
// p distinct publishers: min(c × p, the byte ceiling).
func IndexCap(p int, b uint32) int { return min(ManifestsPerPseudonym*p, IndexCeiling(b)) }
