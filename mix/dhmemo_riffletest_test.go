//go:build riffletest

package mix

import "testing"

// TestDHMemo: with the memo on, the servers take from it every share the
// clients computed for a round (2 a client and server), and derive the
// keys they derive without it; a server whose round keys are not those
// the clients used takes nothing and derives the keys of its own secret.
func TestDHMemo(t *testing.T) {
	SetDHMemo(true)
	defer SetDHMemo(false)
	const m, n = 3, 4
	f := newRoundFixture(t, m, n, 2, "dh memo")
	serverKeys := func(rk *RoundKeys, s int, r uint64) []LayerKey {
		t.Helper()
		keys, err := ServerLayerKeys(f.epoch, s, r, rk, f.U[s])
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	for _, c := range f.clients {
		if _, err := c.LayerKeys(f.epoch, 1, f.Y, f.Yp); err != nil {
			t.Fatal(err)
		}
	}
	before := DHMemoHits()
	var got [m][]LayerKey
	for s := range m {
		got[s] = serverKeys(f.rks[s], s, 1)
	}
	if h := DHMemoHits() - before; h != 2*m*n {
		t.Errorf("%d shares taken from the memo, want %d", h, 2*m*n)
	}
	SetDHMemo(false)
	for s := range m {
		for p, k := range serverKeys(f.rks[s], s, 1) {
			if k != got[s][p] {
				t.Errorf("server %d position %d: keys from the memo differ from its own", s, p)
			}
		}
	}

	// Server 0 with other round keys than the clients used.
	SetDHMemo(true)
	other, err := NewRoundKeys(2, newDetRand("dh memo, other keys"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.clients {
		if _, err := c.LayerKeys(f.epoch, 0, f.Y, f.Yp); err != nil {
			t.Fatal(err)
		}
	}
	before = DHMemoHits()
	memo := serverKeys(other, 0, 0)
	if h := DHMemoHits() - before; h != 0 {
		t.Errorf("a server with other keys took %d shares from the memo", h)
	}
	SetDHMemo(false)
	for p, k := range serverKeys(other, 0, 0) {
		if k != memo[p] {
			t.Errorf("position %d: a server with other keys derived %x with the memo on, %x off", p, k.Enc[:4], memo[p].Enc[:4])
		}
	}
}

// BenchmarkDHMemo derives one round's layer keys at every client and
// server, as a network in one process does, with the memo off and on:
// the ratio of the two is what the memo saves of the layer keys' CPU
// (cpu-ns/op: the process's user and system time, which a loaded machine
// changes less than the wall time).
func BenchmarkDHMemo(b *testing.B) {
	const m, n = 3, 8
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			SetDHMemo(on)
			defer SetDHMemo(false)
			f := newRoundFixture(b, m, n, 1, "dh memo bench")
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				for _, c := range f.clients {
					if _, err := c.LayerKeys(f.epoch, 0, f.Y, f.Yp); err != nil {
						b.Fatal(err)
					}
				}
				for s := range m {
					if _, err := ServerLayerKeys(f.epoch, s, 0, f.rks[s], f.U[s]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
