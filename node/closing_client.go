package node

import (
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
