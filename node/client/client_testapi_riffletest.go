//go:build riffletest

package client

import (
	"context"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// What the network tests read of a running client and may set on it
// (riffletest builds only): each accessor takes the client's locks itself,
// so that no test holds c.mu or names the client's fields.

// Inspector is what the network tests read and set of a running client
// beside its API: each accessor takes the client's locks itself.
type Inspector struct{ c *Client }

// Inspect returns the client's Inspector.
func (c *Client) Inspect() Inspector { return Inspector{c} }

// Host is the client's transport host (its address book, its streams).
func (i Inspector) Host() transport.Host { return i.c.h }

// PeerID is the client's peer id.
func (i Inspector) PeerID() peer.ID { return i.c.h.ID() }

// LongTermKey is the key that signs the client's registrations.
func (i Inspector) LongTermKey() *proto.LongTermKey { return i.c.ltKey }

// LongTermPublic is the public half of LongTermKey.
func (i Inspector) LongTermPublic() [32]byte { return i.c.ltKey.Public() }

// DecoyEpochs is how many epochs the client's decoy window holds.
func (i Inspector) DecoyEpochs() int {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	return len(i.c.decoys.epochs)
}

// WindowRecords is how many closing records the window's walk brought;
// HasWindowRecord, whether it brought epoch ep's.
func (i Inspector) WindowRecords() int {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	return len(i.c.windowRecs)
}

func (i Inspector) HasWindowRecord(ep [32]byte) bool {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	return i.c.windowRecs[ep] != nil
}

// Queued is the ids of the chunks in the client's upload queue, in order.
func (i Inspector) Queued() [][32]byte {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	out := make([][32]byte, 0, len(i.c.q.up))
	for _, u := range i.c.q.up {
		out = append(out, u.c.ID)
	}
	return out
}

// SealedNext is the next round of the current epoch the client has not
// sealed an onion for (0 without an epoch).
func (i Inspector) SealedNext() uint32 {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	if i.c.epoch == nil {
		return 0
	}
	return i.c.epoch.sealedNext
}

// SetLocalHook sets the function the local worker calls before each step
// (hooks.Local).
func (i Inspector) SetLocalHook(h func(step string)) {
	hooks.SetLocal(&i.c.hk, h)
}

// SetJobWait sets the presence wait drawn at arrival (§5.4), in full
// epochs.
func (i Inspector) SetJobWait(n int) {
	i.c.pres.SetWait(n)
}

// FullEpochs is the full epochs since arrival (internal/presence).
func (i Inspector) FullEpochs() int {
	return i.c.pres.Epochs()
}

// EpochLen is how long the last epoch taken part in lasted.
func (i Inspector) EpochLen() time.Duration {
	return i.c.notes.EpochLen()
}

// SyncIndex syncs the index from the primary, from this client's cursor,
// and returns the whole copy with its manifests.
func (i Inspector) SyncIndex(ctx context.Context) ([]IndexEntry, map[[32]byte][]byte, error) {
	c := i.c
	c.icopy.Lock()
	defer c.icopy.Unlock()
	if _, err := c.icopy.SyncFrom(ctx, c.primary); err != nil {
		return nil, nil, err
	}
	return c.icopy.Entries(), c.icopy.Manifests(), nil
}

// Receipts is the current epoch's view, the client's slot in it and the
// chain servers' receipts of its registration (nil view: no epoch yet).
func (i Inspector) Receipts() (*proto.View, uint32, []wire.Receipt) {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	if i.c.epoch == nil {
		return nil, 0, nil
	}
	return i.c.epoch.v, i.c.epoch.slot, append([]wire.Receipt(nil), i.c.epoch.receipts...)
}

// PendingFile is the client's pending-epoch marker in its data directory.
const PendingFile = pendingFile

// CheckDupAbort is the check of a duplicate-share abort by a client in
// slot slot of the epoch of v (checkDupAbort).
func CheckDupAbort(v *proto.View, slot uint32, a *wire.DupAbort) error {
	return checkDupAbort(&cepoch{v: v, slot: slot}, a)
}

// CheckPrevious is the client's check of an open descriptor's previous
// certificate (clientCheckPrevious).
func CheckPrevious(d *wire.Descriptor, chain, last []peer.ID, primary peer.ID, require []peer.ID) error {
	return clientCheckPrevious(d, chain, last, primary, require)
}

// PausedJobs lists the client's paused jobs (queue.paused).
func (i Inspector) PausedJobs() []PausedJob {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	return i.c.q.paused()
}

// ResendHold is how many rounds after its list a void round's chunk waits
// to go out again (resendHold).
const ResendHold = resendHold

// FetchWindow has a bare client on host h, whose primary is primary, fetch
// the decoy window of v's epoch (fetchWindow).
func FetchWindow(ctx context.Context, h transport.Host, primary peer.ID, v *proto.View) error {
	c := &Client{h: h, primary: primary, log: quietLogger(), ctx: ctx}
	return c.fetchWindow(ctx, v)
}

// HoldWindowChain is holdWindow's decision without its random wait: v's
// window fetched as every client fetches it (errNoWindow: the client sits
// v out), then v's chain taken, or refused for a budget drop the window's
// walk shows.
func HoldWindowChain(ctx context.Context, h transport.Host, primary peer.ID, v *proto.View) error {
	c := &Client{h: h, primary: primary, log: quietLogger(), ctx: ctx}
	if err := c.fetchWindow(ctx, v); err != nil {
		return err
	}
	return c.takeChain(v.Desc, v.Chain, c.windowBudget)
}

// BudgetDrops names the servers a client of the epoch of number with
// chain refuses for their refusal budget, from a walk's budgets.
func BudgetDrops(w proto.BudgetWalk, chain []peer.ID, number uint64) []string {
	return budgetView(w).Dropped(chain, number)
}

// HasManifest reports whether the client's synced index holds manifest id.
func (i Inspector) HasManifest(id [32]byte) bool {
	c := i.c
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.idx.manifests[id]
	return ok
}

// SyncResult is what one index sync read (indexsync.Result).
type SyncResult struct {
	Pages, Bytes, Entries, Mans, Removed, Reset, Closings, Early int
}

// NewBareClient is a client that only syncs the index, on host h, from
// primary, with data directory dir ("": none) open; CloseDB closes it.
func NewBareClient(h transport.Host, primary peer.ID, dir string, log *slog.Logger) *Client {
	c := &Client{cfg: ClientConfig{DataDir: dir}, log: log, h: h, primary: primary}
	c.icopy.Host = indexHost{c}
	c.openClientDB()
	return c
}

// CloseDB closes the client's database, as a process that ends.
func (i Inspector) CloseDB() {
	if i.c.db != nil {
		i.c.db.Close()
		i.c.db = nil
	}
}

// SyncIndexFrom syncs the index from server p (indexsync's SyncFrom).
func (i Inspector) SyncIndexFrom(ctx context.Context, p peer.ID) (SyncResult, error) {
	c := i.c
	c.icopy.Lock()
	defer c.icopy.Unlock()
	r, err := c.icopy.SyncFrom(ctx, p)
	return SyncResult(r), err
}

// IndexEntries and IndexManifests are copies of the synced copy's
// entries and manifests, by id.
func (i Inspector) IndexEntries() map[[32]byte]IndexEntry {
	c := i.c
	c.icopy.Lock()
	defer c.icopy.Unlock()
	return c.icopy.EntryMap()
}

func (i Inspector) IndexManifests() map[[32]byte][]byte {
	c := i.c
	c.icopy.Lock()
	defer c.icopy.Unlock()
	return c.icopy.Manifests()
}

// SetIndexRetention sets the group's index retention the copy applies, in
// hours; SetIndexClock replaces its clock.
func (i Inspector) SetIndexRetention(hours uint32) {
	c := i.c
	c.icopy.Lock()
	c.icopy.SetHours(hours)
	c.icopy.Unlock()
}

func (i Inspector) SetIndexClock(clock func() time.Time) {
	c := i.c
	c.icopy.Lock()
	c.icopy.SetClock(clock)
	c.icopy.Unlock()
}

// ExpireIndex drops what the copy has held past the retention
// (indexsync's Expire).
func (i Inspector) ExpireIndex() {
	c := i.c
	c.icopy.Lock()
	c.icopy.Expire()
	c.icopy.Unlock()
}

// SetIndexCursor sets the copy's cursor at server p (a stale one).
func (i Inspector) SetIndexCursor(p peer.ID, n uint64) {
	c := i.c
	c.icopy.Lock()
	c.icopy.SetCursor(p, n)
	c.icopy.Unlock()
}
