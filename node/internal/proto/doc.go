// Package proto holds the rules of riffle's protocol (docs/protocol.md)
// that servers and clients share and that need neither a host nor a
// server's or client's state: each is a pure function of its arguments,
// and package node's server and client build on them. The byte layouts
// are in docs/proto-node.md.
//
//   - hash.go: the domain tags, the tagged hash, the Merkle roots of §5.2
//     and the Ed25519 signatures of peers' identity keys.
//   - params.go: the bounds on an epoch's parameters and the group pace
//     (§3, §5 v3), the limits they put on every message, the check that a
//     round's PIR work fits its limit (§9), the epoch id (§3), the
//     registration digest (§4.1) and the check of the servers' X25519 keys
//     (§6.2).
//   - bounded.go: the bounded leader's group constants and the client
//     selection with per-primary quotas (§3 v3).
//   - reveal.go: the commit-reveal of r_j that orders the selection
//     beyond the quotas (§3 v3).
//   - ltkey.go: a client's long-term key, what it signs at a registration
//     and what a primary signs when it forwards one (§3, §5.4, §8).
//   - certs.go: the digests servers sign for an epoch number's open and
//     final descriptors, its timeout votes and aborts, and the checks of a
//     certificate (§3 v3 "Epoch numbers and leaders"), which a client runs
//     on the certificate a descriptor carries.
//   - receipts.go: what a server signs for a registration it took and the
//     checks of those receipts (§3 v3), which its client runs when it
//     fetches them; the digest of a duplicate-share abort (§4.1).
//   - checks.go: the View of an epoch that anyone derives from a checked
//     descriptor, the digests its servers sign, and the checks of a signed
//     descriptor, of registrations (one by one and batched, §4.1) and of a
//     request list's signatures (§5.3).
//   - closing.go: the signed closing record's digest and its check
//     against the epoch's chain (§6.3 v3).
//   - pool.go: an epoch's decoy pool, sampled under its closing record,
//     and the decoy rate and window (§6.3 v3).
//   - manifests.go: manifests in the index: the caps, what parses as one,
//     a synced index (§7).
//   - consts.go: the hand-over cap (§5.4 v3), the waiting client's state
//     period, the busy window refusal.
//   - groupparams.go: the group's constants a leader publishes (Params,
//     §3) and a new leader's defaults.
//   - tunables.go: a node's own timeouts and periods (Tunables), which
//     only tests and embedders change.
//   - cost.go: what a group costs a client and a server, from its
//     constants alone (docs/operator.md).
//   - checkpoints.go: an epoch's checkpoint rounds (§6.4 v3).
//   - window.go: the walk back from an open descriptor to the decoy
//     window it pins, past a timeout through the descriptor's gap, each
//     epoch's record and pool checked (§6.3 v3).
//   - files.go: the durable write of a data directory's files.
//   - status.go: the chain entry servers and clients report.
//   - listcut.go: the request list's round-robin cut and its (position,
//     entry) pairs (§5.3, §6.3 v3).
//
// Error messages keep the "node:" prefix they had in package node.
package proto
