package proto

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
)

// The bounded leader of docs/protocol.md §3 (v3): whatever a leader
// proposes, every honest server checks it against the group's constants,
// so that the most a leader can achieve is an abort, never a smaller
// anonymity set.

const (
	// DefaultMinAnonymity is a client's default minimum anonymity set
	// (--min-anonymity): the clients registered through servers it
	// trusts. Eight clients is the smallest crowd the protocol treats as
	// real protection; tests and the local demo set what they run.
	DefaultMinAnonymity = 8
	// MaxGroupServers is m_max, the largest chain the client cap is
	// sized for.
	MaxGroupServers = 8
	// MinClientCap is the smallest client cap n a server accepts: m_max
	// times the default minimum anonymity set, so that every primary's
	// quota holds a default anonymity set (a leader cannot set n = 1).
	MinClientCap = MaxGroupServers * DefaultMinAnonymity
)

// CheckGroupParams refuses a leader's parameters that differ from this
// server's own in anything but the round limit: chunk size, request slots,
// cover window, rounds, the caps, the index retention, the pace (pace.go)
// and the registration window are group constants. A leader that chose
// the window could close registration before clients had it, or hold an
// epoch open for 2^30 ms (issue 25).
func CheckGroupParams(got, own wire.Params) error {
	a, b := got, own
	a.RoundLimitMs, b.RoundLimitMs = 0, 0
	if a.RegWindowMs != b.RegWindowMs {
		return fmt.Errorf("node: registration window %d ms, not this group's %d ms", got.RegWindowMs, own.RegWindowMs)
	}
	if a != b {
		return fmt.Errorf("node: epoch parameters %+v differ from this group's constants %+v", a, b)
	}
	return nil
}

// PrimaryQuota is the number of its clients a primary is sure to have in
// an epoch of m servers with client cap n: at least the default minimum
// anonymity set, and an equal share of the cap.
func PrimaryQuota(n uint32, m int) int {
	q := int(n) / max(m, 1)
	return max(q, DefaultMinAnonymity)
}

// SelectionHash orders the registrations beyond the quotas:
// H(epoch id ‖ β ‖ registration key), β the hash of the servers' reveals
// (reveal.go). A registration key is chosen after the epoch id is known,
// β only after the deadline: no client grinds its place.
func SelectionHash(epoch, beta [32]byte, regKey [32]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte("riffle/v3/select"))
	h.Write(epoch[:])
	h.Write(beta[:])
	h.Write(regKey[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// SelectClients is the client selection of §3: each primary's
// registrations in its own order (rank: the place in its list; a key
// without one goes last, by registration key) up to its quota, then what
// remains in selection-hash order (with β) up to the cap n. keys must be free of
// duplicates; the result is in slot order (by registration key).
func SelectClients(epoch, beta [32]byte, keys [][32]byte, primaryOf map[[32]byte]uint16, rank map[[32]byte]int, n uint32, m int) [][32]byte {
	if len(keys) <= int(n) {
		return keys
	}
	quota := PrimaryQuota(n, m)
	sorted := append([][32]byte(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i][:], sorted[j][:]) < 0 })
	byRank := append([][32]byte(nil), sorted...)
	rankOf := func(k [32]byte) int {
		if r, ok := rank[k]; ok {
			return r
		}
		return int(^uint(0) >> 1)
	}
	sort.SliceStable(byRank, func(i, j int) bool { return rankOf(byRank[i]) < rankOf(byRank[j]) })
	taken := map[[32]byte]bool{}
	per := map[uint16]int{}
	var rest [][32]byte
	for _, k := range byRank {
		p := primaryOf[k]
		if per[p] < quota && len(taken) < int(n) {
			per[p]++
			taken[k] = true
		} else {
			rest = append(rest, k)
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		hi, hj := SelectionHash(epoch, beta, rest[i]), SelectionHash(epoch, beta, rest[j])
		return bytes.Compare(hi[:], hj[:]) < 0
	})
	for _, k := range rest {
		if len(taken) >= int(n) {
			break
		}
		taken[k] = true
	}
	out := sorted[:0]
	for _, k := range sorted {
		if taken[k] {
			out = append(out, k)
		}
	}
	return out
}

// CheckPrimaryKept is a primary's check of a final descriptor (§4.1): all
// of its registrations are in, or the descriptor is full and holds at
// least its quota of them, the first of its own order (§3, §8: returning
// clean clients first). clients is the final descriptor's list.
func CheckPrimaryKept(clients []wire.ClientEntry, regs map[[32]byte]wire.Register, order [][32]byte, n uint32, m int) error {
	in := map[[32]byte]bool{}
	for _, c := range clients {
		in[c.RegKey] = true
	}
	kept, dropped := 0, 0
	for k := range regs {
		if in[k] {
			kept++
		} else {
			dropped++
		}
	}
	if dropped == 0 {
		return nil
	}
	if len(clients) < int(n) {
		return errors.New("node: final descriptor drops a client registered here and is not full")
	}
	if kept < PrimaryQuota(n, m) {
		return fmt.Errorf("node: final descriptor keeps %d clients registered here, below the quota %d", kept, PrimaryQuota(n, m))
	}
	for i, k := range order[:min(len(order), PrimaryQuota(n, m))] {
		if !in[k] {
			return fmt.Errorf("node: final descriptor drops the client at place %d of this primary's order, within its quota %d", i, PrimaryQuota(n, m))
		}
	}
	return nil
}
