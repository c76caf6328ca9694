package node

import (
	"encoding/hex"
	"sort"
	"time"
)

// An operator follows a server through its log and its status: the
// roster's joins and departures are logged as they are seen (a server
// that found no peer says nothing otherwise until an epoch opens), and
// Status reports the roster, the chain and the current epoch with its
// anonymity set, round time and goodput. Nothing names a client. What the
// watch keeps between samples, and its loop, are package internal/status's
// (its own lock).

// RosterMember is a live server of the roster.
type RosterMember struct {
	ID   string        `json:"id"`
	Nick string        `json:"nick"`
	Seen time.Duration `json:"seen_ago_ns"`
}

// ServerStatus is a server's own view of the network.
type ServerStatus struct {
	ID         string         `json:"id"`
	Nick       string         `json:"nick"`
	Roster     []RosterMember `json:"roster"` // live peers, this server excluded
	MinServers int            `json:"min_servers"`
	MinClients int            `json:"min_clients"`
	// The current epoch ("" when none runs), its chain in order, its
	// anonymity set (clients), the rounds whose lists are final, the mean
	// round time and the throughput: chunk bytes the chain carries a
	// second (n clients × b a round). A server cannot tell chunks from
	// cover, by design, so it cannot report goodput.
	Epoch        string        `json:"epoch,omitempty"`
	Chain        []ChainServer `json:"chain,omitempty"`
	AnonymitySet int           `json:"anonymity_set"`
	ChunkSize    int           `json:"chunk_size"`
	Rounds       int           `json:"rounds"`
	EpochRounds  int           `json:"epoch_rounds"`
	RoundTime    time.Duration `json:"round_time_ns"`
	Throughput   float64       `json:"throughput_bytes_per_s"`
}

// Status returns the server's status.
func (s *Server) Status() ServerStatus {
	st := ServerStatus{ID: s.h.ID().String(), Nick: s.cfg.Nick, Roster: []RosterMember{}, MinServers: s.cfg.MinServers, MinClients: s.cfg.MinClients}
	for _, m := range s.roster.live() {
		if m.ID == s.h.ID() {
			continue
		}
		st.Roster = append(st.Roster, RosterMember{ID: m.ID.String(), Nick: m.Nick, Seen: time.Since(m.Seen).Round(time.Millisecond)})
	}
	sort.Slice(st.Roster, func(i, j int) bool { return st.Roster[i].ID < st.Roster[j].ID })
	s.mu.Lock()
	e := s.currentEpoch()
	var high uint32
	if e != nil {
		st.Epoch = hex.EncodeToString(e.final.ID[:])
		for i, p := range e.final.Chain {
			cs := ChainServer{ID: p.String()}
			if i < len(e.final.Desc.Group) {
				cs.Nick = string(e.final.Desc.Group[i].Nick)
			}
			st.Chain = append(st.Chain, cs)
		}
		st.AnonymitySet = e.n()
		st.ChunkSize = int(e.final.Desc.Params.ChunkSize)
		st.EpochRounds = int(e.final.Desc.Params.Rounds)
		high = e.listHigh
	}
	s.mu.Unlock()
	st.Rounds = int(high)
	if e != nil {
		st.RoundTime, st.Throughput = s.obs.Rate(e.final.ID, st.AnonymitySet, st.ChunkSize)
	}
	return st
}

// currentEpoch is the newest final epoch that has not ended (s.mu held).
func (s *Server) currentEpoch() *sepoch {
	var cur *sepoch
	for _, e := range s.epochs {
		if e.final == nil || e.ended {
			continue
		}
		if cur == nil || e.final.Desc.Number > cur.final.Desc.Number {
			cur = e
		}
	}
	return cur
}

// watchSampler is what the watch loop (internal/status) samples.
type watchSampler struct{ s *Server }

func (w watchSampler) Live() map[string]string {
	now := map[string]string{}
	for _, m := range w.s.roster.live() {
		if m.ID != w.s.h.ID() {
			now[m.ID.String()] = m.Nick
		}
	}
	return now
}

func (w watchSampler) Current() (id [32]byte, high uint32, ok bool) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	e := w.s.currentEpoch()
	if e == nil {
		return id, 0, false
	}
	return e.final.ID, e.listHigh, true
}
