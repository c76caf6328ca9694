package catchup

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// maxShunned bounds the peers left alone at once: the roster's servers
// come and go, and each one shunned once stayed in the map for good.
const maxShunned = wire.MaxServers

// shunPeer leaves p alone for Tunables.CatchupShun. Entries whose time
// passed go first; a full map loses the one that ends soonest.
func (cu *Catchup) shunPeer(p peer.ID, why error) {
	cu.Log.Warn("catch-up: peer left alone", "peer", p.ShortString(), "err", why)
	now := time.Now()
	cu.mu.Lock()
	defer cu.mu.Unlock()
	if cu.shun == nil {
		cu.shun = map[peer.ID]time.Time{}
	}
	for q, until := range cu.shun {
		if !now.Before(until) {
			delete(cu.shun, q)
		}
	}
	if _, ok := cu.shun[p]; !ok && len(cu.shun) >= maxShunned {
		var first peer.ID
		for q, until := range cu.shun {
			if first == "" || until.Before(cu.shun[first]) {
				first = q
			}
		}
		delete(cu.shun, first)
	}
	cu.shun[p] = now.Add(cu.T.CatchupShun)
}

// Shunned reports whether p is left alone for now.
func (cu *Catchup) Shunned(p peer.ID) bool {
	cu.mu.Lock()
	defer cu.mu.Unlock()
	until, ok := cu.shun[p]
	if ok && !time.Now().Before(until) {
		delete(cu.shun, p)
		return false
	}
	return ok
}
