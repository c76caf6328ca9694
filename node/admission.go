package node

import (
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"sort"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A primary's admission order (docs/protocol.md §3 "Registration", §8
// "After a blame", §5.4). When more clients register than the cap allows,
// the leader fills each primary's quota from the front of the list the
// primary signed, so the primary decides whom it vouches for first:
//
//  1. returning clients with a clean record here (their long-term key held
//     a slot to an epoch's end, unnamed, and its slot has not run dry
//     since), in random order;
//  2. first-time keys, by a lottery per address range (IPv4 /24, IPv6 /48)
//     over the whole registration window: each range's keys in random
//     order, the ranges taken in turns, at most rangeCap from each;
//  3. first-time keys beyond their range's cap, in random order;
//  4. keys whose slot ran dry here (§5.4), in random order.
//
// A disruptor that returns under a fresh key therefore competes with the
// newcomers of its own range for a few places, behind every clean
// returning client, and cannot fill a range's share to keep honest
// newcomers of other ranges out. The address range stays with the
// primary: it is never sent nor logged with a slot.

// candidate is one registration as the admission order sees it.
type candidate struct {
	reg       [32]byte // registration key
	rng       string   // address range it came from
	returning bool     // a clean record here and no dry slot since
	dry       bool     // its slot ran dry here
}

// rangeCap is how many first-time keys of one address range go before the
// first-time keys of ranges with fewer: a quarter of the quota, at least 1.
func rangeCap(quota int) int { return max(1, quota/4) }

// orderAdmission orders candidates as the list above says, at most
// perRange first-time keys of one range before the overflow, drawing its
// lotteries from rnd.
func orderAdmission(cs []candidate, perRange int, rnd io.Reader) ([][32]byte, error) {
	var seed [32]byte
	if _, err := io.ReadFull(rnd, seed[:]); err != nil {
		return nil, fmt.Errorf("node: admission lottery: %w", err)
	}
	r := mrand.New(mrand.NewChaCha8(seed))
	// Start from a fixed order so that the lottery alone decides.
	cs = append([]candidate(nil), cs...)
	sort.Slice(cs, func(i, j int) bool { return string(cs[i].reg[:]) < string(cs[j].reg[:]) })
	var ret, dry []candidate
	byRange := map[string][]candidate{}
	var ranges []string
	for _, c := range cs {
		switch {
		case c.dry:
			dry = append(dry, c)
		case c.returning:
			ret = append(ret, c)
		default:
			if _, ok := byRange[c.rng]; !ok {
				ranges = append(ranges, c.rng)
			}
			byRange[c.rng] = append(byRange[c.rng], c)
		}
	}
	shuffle := func(x []candidate) {
		r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	}
	out := make([][32]byte, 0, len(cs))
	add := func(x []candidate) {
		for _, c := range x {
			out = append(out, c.reg)
		}
	}
	shuffle(ret)
	add(ret)
	sort.Strings(ranges)
	r.Shuffle(len(ranges), func(i, j int) { ranges[i], ranges[j] = ranges[j], ranges[i] })
	var over []candidate
	for _, g := range ranges {
		shuffle(byRange[g])
	}
	for turn := 0; turn < perRange; turn++ {
		for _, g := range ranges {
			if turn < len(byRange[g]) {
				out = append(out, byRange[g][turn].reg)
			}
		}
	}
	for _, g := range ranges {
		if len(byRange[g]) > perRange {
			over = append(over, byRange[g][perRange:]...)
		}
	}
	shuffle(over)
	add(over)
	shuffle(dry)
	add(dry)
	return out, nil
}

// admissionOrder is this primary's order of its registrations of e, at its
// close. Call with s.mu held.
func (s *Server) admissionOrder(e *sepoch) [][32]byte {
	cs := make([]candidate, 0, len(e.regs))
	for k := range e.regs {
		c := candidate{reg: k, rng: e.regRange[k]}
		if lt, ok := e.lt[k]; ok {
			// A record exists once the key ended an epoch here
			// cleanly or ran dry (ltexclude.go).
			if seen, ok := s.keys.Seen(lt.key); ok {
				c.dry = seen.Dry > 0
				c.returning = seen.Dry == 0
			}
		}
		cs = append(cs, c)
	}
	quota := primaryQuota(e.v.Desc.Params.MaxClients, len(e.v.Chain))
	out, err := orderAdmission(cs, rangeCap(quota), s.rand)
	if err != nil {
		// No randomness: fall back on registration-key order (fresh
		// keys, nobody chooses it).
		s.log.Error("admission order", "err", err)
		out = out[:0]
		for _, c := range cs {
			out = append(out, c.reg)
		}
		sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	}
	return out
}

// addrRange is the address range a peer connects from (IPv4 /24, IPv6
// /48); every loopback client is in one range.
func (s *Server) addrRange(p peer.ID) string {
	rng, _ := s.addrRanges(p)
	return rng
}

// addrRanges is addrRange and the wider range it lies in, IPv6 /32 (""
// for IPv4, loopback and unknown addresses): tunnel brokers hand out
// /48s of a few /32s (indexserve.go).
func (s *Server) addrRanges(p peer.ID) (rng, wide string) {
	for _, a := range s.h.RemoteAddrs(p) {
		if ip := remoteIP(a); ip != nil {
			return ipRange(ip), wideRange(ip)
		}
	}
	return "unknown", ""
}

// wideRange names an IPv6 address's /32, "" for any other.
func wideRange(ip net.IP) string {
	if ip.IsLoopback() || ip.To4() != nil {
		return ""
	}
	return ip.Mask(net.CIDRMask(32, 128)).String() + "/32"
}

// ipRange names an address's range.
func ipRange(ip net.IP) string {
	if ip.IsLoopback() {
		return "loopback"
	}
	if v4 := ip.To4(); v4 != nil {
		return fmt.Sprintf("%d.%d.%d.0/24", v4[0], v4[1], v4[2])
	}
	return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
}
