package node

// Internals for the end-to-end tests of package node_test, which start
// their networks with internal/nodetest (that package imports node, so
// only an external test package can use it).

import (
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestParams are the fast epoch parameters of the tests.
var TestParams = testParams

// PendingFile is the client's pending-epoch marker in its data directory.
const PendingFile = pendingFile

// Chain is the chain of live servers as s sees it.
func (s *Server) Chain() []peer.ID { return s.chain() }

// Banned returns the client peers s refuses.
func (s *Server) Banned() []peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []peer.ID
	for p := range s.banned {
		out = append(out, p)
	}
	return out
}

// EndedWith reports whether s holds an epoch that ended for reason.
func (s *Server) EndedWith(reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if e.ended && e.reason == reason {
			return true
		}
	}
	return false
}

// EpochsHeld returns how many epochs s keeps and how many prepared ones.
func (s *Server) EpochsHeld() (kept, prepared int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.epochs), len(s.prep)
}

// PoolBytes returns the bytes of free recycled buffers s holds.
func (s *Server) PoolBytes() int {
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	return s.pool.bytes
}

// PeerID is the client's libp2p peer id.
func (c *Client) PeerID() peer.ID { return c.h.ID() }
