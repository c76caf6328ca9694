// Package blame holds the rules by which servers blame one of their own
// or a client, as functions of signed evidence and public group state: no
// server's own view, clock or network, so that every honest server that
// holds the same bytes reaches the same verdict (docs/protocol.md §3,
// "Charges from evidence"; §4.2 and §8 for setup and round blame).
//
//   - charge.go: the charge of a piece of evidence (a signed abort or void
//     and the absence attestations gathered with it) and the attestations'
//     digest.
//   - due.go: when a round's parts are due at a server, and when a relay
//     note and the batch it fetches count, from the times it saw and the
//     round limit: what a server attests it lacked, the one input here
//     taken from a server's own clock; the charge is then the
//     attestations' (charge.go).
//   - log.go: the evidence log's naming, merging and replay into charges.
//   - round.go: round blame's evidence: Merkle paths of input entries and
//     the digests of accusations, blame steps and drop steps.
//   - setup.go: where the walk back of a share fault starts.
//   - dup.go: a duplicate share at setup (§4.1): the abort's signatures
//     and the two clients' answers, the verdict on them, and the peers
//     left out of the next epoch without a strike.
//   - exclude.go: how long a struck client (peer, address or long-term
//     key) is refused.
//   - held.go: a primary's receipt and its dry statement of one slot
//     (a held onion), and a receipt with the chain's attestations that
//     its primary gave no account of the round (a silent primary, §5.4).
//   - forward.go: a primary's receipt and its forward root of the round
//     without that onion (§5.4).
//   - keynamed.go: an epoch's slots named here and the long-term key
//     evidence for them, each key excluded once (its own lock).
//
// Package node gathers the evidence, keeps the log and applies the
// verdicts; this package does no I/O.
package blame
