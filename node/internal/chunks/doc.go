// Package chunks is what a server keeps (docs/protocol.md §7): the chunks
// and index of published rounds, the rounds' request lists and pairs, the
// epochs' closing records and window items, and the index log that the
// catch-up reads. Store is the interface the server uses; BoltStore
// adapts package store (bbolt, in the data directory) to it and MemStore
// keeps it in memory for tests and the demo. It knows nothing of the
// network.
//
//   - chunkstore.go: Store, the in-memory MemStore and its index log.
//   - chunkstore_demand.go: the rounds' pairs, closing records, window
//     items, final lists and catch-up cursors of both stores.
//   - bolt.go: BoltStore and OpenStore (server.db in the data directory).
//   - records.go: the bbolt store's long-term key, blame and client strike
//     records.
//   - seam.go: the tests' view of a MemStore (ForgetChunks, Sizes).
package chunks
