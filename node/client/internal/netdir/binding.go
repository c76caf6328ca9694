package netdir

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/store"
)

// Binding is a data directory's binding to one network: the database
// opened at start waits in it, unbound, until the first checked chain
// says which network this is; its record is the servers of the network
// the directory holds. After Start only the client's loop calls Take,
// Switch and Record; Bound may be waited on from any goroutine.
type Binding struct {
	dir     string
	files   []string
	rec     map[peer.ID]bool
	bound   chan struct{}
	unbound *store.ClientDB
}

// NewBinding is the binding of data directory dir, whose files belong to
// its network.
func NewBinding(dir string, files []string) *Binding {
	return &Binding{dir: dir, files: files, bound: make(chan struct{})}
}

// Start takes the database opened at start (nil: none) and the servers
// its record names. It returns the database to use now, or nil when the
// record names servers and not primary: the database then waits for the
// first chain.
func (b *Binding) Start(db *store.ClientDB, rec [][]byte, primary peer.ID) *store.ClientDB {
	b.rec = PeerSet(rec)
	if db == nil || len(rec) == 0 || b.rec[primary] {
		close(b.bound)
		return db
	}
	b.unbound = db
	return nil
}

// Bound is closed once the directory is bound to a network.
func (b *Binding) Bound() <-chan struct{} { return b.bound }

// Unbound is the database still held back, nil once bound.
func (b *Binding) Unbound() *store.ClientDB { return b.unbound }

// Take binds the directory to the network of chain, once: it returns the
// database held back and whether its record shares a server with chain
// (then the directory holds chain's network); first is false once bound.
// The caller installs the database, or closes it and calls Switch, then
// MarkBound.
func (b *Binding) Take(chain []peer.ID) (db *store.ClientDB, same, first bool) {
	select {
	case <-b.bound:
		return nil, false, false
	default:
	}
	db, b.unbound = b.unbound, nil
	return db, Overlaps(b.rec, chain), true
}

// MarkBound closes Bound.
func (b *Binding) MarkBound() { close(b.bound) }

// Switch moves the recorded network's files aside and brings back those
// kept for chain's network, and clears the record. It returns the line
// to show the user and why nothing came back (backErr); with err,
// nothing or a part was moved aside.
func (b *Binding) Switch(chain []peer.ID) (line string, backErr, err error) {
	old := SortedIDs(b.rec)
	kept, err := MoveAside(b.dir, b.files, old)
	if err != nil {
		return "", nil, err
	}
	back, backErr := BringBack(b.dir, b.files, chain)
	line = fmt.Sprintf("riffle: this data directory held the state of another network (servers %s); it is kept in %s and comes back when this data directory is used on that network again",
		ShortIDs(old), kept)
	if back != "" {
		line += "; the state kept for this network is back from " + back
	}
	b.rec = map[peer.ID]bool{}
	return line, backErr, nil
}

// Recorded reports whether the record is chain's servers.
func (b *Binding) Recorded(chain []peer.ID) bool { return SameSet(b.rec, chain) }

// Record sets the record to the servers ids.
func (b *Binding) Record(ids [][]byte) { b.rec = PeerSet(ids) }
