package node

import (
	"github.com/riffle-net/riffle/node/internal/chunks"
	"github.com/riffle-net/riffle/store"
)

// The server's store is package node/internal/chunks; these are its names
// in node's API.

// IndexEntry is one file of the public index (§7): its id (the root
// manifest's chunk id), what the manifest says, and the epoch, round and
// time of its first publication. The index a client fetches does not carry
// the epoch (docs/proto-node.md): a client's entries have Epoch zero.
type IndexEntry = store.IndexEntry

// ChunkStore is what a server keeps (§7), chunks.Store.
type ChunkStore = chunks.Store

// StoreOptions are the operator's storage settings (§7): quota and
// retention, passed to the bbolt store.
type StoreOptions = store.Options

// ErrNoChunk is returned for a chunk the store does not hold.
var ErrNoChunk = chunks.ErrNoChunk

// NewMemStore returns an in-memory ChunkStore (tests, the demo).
func NewMemStore() ChunkStore { return chunks.NewMemStore() }
