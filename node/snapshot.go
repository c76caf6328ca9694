package node

import (
	"sort"
	"time"
)

// Snapshots and job handles for local views of a running client or server
// (the web UI of cmd/riffle/internal/webui). They read state the node already keeps;
// nothing here sends a message, so a view changes nothing a client or
// server does on the network.

// RosterEntry is a live server of a server's roster, with its addresses.
type RosterEntry struct {
	PeerID string
	Nick   string
	Addrs  []string
	Seen   time.Time
}

// EpochSnapshot is what a server knows of one epoch it keeps.
type EpochSnapshot struct {
	ID        [32]byte
	Number    uint64
	Position  int // this server's place in the chain
	Chain     []string
	Clients   int
	Rounds    int // R
	ChunkSize int
	// Listed is how many rounds have a final request list here.
	Listed    int
	Ended     bool
	Reason    string
	VoidRound []uint32 // rounds voided by a bad batch (§5.2, §8)
	// RoundChunks holds, for each round whose bulk state is still kept,
	// how many chunks it published (covers not counted).
	RoundChunks map[uint32]int
}

// ServerSnapshot is an operator's view of a server: public, aggregate
// state only, nothing about any one client.
type ServerSnapshot struct {
	PeerID string
	Nick   string
	Roster []RosterEntry
	Chain  []string // live servers in chain order, this one included
	Epochs []EpochSnapshot
	Timing Timing
	// StoreBytes is the chunk data stored, QuotaBytes its cap (0: none);
	// both 0 for a store that does not count.
	StoreBytes, QuotaBytes int64
	// Excluded counts the client peers this primary refuses at its next
	// epoch after a blame named them (their identities stay with it).
	Excluded int
}

// Snapshot returns the server's current state, newest epoch first.
func (s *Server) Snapshot() ServerSnapshot {
	out := ServerSnapshot{PeerID: s.h.ID().String(), Nick: s.cfg.Nick, Timing: s.Timing(), QuotaBytes: s.cfg.StoreOptions.QuotaBytes}
	for _, m := range s.roster.live() {
		rm := RosterEntry{PeerID: m.ID.String(), Nick: m.Nick, Seen: m.Seen}
		for _, a := range m.Addrs {
			rm.Addrs = append(rm.Addrs, a.String())
		}
		out.Roster = append(out.Roster, rm)
	}
	sort.Slice(out.Roster, func(i, j int) bool { return out.Roster[i].PeerID < out.Roster[j].PeerID })
	for _, p := range s.members.Chain() {
		out.Chain = append(out.Chain, p.String())
	}
	out.StoreBytes = s.ix.Usage()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, until := range s.strikes.Banned {
		if until > s.number {
			out.Excluded++
		}
	}
	for _, e := range s.epochs {
		v := e.v
		if e.final != nil {
			v = e.final
		}
		es := EpochSnapshot{ID: v.ID, Number: v.Desc.Number, Position: e.pos, Clients: len(v.Desc.Clients),
			Rounds: int(v.Desc.Params.Rounds), ChunkSize: int(v.Desc.Params.ChunkSize), Listed: int(e.listHigh),
			Ended: e.ended, Reason: e.reason, RoundChunks: map[uint32]int{}}
		for _, p := range v.Chain {
			es.Chain = append(es.Chain, p.String())
		}
		for r := range e.evidence {
			es.VoidRound = append(es.VoidRound, r)
		}
		sort.Slice(es.VoidRound, func(i, j int) bool { return es.VoidRound[i] < es.VoidRound[j] })
		for r, x := range e.rounds {
			if x.pubDone {
				es.RoundChunks[r] = len(x.pub.IDs)
			}
		}
		out.Epochs = append(out.Epochs, es)
	}
	sort.Slice(out.Epochs, func(i, j int) bool { return out.Epochs[i].Number > out.Epochs[j].Number })
	return out
}
