//go:build riffletest

package node

import (
	"crypto/ed25519"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix"
)

// Test-only hooks of the duplicate-share tests (dupwalk_test.go).

// SetDupTest installs a client's registration hook, answer mode and
// chosen registration key (nil: drawn).
func SetDupTest(c *ClientConfig, register func(epoch [32]byte, serverKeys []*group.Element, regKey ed25519.PublicKey, cs *mix.ClientSecret, reg *mix.Registration), answer DupAnswer, regKey func() ed25519.PrivateKey) {
	c.DupTest = &DupClientTest{Register: register, Answer: answer, RegKey: regKey}
}

// LeftOut returns the client peers s leaves out of an epoch without a
// strike (silent after a duplicate share).
func (s *Server) LeftOut() []peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []peer.ID
	for p := range s.leftOut {
		out = append(out, p)
	}
	return out
}
