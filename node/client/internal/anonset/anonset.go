// Package anonset counts the anonymity set a client accepts (docs/
// protocol.md §3 v3): the clients of a final descriptor registered
// through servers the client trusts (its primary and its required
// servers), since registrations through a malicious primary cost the
// adversary nothing. Pure: no I/O, no lock.
package anonset

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// Trusted counts the clients of final descriptor d, of chain, registered
// through servers this client trusts (its primary at chain position pidx
// and its required servers require), and says how many came through each
// ("*" marks the trusted).
func Trusted(chain, require []peer.ID, d *wire.Descriptor, pidx int) (int, string) {
	trusted := map[int]bool{pidx: true}
	for _, r := range require {
		for i, p := range chain {
			if p == r {
				trusted[i] = true
			}
		}
	}
	per := make([]int, len(chain))
	total := 0
	for _, ce := range d.Clients {
		if int(ce.Primary) < len(per) {
			per[ce.Primary]++
		}
		if trusted[int(ce.Primary)] {
			total++
		}
	}
	var b strings.Builder
	for i, k := range per {
		mark := ""
		if trusted[i] {
			mark = "*"
		}
		fmt.Fprintf(&b, " %s%s:%d", mark, string(d.Group[i].Nick), k)
	}
	return total, b.String()
}
