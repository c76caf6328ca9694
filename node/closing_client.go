package node

import (
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
)

// A client's side of the closing records (docs/protocol.md §5.2, §6.3 and
// §7 v3): they come with the index sync, from any server, and a client
// checks one against the chain of the epoch it names (which it holds for
// the epochs it took part in) before it acts on it.

// maxClosings bounds the closing records a client keeps.
const maxClosings = 64

// addClosing keeps a synced closing record, if it decodes; the first
// record of an epoch stays (one that fails its check is replaced by a
// later one when it is checked, closingFor).
func (ic *indexCopy) addClosing(b []byte) {
	var c wire.Closing
	if err := c.Unmarshal(b, wire.MaxClosingRounds); err != nil {
		return
	}
	if ic.closings == nil {
		ic.closings = map[[32]byte]*wire.Closing{}
	}
	if _, ok := ic.closings[c.Epoch]; ok {
		return
	}
	ic.closings[c.Epoch] = &c
	ic.closingOrder = append(ic.closingOrder, c.Epoch)
	for len(ic.closingOrder) > maxClosings {
		delete(ic.closings, ic.closingOrder[0])
		ic.closingOrder = ic.closingOrder[1:]
	}
}

// closingFor returns epoch v's closing record if the copy holds one that
// all of v's chain signed; a record that does not verify is dropped.
// Call with c.syncMu held.
func (c *Client) closingFor(v *view) *wire.Closing {
	ic := &c.icopy
	rec := ic.closings[v.id]
	if rec == nil {
		return nil
	}
	if err := checkClosing(v, rec); err != nil {
		delete(ic.closings, v.id)
		c.log.Warn("a closing record does not verify", "err", err)
		return nil
	}
	return rec
}

// missingClosings returns the epochs of want whose records the copy lacks.
func (ic *indexCopy) missingClosings(want [][32]byte) [][32]byte {
	var out [][32]byte
	for _, id := range want {
		if ic.closings[id] == nil {
			out = append(out, id)
		}
	}
	return out
}

// maxPastViews bounds the ended epochs whose chains a client keeps, to
// check their closing records: the decoy window and the wait of an
// unpublished chunk.
const maxPastViews = DecoyEpochs + closeWaitMax + 1

// notePastView keeps the chain of an epoch the client took part in; call
// with c.mu held.
func (c *Client) notePastView(v *view) {
	if v == nil {
		return
	}
	for _, p := range c.pastViews {
		if p.id == v.id {
			return
		}
	}
	c.pastViews = append(c.pastViews, v)
	if len(c.pastViews) > maxPastViews {
		c.pastViews = c.pastViews[len(c.pastViews)-maxPastViews:]
	}
}

// closingWants returns the past epochs whose closing records are still
// wanted (for decoys or for a chunk that waits), and of them those to ask
// other servers for when the primary lacks them: all but the epoch just
// ended, whose record S_0 may not have had signed yet. What it returns
// depends only on the epochs the client took part in and the records
// synced, never on its jobs. Call with c.mu held.
func (c *Client) closingWants() (views []*view, others [][32]byte) {
	for i, v := range c.pastViews {
		if c.closingSeen[v.id] && c.own.closedEpoch(v.id) {
			continue
		}
		views = append(views, v)
		if i < len(c.pastViews)-1 {
			others = append(others, v.id)
		}
	}
	return views, others
}

// useClosings checks the synced closing records of views against their
// chains, admits their epochs to the decoy pool and settles the chunks
// that wait for them (resend.go).
func (c *Client) useClosings(views []*view) {
	recs := map[[32]byte]*wire.Closing{}
	c.syncMu.Lock()
	for _, v := range views {
		if rec := c.closingFor(v); rec != nil {
			recs[v.id] = rec
		}
	}
	c.syncMu.Unlock()
	c.mu.Lock()
	if c.closingSeen == nil {
		c.closingSeen = map[[32]byte]bool{}
	}
	for id, rec := range recs {
		c.own.admit(rec)
		c.closingSeen[id] = true
	}
	for id := range c.closingSeen {
		if !slices.ContainsFunc(c.pastViews, func(v *view) bool { return v.id == id }) {
			delete(c.closingSeen, id)
		}
	}
	again := c.settleClosings(recs)
	c.mu.Unlock()
	for _, j := range again {
		go c.reencrypt(j)
	}
}
