package proto

import "github.com/libp2p/go-libp2p/core/peer"

// LeaderOf is the leader of epoch number n in chain (chain order).
func LeaderOf(n uint64, chain []peer.ID) peer.ID {
	return chain[n%uint64(len(chain))]
}
