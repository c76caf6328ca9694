package node

import "testing"

func TestBufPool(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var p bufPool
		small := p.get(100)
		if len(small) != 100 {
			t.Fatal("small buffer")
		}
		p.put(small) // not pooled: ignored
		b := p.get(poolMin + 1)
		if len(b) != poolMin+1 || cap(b) != poolMin+poolMin/16 {
			t.Fatalf("len %d cap %d", len(b), cap(b))
		}
		for _, n := range []int{poolMin, poolMin + 1, 256<<10 + 300, 50 << 20, 1<<30 + 1} {
			c := poolClass(n)
			if c < n || c-n > c/16 || poolClass(c) != c {
				t.Errorf("class of %d is %d", n, c)
			}
		}
		b[0] = 7
		p.put(b)
		c := p.get(poolMin + 5)
		if &c[0] != &b[0] || len(c) != poolMin+5 {
			t.Fatal("a freed buffer of the class was not reused")
		}
		if d := p.get(poolMin + 5); &d[0] == &c[0] {
			t.Fatal("one buffer handed out twice")
		}
		p.put(make([]byte, 3*poolMin+1)) // not a class size: ignored
		if p.bytes != 0 {
			t.Fatalf("pool holds %d bytes of foreign buffers", p.bytes)
		}
		for i := 0; i < poolMax/poolMin+10; i++ {
			p.put(make([]byte, poolMin))
		}
		if p.bytes > poolMax {
			t.Fatalf("pool holds %d bytes > %d", p.bytes, poolMax)
		}
		// An epoch of n = 4, b = 64 KiB caps the free bytes at
		// poolRounds databases, at once and from then on.
		p.setLimit(4, poolMin)
		if want := poolRounds * 4 * poolMin; p.bytes > want {
			t.Fatalf("pool holds %d bytes after setLimit, want at most %d", p.bytes, want)
		}
		for i := 0; i < 100; i++ {
			p.put(make([]byte, poolMin))
		}
		if want := poolRounds * 4 * poolMin; p.bytes > want {
			t.Fatalf("pool holds %d bytes, want at most %d", p.bytes, want)
		}
	})
}
