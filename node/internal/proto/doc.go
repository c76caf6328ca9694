// Package proto holds the rules of riffle's protocol (docs/protocol.md)
// that servers and clients share and that need neither a host nor a
// server's or client's state: the domain-separated hashes and their tags,
// the Merkle roots of §5.2 and the Ed25519 signatures of peers
// (docs/proto-node.md). Everything here is a pure function of its
// arguments; package node's server and client build on it.
package proto
