package webui

import (
	"context"
	"encoding/hex"
	"io"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
)

// pollEvery is how often the adapter reads a job's progress from the node:
// often enough to see a small get's root manifest before the get ends.
const pollEvery = 100 * time.Millisecond

// NodeClient adapts a running *client.Client to Client. Jobs go through the
// client's own job path (the one `riffle share` and `riffle get` hand to a
// running client), so the UI adds nothing to what the client sends.
type NodeClient struct{ C *client.Client }

func (n NodeClient) Status() Status {
	s := n.C.Snapshot()
	st := Status{InEpoch: s.Epoch != "", Number: s.Number, AnonymitySet: s.AnonymitySet, ChunkSize: s.ChunkSize, K: s.K, Rounds: s.Rounds,
		RoundsDone: s.Stats.Rounds, Epochs: s.Stats.Epochs, Uploaded: s.Stats.Uploaded, Fetched: s.Stats.Fetched,
		Throughput: s.Throughput, Goodput: s.Goodput, Waiting: s.Waiting,
		GroupSendPerHour: s.GroupSendPerHour, GroupRecvPerHour: s.GroupRecvPerHour, SentPerHour: s.SentPerHour, RecvPerHour: s.RecvPerHour}
	if len(s.Epoch) >= 8 {
		st.Epoch = s.Epoch[:8]
	}
	pinned := map[string]bool{}
	for _, r := range s.Require {
		pinned[r] = true
	}
	for _, m := range s.Chain {
		st.Chain = append(st.Chain, ChainServer{Nick: display(m.Nick), PeerID: m.ID, Primary: m.ID == s.Primary, Pinned: pinned[m.ID]})
	}
	for _, p := range s.Pins {
		st.Pins = append(st.Pins, Pin{PeerID: p.PeerID, InChain: p.InChain})
	}
	return st
}

func (n NodeClient) Index() []File {
	idx := n.C.SyncedIndex()
	out := make([]File, len(idx))
	for i, e := range idx {
		out[i] = File{ID: chunker.ID(e.FileID), Name: e.Name, Size: e.Size, Chunks: int(e.Chunks), Round: e.Round, Published: e.Time}
	}
	return out
}

func (n NodeClient) Holds(ids []chunker.ID) []bool {
	raw := make([][32]byte, len(ids))
	for i, id := range ids {
		raw[i] = id
	}
	return n.C.Holds(raw)
}

func (n NodeClient) Share(ctx context.Context, r io.Reader, name string, private bool, progress func(Progress)) (chunker.Link, error) {
	h, err := n.C.StartShare(ctx, r, name, private)
	if err != nil {
		return chunker.Link{}, err
	}
	// A private file's link is shown only once its job is done: until
	// then a round that does not publish part of it has the file encrypted
	// again under a new key (node: §5.2 v3), and the first link would name
	// a file that is never complete.
	early := h.Link
	if private {
		early = chunker.Link{}
	}
	progress(Progress{Total: h.Total, Name: name, Link: early, IDs: h.IDs})
	type result struct {
		link chunker.Link
		err  error
	}
	// The client follows the job (its events go to ctx's sink, and it
	// withdraws the share when ctx ends); the page polls its figures.
	done := make(chan result, 1)
	go func() {
		link, err := n.C.FollowShare(ctx, h, name, time.Now())
		done <- result{link, err}
	}()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return chunker.Link{}, r.err
			}
			_, total, _, _ := h.Result()
			progress(Progress{Done: total, Total: total, Name: name, Link: r.link})
			return r.link, nil
		case <-t.C:
			link, total, _, _ := h.Result()
			progress(Progress{Done: total - h.Left(), Total: total, Name: name, Link: early, Paused: n.C.PauseReason(link.ID), Waiting: n.C.WaitReason(), File: link.ID})
		}
	}
}

func (n NodeClient) Get(ctx context.Context, link chunker.Link, dir string, progress func(Progress)) (string, error) {
	type result struct {
		path string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		p, err := n.C.Get(ctx, link, dir)
		done <- result{p, err}
	}()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			return r.path, r.err
		case <-t.C:
			// Before the client holds the job (no epoch yet) the
			// page still says what the get waits for.
			p := Progress{Link: link, Waiting: n.C.WaitReason(), File: link.ID}
			if st, ok := n.C.GetProgress(link.ID); ok {
				p.Done, p.Total, p.Name, p.Paused = st.Held, st.Total, st.Name, n.C.PauseReason(link.ID)
				if st.Chunks != nil {
					p.IDs = append([]chunker.ID{link.ID}, st.Chunks...)
				}
			}
			progress(p)
		}
	}
}

func (n NodeClient) Resume(id chunker.ID) int { return n.C.Resume(id.String()) }

// NodeServer adapts a running *node.Server to Server.
type NodeServer struct{ S *node.Server }

func (n NodeServer) Status() ServerStatus {
	s := n.S.Snapshot()
	st := ServerStatus{PeerID: s.PeerID, Nick: s.Nick, Chain: s.Chain, TimedRounds: s.Timing.Rounds, Mix: s.Timing.Mix, Verify: s.Timing.Verify,
		Store: s.Timing.Store, PIR: s.Timing.PIR, StoreBytes: s.StoreBytes, QuotaBytes: s.QuotaBytes, Excluded: s.Excluded}
	for _, m := range s.Roster {
		st.Roster = append(st.Roster, RosterEntry{PeerID: m.PeerID, Nick: m.Nick, Addrs: m.Addrs, Seen: m.Seen})
	}
	for _, e := range s.Epochs {
		ei := EpochInfo{ID: hex.EncodeToString(e.ID[:4]), Number: e.Number, Position: e.Position, Clients: e.Clients, Rounds: e.Rounds,
			ChunkSize: e.ChunkSize, Listed: e.Listed, Ended: e.Ended, Reason: e.Reason, Void: e.VoidRound}
		for r, c := range e.RoundChunks {
			ei.RecentChunks = append(ei.RecentChunks, RoundChunks{Round: r, Chunks: c})
		}
		sortRounds(ei.RecentChunks)
		st.Epochs = append(st.Epochs, ei)
	}
	return st
}
