package node

import (
	"context"
	"maps"
)

// testParams keep end-to-end tests fast: 16 KiB chunks, 2 request slots.
func testParams(R int) Params {
	return Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: uint32(R), MaxClients: MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000}
}

// syncIndex syncs the index from the primary, from this client's cursor,
// and returns the whole copy (tests).
func (c *Client) syncIndex(ctx context.Context) ([]IndexEntry, map[[32]byte][]byte, error) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if _, err := c.syncIndexFrom(ctx, c.primary); err != nil {
		return nil, nil, err
	}
	var out []IndexEntry
	for _, e := range c.icopy.entries {
		out = append(out, e)
	}
	return out, maps.Clone(c.icopy.mans), nil
}
