package transport

import "testing"

func TestBufPool(t *testing.T) {
	t.Parallel()
	var p BufPool
	small := p.Get(100)
	if len(small) != 100 {
		t.Fatal("small buffer")
	}
	p.Put(small) // not pooled: ignored
	b := p.Get(PoolMin + 1)
	if len(b) != PoolMin+1 || cap(b) != PoolMin+PoolMin/16 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	for _, n := range []int{PoolMin, PoolMin + 1, 256<<10 + 300, 50 << 20, 1<<30 + 1} {
		c := poolClass(n)
		if c < n || c-n > c/16 || poolClass(c) != c {
			t.Errorf("class of %d is %d", n, c)
		}
	}
	b[0] = 7
	p.Put(b)
	c := p.Get(PoolMin + 5)
	if &c[0] != &b[0] || len(c) != PoolMin+5 {
		t.Fatal("a freed buffer of the class was not reused")
	}
	if d := p.Get(PoolMin + 5); &d[0] == &c[0] {
		t.Fatal("one buffer handed out twice")
	}
	p.Put(make([]byte, 3*PoolMin+1)) // not a class size: ignored
	if p.bytes != 0 {
		t.Fatalf("pool holds %d bytes of foreign buffers", p.bytes)
	}
	for i := 0; i < poolMax/PoolMin+10; i++ {
		p.Put(make([]byte, PoolMin))
	}
	if p.bytes > poolMax {
		t.Fatalf("pool holds %d bytes > %d", p.bytes, poolMax)
	}
	// An epoch of n = 4, b = 64 KiB caps the free bytes at
	// poolRounds databases, at once and from then on.
	p.SetLimit(4, PoolMin)
	if want := poolRounds * 4 * PoolMin; p.bytes > want {
		t.Fatalf("pool holds %d bytes after setLimit, want at most %d", p.bytes, want)
	}
	for i := 0; i < 100; i++ {
		p.Put(make([]byte, PoolMin))
	}
	if want := poolRounds * 4 * PoolMin; p.bytes > want {
		t.Fatalf("pool holds %d bytes, want at most %d", p.bytes, want)
	}
}
