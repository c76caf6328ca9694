// Package strikes is a primary's strikes against its own clients
// (docs/protocol.md §8 "After a blame"): a culprit client is refused by
// the primary that served it, by peer id and by the address it connects
// from, for a number of epochs that doubles on each repeat
// (blame.ExcludedUntil); no other server learns its address. The table is
// bounded (store.MaxClientStrikes records) and does no I/O and takes no
// lock: the server's mutex guards a Table, and the server writes the
// records it returns to its store (bucket client-strikes) and reads them
// back at start (node's roundblame_after.go).
package strikes

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/store"
)

// Table is a primary's strikes against its clients.
type Table struct {
	// Banned: client peers excluded up to an epoch number (a culprit of
	// a blame), known only to their primary.
	Banned map[peer.ID]uint64
	// Clients are the strikes by "peer <id>" and by "ip <address>": how
	// often each was named here and up to which epoch number it is
	// refused. Kept on disk too, so that a restart neither forgives a
	// client nor resets its doubling; at most store.MaxClientStrikes.
	Clients map[string]store.ClientStrike
}

// Rec is one record for the store.
type Rec struct {
	Key string
	X   store.ClientStrike
}

// Client counts one more blame against a client peer of this primary,
// and against each address ips it connects from, and returns until which
// epoch number the peer is refused: 1, 2, 4, … epochs after number,
// doubling on each repeat up to 2^blame.MaxExcludeShift, with the records
// for the store.
func (t *Table) Client(p peer.ID, ips []string, number uint64) (uint64, []Rec) {
	if t.Banned == nil {
		t.Banned = map[peer.ID]uint64{}
	}
	pk := "peer " + p.String()
	until := t.Strike(pk, number)
	t.Banned[p] = until
	recs := []Rec{{pk, t.Clients[pk]}}
	for _, ip := range ips {
		k := "ip " + ip
		t.Strike(k, number)
		recs = append(recs, Rec{k, t.Clients[k]})
	}
	return until, recs
}

// Strike counts one more blame against key and returns until which epoch
// number it is refused.
func (t *Table) Strike(key string, number uint64) uint64 {
	if t.Clients == nil {
		t.Clients = map[string]store.ClientStrike{}
	}
	x, known := t.Clients[key]
	if !known && len(t.Clients) >= store.MaxClientStrikes {
		t.dropLowest()
	}
	x.Strikes++
	x.Until = blame.ExcludedUntil(x.Strikes, x.Until, number)
	t.Clients[key] = x
	return x.Until
}

// dropLowest forgets the record whose exclusion ended first, as the
// store does when full.
func (t *Table) dropLowest() {
	low, first := "", true
	for k, x := range t.Clients {
		if first || x.Until < t.Clients[low].Until {
			low, first = k, false
		}
	}
	delete(t.Clients, low)
	if p, err := peer.Decode(strings.TrimPrefix(low, "peer ")); err == nil && strings.HasPrefix(low, "peer ") {
		delete(t.Banned, p)
	}
}

// Refusal says why this primary refuses a client peer connected from the
// addresses ips in epoch number, by its peer id or by an address, or nil.
// The reason names neither the address nor the blame's epoch: the client
// knows both.
func (t *Table) Refusal(p peer.ID, ips []string, number uint64) error {
	until, ok := t.Banned[p]
	ok = ok && number <= until
	for _, ip := range ips {
		if x, hit := t.Clients["ip "+ip]; hit && number <= x.Until {
			until, ok = max(until, x.Until), true
		}
	}
	if !ok {
		return nil
	}
	return fmt.Errorf("node: this client is refused here up to epoch %d: a blame named it or its address", until)
}

// Load takes the stored records in, at start: a struck client stays
// refused across a restart, and its next strike doubles on.
func (t *Table) Load(recs map[string]store.ClientStrike) {
	if t.Banned == nil {
		t.Banned = map[peer.ID]uint64{}
	}
	t.Clients = recs
	for k, x := range recs {
		if id, ok := strings.CutPrefix(k, "peer "); ok {
			if p, err := peer.Decode(id); err == nil {
				t.Banned[p] = max(t.Banned[p], x.Until)
			}
		}
	}
}
