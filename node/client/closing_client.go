package client

import "github.com/riffle-net/riffle/node/internal/proto"

// A client's side of the closing records (docs/protocol.md §5.2 and §6.3
// v3). A client takes them only from epoch N's window (window_client.go):
// the records of the epochs of number at most N−2 that its walk back from
// N's descriptor checked, from the replies of every server of N's and
// N−1's chains. Which records it holds is then the same for every client
// of N, whatever epochs it attended or when a record would have reached
// it; it asks for them on no other occasion.

// useClosings settles the chunks that wait for a closing record with the
// records of the window of v, the epoch about to be registered in
// (resend.go).
func (c *Client) useClosings(v *proto.View) {
	c.mu.Lock()
	again := c.q.settleClosings(c.windowRecs, v.Desc.Number)
	c.mu.Unlock()
	for _, j := range again {
		go c.reencrypt(j)
	}
}
