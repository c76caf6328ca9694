// Package node is riffle's network layer (docs/protocol.md §3–§7): libp2p
// hosts for servers and clients, the roster and chain of §3, the leader-driven epoch
// life (descriptor, registration, the setup chain of §4.2), rounds (§5:
// collect, peel, permute, forward, publish, verify, store, signed request
// lists) and the multi-server PIR of §6 between primaries and their
// clients. Messages are the binary codec of internal/wire; every stream has
// a deadline, a size cap on every read and is reset on error. The byte
// layouts are in docs/proto-node.md.
//
// Logging goes to the *slog.Logger of the configuration (quiet when nil)
// and never ties a client to a slot, a chunk or a request.
//
// # Files
//
// Discovery and hosts:
//   - host.go: the network of servers and clients that name none (libp2p);
//     the hosts and the identity key of a data directory are transport's.
//   - roster.go: the chain the roster orders, and what the hellos ask
//     of the server; the roster itself (live servers, bounded and
//     pruned, the gossiped candidates, the hello's encoding) and the
//     hellos said and answered (Hellos, Server.hellos) are package
//     internal/roster's, with its own lock (network-free tests).
//   - transport (package transport): the Host seam (libp2p, memnet),
//     protocol ids, framing, the one call path and serve path, the
//     recycled round buffers (BufPool), LAN discovery (mDNS, bounded and
//     backed off; its hello is roster.go's), and each protocol's read caps,
//     replies and accepted types, from wire's message table (its package
//     doc lists its files).
//   - internal/proto (package proto): the rules both sides share, pure
//     functions: tagged hashes, Merkle roots and peer signatures, the
//     parameter bounds and checks, the epoch id, the client selection and
//     its commit-reveal, the long-term key, the request list's cut, the
//     certificates' digests and checks, the receipts', the view of an
//     epoch and the checks of descriptors, registrations and request
//     lists (its package doc lists its files).
//   - protonames.go: the names by which node's files use what moved to
//     internal/proto and transport; they go when the server moves.
//
// Server:
//   - server.go: Server, its configuration and life cycle. Server.mu
//     guards the epochs and rounds; the components below own their state
//     and lock, and their methods take no s.mu: the certificates
//     (internal/certs), the index and its serving (internal/index), the
//     window's items and the walk last checked (internal/window), a
//     duplicate's routes (internal/dupwalk), the
//     long-term key records (internal/ltkeys), the
//     evidence log (internal/chargelog), the
//     culprit servers (internal/roundblame.Excluded), who
//     may serve (internal/eligible) and the reply slots (the index's,
//     the window's and the servers', internal/slots, and the long polls'
//     gate, internal/polls).
//   - the check of a batch's client signatures (§5.1, §5.2) is
//     internal/roundstep's CheckClientSigs; the view of an epoch and the
//     checks both sides run on it are internal/proto's checks.go.
//   - epoch.go: a server's state of one epoch (sepoch), its end and erasure.
//   - rotate.go: the leader rotation (§3 v3), rotation (Server.turn):
//     the turn taken each tick, the timeout voted, an epoch another
//     leader left unclosed ended; its state under s.mu. leader.go: its
//     loop, and the server as an epoch led here sees it (leadHost).
//   - internal/leader (package leader): an epoch led here (Leading: its
//     chain, number and id) prepared, opened, closed and finalised, or
//     aborted, over leader.Host; network-free tests.
//   - internal/selection (package selection): the primaries' signed
//     orders, the leader's candidates and the check of its selection
//     (§3 v3), over internal/proto's bounded.go and reveal.go; pure
//     functions, network-free tests.
//   - dispatch.go: the epoch and round protocols' messages, each to the
//     part that takes it.
//   - epoch_handlers.go: the epoch protocol's handlers on every server;
//     a Prepare's first checks (its parameters, its chain and who is in
//     it) are package internal/prepare's, a function of the Prepare and
//     of the group's facts with network-free tests.
//   - setup.go: the setup chain of verifiable shuffles (§4.2), this
//     server's part of it the methods of settingUp (the epoch's state
//     under s.mu, the rest of the server through setupHost); a signed
//     step that does not verify names its server; a step computed, signed
//     and checked is package internal/setupstep's (no I/O, network-free
//     tests).
//   - blame.go, departure.go: share faults at setup, departed clients;
//     a duplicate share (§4.1) is package internal/dupwalk's: the walk
//     of its two positions back to their slots, the abort, its
//     signatures and the clients' answers (their own locks) and their
//     handlers (Service), the verdict's rules blame's (dup.go);
//     network-free tests. dupwalk.go: what it asks of the server
//     (dupHost) and the peers left out after one. A share fault's walk
//     is that walk with one start.
//   - roundblame.go, roundblame_after.go, deadslot.go: round blame (§8):
//     a blame started (an accusation sent or taken, a bad payload), a
//     step served, the culprit named, recorded and excluded, a named
//     client's slot dead for the rest of the epoch. A blame's run (an
//     accusation taken, a bad payload, a second onion; the walk back,
//     the culprit named, the dead slot's forward reveal, the settling),
//     the answers to the chain's asks for steps, an epoch's blames and
//     dead slots (Blames), the culprit servers (Excluded, its own lock)
//     and the checks of each step and of the evidence sent without a
//     walk are package internal/roundblame's (Service over blameHost;
//     the checks functions of the epoch's public values; network-free
//     tests).
//   - handover.go: a leaving client's cover onions checked and submitted
//     in their rounds (§5.4 v3); the queue, bounded a slot, is package
//     internal/handover's (no I/O, no lock: s.mu guards it; network-free
//     tests).
//   - internal/evidence (package evidence): the aborts of §3 signed,
//     checked, held for the final descriptor, relayed once and charged;
//     evidence logged, spread to the chain and taken from it; a
//     leader's budget evidence; delivery with back-off (§8). Service
//     over evidenceHost (evidence.go, which also ends an epoch for an
//     unfilled round or a missing publication); network-free tests.
//   - internal/chargelog (package chargelog): the evidence log of §3,
//     one record a claimant's slot, each charge a function of the
//     evidence and its number's certificate, the refusal budget's counts
//     and the aborts seen; its own lock, network-free tests.
//   - attest.go: when a round's parts are due here and what this server
//     attests; held.go: a primary's receipts and dry statements,
//     silent.go: its accounts of a round and the attestations of a
//     primary that gave none (§5.4).
//   - internal/blame (package blame): the verdicts as functions of signed evidence
//     and public state, without I/O: the charge of a piece of evidence and
//     the log's replay (§3), round blame's Merkle paths and digests (§8),
//     the start of a share fault's walk (§4.2); its package doc lists its
//     files.
//   - serverdown.go: a server whose connection drops and that does not
//     answer leaves the roster and ends its epochs (the abort saying so
//     and its attestations: internal/evidence's down.go).
//   - internal/signed (package signed): what this server signed, kept
//     so that it never signs both the timeout and the final descriptor of
//     a number (the marks, on disk first), and the amnesia of a server
//     that lost its records (§3); network-free tests. equivocation.go:
//     the equivocations a pair of certificates shows, charged;
//     amnesia.go: the founders asked whether they hold any certificate.
//   - internal/eligible (package eligible): who may serve with this
//     server (§3 v3): the operator's pins, probation, the founders, the
//     chains signed and the withdrawals; its own lock, network-free
//     tests. eligible.go: what the chains read of the server (memberHost),
//     a refused Prepare's withdrawal.
//   - internal/members (package members): who serves with this server
//     (§3 v3), Chains (Server.members): the chain ordered from the roster
//     for a number, the group chain the leader rotation runs over, the
//     chain derived from the certificate of the number before, and
//     whether a peer is a server of the group; no state and no lock of its
//     own (the roster's, eligible's and the certificates' locks), no I/O,
//     network-free tests.
//   - internal/wouldserve (package wouldserve): a Prepare that leaves out
//     a server of the last certificate, and the would-serve question
//     asked of it and answered (§3 v3), Service (Server.would); no state
//     or lock of its own (the window's, the slots' and the chains'),
//     network-free tests. derive.go: the service made (newWouldServe).
//   - internal/certs (package certs): certified epoch numbers (§3 v3):
//     final, abort and timeout certificates kept, one a number by
//     precedence, each fitting the group the one below it certifies
//     (their digests and checks are internal/proto's); timeout votes
//     taken and counted; the catch-up from roster servers and the pushes
//     of a better certificate; the epoch number's bounds and file; its
//     own lock, network-free tests. certs.go: what it asks of the server,
//     and the final and abort certificates made here; certvotes.go: a
//     timeout vote signed and sent.
//   - internal/peers (package peers): who asks, checked before costly
//     work (§3), Who (Server.peers): a server of the roster or of a chain
//     held here, a client registered here, a peer's address range, the
//     caps of the server protocols by sender, a long poll's admission
//     (package internal/polls: per peer, outsiders, in all; its own
//     lock) and a group server's reply slot; no state or lock of its
//     own, no I/O, network-free tests. asker.go: what it reads of the
//     epochs (peerEpochs), a descriptor's sender checked, each
//     protocol's caps by type.
//   - censor.go: request lists that omit a requested id held here.
//   - round.go: a server's state of one round (sround) and its window.
//   - intake.go: client protocol: its dispatch; the intake of onions,
//     submissions (Server.submits), with handover.go: the round state
//     under s.mu, the rest of the server through submitHost.
//   - internal/registry (package registry): a server's registration of
//     one epoch (§3 v3, §4.1): the keys and entry a Prepare's answer
//     draws, the Prepare's commitments and the open
//     descriptor's check against them, the deadline and the close, the
//     registrations forwarded and receipted here, the leader's list and
//     the final descriptor's checks against them, a primary's own
//     registrations and its signed list (its own lock, no I/O); and the
//     registration's handlers (Service: a client's registration, held
//     to the admission order and fanned out for receipts, the client's
//     waits and receipts; the forwards, the close and the leader's list
//     at a chain server), over what they ask of the server (Host);
//     network-free tests. registration.go: the host (regHost).
//   - internal/intake (package intake): a primary's registrations of one
//     epoch, the bounds before their proofs (per address range, first-time
//     keys) and the admission order (§3, §8, §5.4); no I/O and no lock
//     (registry's guards its Table), network-free tests.
//   - mixing.go: the mix path, mixer (Server.mixing): S_0's round driver,
//     peel, permute, forward, batches between servers; the round state
//     under s.mu, the rest of the server through mixHost;
//     the layer buffers reused round after round are package
//     internal/layerbufs's (its own lock, network-free tests).
//   - roots.go: signed batch roots and their equivocation check (§5.2);
//     the Merkle root of a published batch.
//   - lack.go: a missing input batch, fetched from the predecessor or
//     relayed by the chain, or claimed: its void is the signer's if
//     nobody got it, else the claimant's (§5.2 v3).
//   - relay.go: the noted server's side of a relayed batch: the note, its
//     bounds, the fetch from the signer, when a noted batch counts as
//     missing (§5.2 v3).
//   - internal/index (package index): the index and what serves it
//     (§6, §7), one type, Index (Server.ix): the store and its
//     retention, the manifests a round adds, the index pages, PIR, the
//     publications kept for the chain and the catch-up, each part a
//     package of its own below, with its own lock; network-free tests.
//   - internal/catchup (package catchup, Index.Catch): server catch-up
//     (§7): the closing records, lists and chunks this server lacks,
//     from the group's index logs, each checked against its certified
//     chain's signatures; its own lock, network-free tests. catchup.go:
//     what it asks of the server, and the lists held here for a server
//     catching up.
//   - pubfetch.go: what the fetches of a publication the last server
//     left a chain server without ask of the server (pubHost); the
//     publications kept for the chain, served and fetched from one that
//     holds them (§3), are package internal/pubfetch's (Index.Pub,
//     Server.pub; sepoch.pubs, its own lock; network-free tests).
//   - publish.go: publication, request lists proposed and signed (§5.3).
//   - roundstep.go: the batch, mix and publish steps, pure functions of round
//     state and one event returning their effects; the drivers above do the I/O.
//     The steps that read no round state (a batch's head and root, a
//     layer's fault, sealing, reading a publication, the published root,
//     the request list proposed, checked for censorship and signed) are
//     package internal/roundstep's (no I/O, no lock, network-free tests).
//   - closing.go: the closing record of an epoch, signed by every chain
//     server and logged in the index log (§5.2, §7 v3): proposed, signed,
//     sent and stored by the methods of closings (Server.closing), the
//     rest of the server through closingHost. The steps are package
//     internal/closing's (network-free tests): the record stated, a
//     proposal checked and a record's wholeness over the rounds held
//     here; each epoch's record signed and its signatures (sepoch.closing,
//     its own lock); the one record signed for each epoch, on disk first
//     (closing.Signed, its own lock).
//   - window.go: the lists an epoch's decoy pool is drawn from, and who
//     a peer asking for the window is (winPeers, §6.3 v3);
//     window_prepare.go: the window a Prepare pins, held before a member
//     answers.
//   - internal/window (package window): the window's items a server
//     keeps by record digest and the walk it serves for a number, the
//     window a leader pins and every member checks and holds before it
//     signs, the rules of a pinned window and of the gap that carries
//     the walk past a timeout, and the decoy pool as a function of the
//     lists (§6.3 v3); its own leaf lock, network-free tests.
//   - manifests.go: the manifests the index takes (§6.4 v3), noted in
//     the rounds' request lists; what it takes, within the caps per
//     pseudonym and per round, the ids each round took (sepoch.man, its
//     own lock) and their storing are package internal/manifests's,
//     driven by internal/index.
//   - indexserve.go: who a peer is, for the index pages served to any
//     peer and to the group's servers (§7 v3), which are package
//     internal/indexserve's (Index.Pages; network-free tests);
//     internal/slots (package slots): the reply slots of
//     index pages, windows and would-serve fetches, each table with a
//     peer's and an address range's share (its own leaf locks, no I/O,
//     network-free tests).
//   - pirserve.go: what PIR serving asks of the server (pirHost), the
//     index made (newIndex) and the round's PIR driver; the serving itself (§6.3: padded answers made and
//     sent, a client's query taken and answered, the others' padded
//     answers checked and combined) is package internal/pirserve's
//     (Index.PIR), each
//     epoch's rounds' state under its own lock (sepoch.pir), over package
//     internal/pirround's Round (no I/O, network-free tests).
//   - internal/chunks (package chunks): the server's chunk store (§7), in
//     bbolt or in memory, with the rounds' pairs and the epochs' closing
//     records (its package doc lists its files; Index.Store,
//     Server.store); chunkstore.go: its names in node's API (ChunkStore,
//     NewMemStore).
//   - bench.go: in-process benchmark of a whole network (riffle bench).
//   - internal/strikes (package strikes): a primary's strikes against its
//     clients, by peer id and address, bounded (§8 "After a blame"); no
//     I/O and no lock (s.mu guards it), network-free tests;
//     roundblame_after.go stores and loads its records.
//   - ltexclude.go: a primary's record of its clients' ends (§5.4); the
//     exclusion by long-term key after a blame (§8) is internal/evidence's
//     keys.go; the records, with their own lock, are package
//     internal/ltkeys's (network-free tests).
//   - snapshot.go: a read-only snapshot of a server, for local views
//     (the web UI).
//   - server_status.go: Status, and what the watch samples of the server
//     (watchSampler); the watch loop, which logs the roster's changes,
//     and what it keeps between samples (roster as logged, round timing)
//     are package internal/status's (its own lock, network-free tests).
//
// Client: package node/client (its package doc lists its files); node's
// tests reach it through clientnames_test.go and
// clientnames_riffletest_test.go, aliases of its exported names.
//
// Tests:
//   - hooks.go: the tests' hook points, empty and inlined away in the
//     binary, methods of two views of the server (hookpoints.go: hookCfg,
//     what a test configured; hookRun, what it set on a running server),
//     not of Server; hooks_riffletest.go, observe.go (the observers through which
//     the anonymity tests' linking adversary sees what servers see) and
//     cheat.go hold the hooks, built only with the tag riffletest.
//
// The tests that need hooks carry the riffletest build tag, which `make
// test` sets; `go test ./...` without it still compiles and leaves them out.
package node
