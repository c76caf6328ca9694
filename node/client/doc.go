// Package client is riffle's client (docs/protocol.md, the client's side
// of §4.1 registration, §5 rounds and onions, §6 PIR downloads and the
// §6.3 decoys, §7 index sync): it joins an epoch through its primary,
// sends one onion a round whatever its user asks, and fetches what its
// jobs need by PIR, its requests padded with decoys drawn from public
// demand. Servers are package node; the rules both sides share are
// internal/proto's.
//
// # Files
//
//   - client.go: Client, its configuration and main loop. Client.mu
//     guards the queue and the current epoch; the presence count and the
//     epoch notes have locks of their own, taken after it.
//   - client_epoch.go: joining an epoch (oneEpoch, join) and the epoch's
//     steps, methods of its state cepoch: the rounds, submissions, the
//     payload, the confirmation of each round's list, the end (§4.1, §5).
//   - queue.go: the jobs' queue (chunks to upload, files wanted, requests
//     in flight), under Client.mu; its rules are in resend.go (§5.2 v3),
//     presence.go (pauses, §5.4 v3) and client_requests.go (§6.3).
//   - client_requests.go: request slots, PIR queries.
//   - decoys.go: decoys drawn from public demand (§6.3 v3).
//   - window_client.go: the group's decoy window, asked of every chain
//     server (§6.3 v3).
//   - resend.go: chunks a round did not publish, and the window's
//     closing records that settle them across epochs (§5.2 v3; the rule:
//     internal/resend).
//   - client_anon.go: the minimum anonymity set a client accepts (§3 v3;
//     the count: internal/anonset).
//   - group.go, client_budget.go: a group's worst case against the
//     client's budget (internal/meter); chains that dropped a server for
//     its refusal budget (the rule: internal/budget).
//   - dupclient.go: the answer to a duplicate share at setup (§4.2).
//   - presence.go: leaving after the presence wait and each job's epochs
//     (§5.4 v3); the count of full epochs present is internal/presence's
//     (its own lock).
//   - indexsync.go: the index sync at an epoch's start, the index as
//     synced then (syncedIndex), and the check of
//     the copy against the window's manifests (§7 v3); the copy, its
//     cursors, the sync from one server and its rules, and what is asked
//     of the chain's other servers (a failed sync, the named manifests
//     the primary's copy lacks) are package internal/indexsync's (its
//     own lock, network-free tests); unlisted.go:
//     a get that gives up on a file no synced index lists.
//   - checkpoint.go: gets that start at a checkpoint (§6.4 v3).
//   - client_local.go: local work (assembling, writing) off the round path.
//   - client_api.go: Share, Get and the index; share_resume.go:
//     interrupted shares resume.
//   - client_db.go: the client's database of sealed onions and jobs (the
//     pending-epoch marker and resume records: internal/jobdb);
//     netbind.go: a data directory bound to one network (the binding and
//     the files moved aside and back: internal/netdir).
//   - control.go, control_status.go: a job's progress events (JobEvent,
//     internal/progress) and the client's status (internal/status), for
//     the local API (cmd/riffle/internal/webui); what Status and a waiting
//     job's line say of the epochs is internal/waitline's Notes (its own
//     lock).
//   - snapshot_client.go: a read-only snapshot and share job handles.
//   - handover_client.go, manifests_client.go, waitstate_client.go: the
//     client's half of node's handover.go (§5.4 v3), manifests.go (§6.4 v3)
//     and waitstate.go (the line a waiting client shows: internal/waitline).
//   - names.go: names the client shares with store.
//   - client_hooks.go (empty in the binary), client_hooks_riffletest.go:
//     the tests' hooks, internal/hooks's (the old own-lists decoy rule of
//     the controls too); client_testapi_riffletest.go: what the tests read
//     and set of a running client (Inspector, whose accessors take its
//     locks; none is a method of Client). The
//     *_client_test.go files are unit tests without a network.
package client
