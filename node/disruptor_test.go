//go:build riffletest

package node

import (
	"bytes"
	"fmt"
	"net"
	"sort"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/intake"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/registry"
)

// TestReturningDisruptorCost measures what a disrupting client that comes
// back costs (docs/anonymity.md, "A disruptor that comes back"): over 100
// epochs it registers at the same primary every epoch and spoils every
// epoch it gets a slot in (each is blamed, as a round blame names it). Its
// three ways back: the same long-term key; a fresh key from the same
// address; a fresh key from a new address range every time. The primary's
// refusals, admission order, the leader's selection and the exclusions are
// the server's own code; only the network is left out (on 127.0.0.1 every
// client shares one address, which no primary excludes). Two loads: under
// the cap (every registration admitted), and full (n = 64, m = 2; the
// primary has 24 returning clients of clean record and 40 first-time
// clients from 10 other /24 ranges, the other primary 40 returning).
func TestReturningDisruptorCost(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		const epochs = 100
		type scenario struct {
			name              string
			freshKey, newAddr bool
		}
		scenarios := []scenario{
			{"same long-term key, same address", false, false},
			{"fresh key, same address", true, false},
			{"fresh key, new address range", true, true},
		}
		for _, full := range []bool{false, true} {
			for _, sc := range scenarios {
				spoiled := disruptorRun(t, epochs, sc.freshKey, sc.newAddr, full)
				load := "under the cap"
				if full {
					load = "full"
				}
				t.Logf("%-34s %-13s spoils %3d of %d epochs", sc.name, load, spoiled, epochs)
				switch {
				case !sc.newAddr && spoiled > 8:
					t.Errorf("%s: %d epochs spoiled, want at most 8 (doubling exclusion)", sc.name, spoiled)
				case sc.newAddr && !full && spoiled != epochs:
					t.Errorf("%s under the cap: %d, the model admits every registration", sc.name, spoiled)
				case sc.newAddr && full && spoiled >= epochs:
					t.Errorf("%s, full: every epoch spoiled: the range lottery did nothing", sc.name)
				}
			}
		}
	})
}

// disruptorRun plays epochs 1..epochs and returns how many the disruptor
// spoiled.
func disruptorRun(t *testing.T, epochs int, freshKey, newAddr, full bool) int {
	s := storeServer(t)
	n, m := uint32(MinClientCap), 2
	var seq uint32
	fresh := func() [32]byte {
		seq++
		var k [32]byte
		k[0], k[1], k[2], k[3] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
		k[31] = 0xd1
		return k
	}
	// The primary's returning clients: clean in epoch 0.
	var returning [][32]byte
	for range 24 {
		k := fresh()
		s.keys.NoteClientEnd(k, 0, false)
		returning = append(returning, k)
	}
	others := 10 // the other primary's clients
	if full {
		others = 40
	}
	badKey := fresh()
	spoiled := 0
	for number := uint64(1); number <= uint64(epochs); number++ {
		if freshKey {
			badKey = fresh()
		}
		addr := "198.51.100.7"
		if newAddr {
			addr = fmt.Sprintf("10.%d.%d.7", number>>8, number&0xff)
		}
		// The primary's refusals at registration (intake.go): the key,
		// then the address (roundblame_after.go).
		_, keyOut := s.keys.Excluded(badKey, number)
		addrOut := number <= s.strikes.Clients["ip "+addr].Until
		e := &sepoch{pos: 0}
		e.v = &proto.View{Desc: &wire.Descriptor{Number: number, Params: wire.Params{MaxClients: n}}, Chain: make([]peer.ID, m)}
		tb := e.reg.Table()
		tb.Regs, tb.LT, tb.RegRange = map[[32]byte]wire.Register{}, map[[32]byte]intake.LT{}, map[[32]byte]string{}
		reg := func(lt [32]byte, rng string) [32]byte {
			r := fresh()
			tb.Regs[r] = wire.Register{RegKey: r}
			tb.LT[r] = intake.LT{Key: lt}
			tb.RegRange[r] = rng
			return r
		}
		for _, k := range returning {
			reg(k, "192.0.2.0/24")
		}
		if full {
			for i := range 40 {
				reg(fresh(), fmt.Sprintf("203.0.%d.0/24", i%10))
			}
		}
		badReg := [32]byte{}
		if !keyOut && !addrOut {
			badReg = reg(badKey, intake.IPRange(parseIP(t, addr)))
		}
		order, _ := e.reg.AdmissionOrder(proto.PrimaryQuota(n, m), registry.SeenDry(&s.keys), s.rand)
		primaryOf, rank := map[[32]byte]uint16{}, map[[32]byte]int{}
		var keys [][32]byte
		for i, k := range order {
			primaryOf[k], rank[k] = 0, i
			keys = append(keys, k)
		}
		for i := range others {
			k := fresh()
			primaryOf[k], rank[k] = 1, i
			keys = append(keys, k)
		}
		admitted := false
		for _, k := range proto.SelectClients(e.v.ID, fresh(), sortedKeys(keys), primaryOf, rank, n, m) {
			admitted = admitted || (badReg != [32]byte{} && k == badReg)
		}
		if !admitted {
			continue
		}
		// The disruptor spoils the epoch and is named: its key is
		// excluded everywhere, its address at this primary.
		spoiled++
		s.keys.Strike(badKey, number, nil)
		s.strikes.Strike("ip "+addr, number)
	}
	return spoiled
}

func parseIP(t *testing.T, s string) net.IP {
	ip := net.ParseIP(s)
	if ip == nil {
		t.Fatalf("address %q", s)
	}
	return ip
}

// sortedKeys sorts registration keys (selectClients wants them free of
// duplicates; the slot order is by key).
func sortedKeys(keys [][32]byte) [][32]byte {
	out := append([][32]byte(nil), keys...)
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}
