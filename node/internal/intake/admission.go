package intake

import (
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"sort"

	ma "github.com/multiformats/go-multiaddr"
)

// A primary's admission order (§3 "Registration", §8 "After a blame",
// §5.4). When more clients register than the cap allows, the leader fills
// each primary's quota from the front of the list the primary signed, so
// the primary decides whom it vouches for first:
//
//  1. returning clients with a clean record here (their long-term key held
//     a slot to an epoch's end, unnamed, and its slot has not run dry
//     since), in random order;
//  2. first-time keys, by a lottery per address range (IPv4 /24, IPv6 /48)
//     over the whole registration window: each range's keys in random
//     order, the ranges taken in turns, at most RangeCap from each;
//  3. first-time keys beyond their range's cap, in random order;
//  4. keys whose slot ran dry here (§5.4), in random order.
//
// A disruptor that returns under a fresh key therefore competes with the
// newcomers of its own range for a few places, behind every clean
// returning client, and cannot fill a range's share to keep honest
// newcomers of other ranges out. The address range stays with the
// primary: it is never sent nor logged with a slot.

// Candidate is one registration as the admission order sees it.
type Candidate struct {
	Reg       [32]byte // registration key
	Range     string   // address range it came from
	Returning bool     // a clean record here and no dry slot since
	Dry       bool     // its slot ran dry here
}

// RangeCap is how many first-time keys of one address range go before the
// first-time keys of ranges with fewer: a quarter of the quota, at least 1.
func RangeCap(quota int) int { return max(1, quota/4) }

// Order orders candidates as the list above says, at most perRange
// first-time keys of one range before the overflow, drawing its lotteries
// from rnd.
func Order(cs []Candidate, perRange int, rnd io.Reader) ([][32]byte, error) {
	var seed [32]byte
	if _, err := io.ReadFull(rnd, seed[:]); err != nil {
		return nil, fmt.Errorf("node: admission lottery: %w", err)
	}
	r := mrand.New(mrand.NewChaCha8(seed))
	// Start from a fixed order so that the lottery alone decides.
	cs = append([]Candidate(nil), cs...)
	sort.Slice(cs, func(i, j int) bool { return string(cs[i].Reg[:]) < string(cs[j].Reg[:]) })
	var ret, dry []Candidate
	byRange := map[string][]Candidate{}
	var ranges []string
	for _, c := range cs {
		switch {
		case c.Dry:
			dry = append(dry, c)
		case c.Returning:
			ret = append(ret, c)
		default:
			if _, ok := byRange[c.Range]; !ok {
				ranges = append(ranges, c.Range)
			}
			byRange[c.Range] = append(byRange[c.Range], c)
		}
	}
	shuffle := func(x []Candidate) {
		r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	}
	out := make([][32]byte, 0, len(cs))
	add := func(x []Candidate) {
		for _, c := range x {
			out = append(out, c.Reg)
		}
	}
	shuffle(ret)
	add(ret)
	sort.Strings(ranges)
	r.Shuffle(len(ranges), func(i, j int) { ranges[i], ranges[j] = ranges[j], ranges[i] })
	var over []Candidate
	for _, g := range ranges {
		shuffle(byRange[g])
	}
	for turn := 0; turn < perRange; turn++ {
		for _, g := range ranges {
			if turn < len(byRange[g]) {
				out = append(out, byRange[g][turn].Reg)
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

// KeyOrder is the registration keys of cs in key order: the order when
// no randomness is to be had (fresh keys, nobody chooses it).
func KeyOrder(cs []Candidate) [][32]byte {
	out := make([][32]byte, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Reg)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}

// RemoteIP is the IP address of a peer's remote multiaddr, nil if it has
// none.
func RemoteIP(a ma.Multiaddr) net.IP {
	for _, code := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := a.ValueForProtocol(code); err == nil {
			return net.ParseIP(v)
		}
	}
	return nil
}

// WideRange names an IPv6 address's /32, "" for any other: tunnel brokers
// hand out /48s of a few /32s.
func WideRange(ip net.IP) string {
	if ip.IsLoopback() || ip.To4() != nil {
		return ""
	}
	return ip.Mask(net.CIDRMask(32, 128)).String() + "/32"
}

// IPRange names an address's range (IPv4 /24, IPv6 /48); every loopback
// address is in one range.
func IPRange(ip net.IP) string {
	if ip.IsLoopback() {
		return "loopback"
	}
	if v4 := ip.To4(); v4 != nil {
		return fmt.Sprintf("%d.%d.%d.0/24", v4[0], v4[1], v4[2])
	}
	return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
}
