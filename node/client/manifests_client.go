package client

import (
	"github.com/riffle-net/riffle/node/client/internal/hooks"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Which upload a client's round carries (node/internal/manifests has the caps).

// nextUpload returns the queue position of the next chunk to upload in
// epoch e, or -1: the first, unless it is a manifest beyond what the index
// takes of one pseudonym in an epoch, or waits out full epochs after a
// round that did not publish it (resend.go), or, in its epoch, holds
// back after such a round (resendHold); r is the round to fill. Call with
// c.mu held.
func (e *cepoch) nextUpload(r uint32) int {
	c := e.c
	noCap := hooks.NoManifestCap(&c.hk)
	for i := range c.q.up {
		if c.q.up[i].wait > 0 || c.q.up[i].awaiting || e.heldBack(&c.q.up[i], r) {
			// Seen unpublished: it waits for its epoch's closing
			// record, then out full epochs (resend.go).
			continue
		}
		if j := c.q.up[i].job; j != nil && !j.ep.may(e.epochID()) {
			// Past its allowance of epochs: paused (presence.go).
			continue
		}
		if !c.q.up[i].manifest || e.manifestsSent < proto.ManifestsPerPseudonym || noCap {
			return i
		}
	}
	return -1
}
