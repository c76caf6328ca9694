package intake

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

func key(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8), 1} }

// TestOrderClassesAndRangeCap: returning clients come first, then at most
// perRange first-time keys of each range in turns, then the ranges'
// overflow, then the keys whose slot ran dry, whatever the lottery.
func TestOrderClassesAndRangeCap(t *testing.T) {
	var cs []Candidate
	kind := map[[32]byte]string{}
	add := func(c Candidate, k string) { cs = append(cs, c); kind[c.Reg] = k }
	for i := range 3 {
		add(Candidate{Reg: key(i), Range: "a", Returning: true}, "ret")
	}
	for i := 3; i < 13; i++ {
		add(Candidate{Reg: key(i), Range: "crowded"}, "crowded")
	}
	add(Candidate{Reg: key(13), Range: "b"}, "b")
	add(Candidate{Reg: key(14), Range: "a", Dry: true}, "dry")
	for seed := range 8 {
		out, err := Order(cs, 2, bytes.NewReader(bytes.Repeat([]byte{byte(seed)}, 32)))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range out {
			got = append(got, kind[k])
		}
		s := fmt.Sprint(got)
		if len(out) != len(cs) || got[0] != "ret" || got[1] != "ret" || got[2] != "ret" || got[len(got)-1] != "dry" {
			t.Fatalf("seed %d: %s", seed, s)
		}
		// After the returning: the crowded range's 2 and b's 1, then
		// the crowded range's 8 beyond its cap.
		head := map[string]int{}
		for _, k := range got[3:6] {
			head[k]++
		}
		if head["crowded"] != 2 || head["b"] != 1 {
			t.Fatalf("seed %d: the first-time keys before the overflow: %s", seed, s)
		}
	}
}

// TestFixDropsBeyondN: the order fixed keeps n registrations and drops
// the rest from every table; a later registration goes after them, and a
// long-term key takes one registration an epoch.
func TestFixDropsBeyondN(t *testing.T) {
	var tb Table
	var order [][32]byte
	for i := range 5 {
		if err := tb.Take(wire.Register{RegKey: key(i)}, "", [64]byte{}, LT{Key: key(100 + i)}, "r", false); err != nil {
			t.Fatal(err)
		}
		order = append(order, key(i))
	}
	if err := tb.Take(wire.Register{RegKey: key(9)}, "", [64]byte{}, LT{Key: key(100)}, "r", true); err == nil {
		t.Fatal("a long-term key registered twice in one epoch")
	}
	tb.Fix(order, 3)
	if len(tb.Order) != 3 || len(tb.Regs) != 3 || len(tb.LT) != 3 || len(tb.RegFrom) != 3 || len(tb.RegSig) != 3 || len(tb.RegRange) != 3 {
		t.Fatalf("after Fix to 3: order %d, regs %d, lt %d, from %d, sig %d, range %d", len(tb.Order), len(tb.Regs), len(tb.LT), len(tb.RegFrom), len(tb.RegSig), len(tb.RegRange))
	}
	if _, ok := tb.Regs[key(4)]; ok {
		t.Fatal("a registration beyond n kept")
	}
	tb.Fix(nil, 0) // fixed once
	if err := tb.Take(wire.Register{RegKey: key(7)}, "", [64]byte{}, LT{Key: key(107)}, "r", false); err != nil {
		t.Fatal(err)
	}
	if len(tb.Order) != 4 || tb.Order[3] != key(7) {
		t.Fatalf("a registration past the deadline: order %d", len(tb.Order))
	}
}
