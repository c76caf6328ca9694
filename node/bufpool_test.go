package node

import "testing"

func TestBufPool(t *testing.T) {
	var p bufPool
	small := p.get(100)
	if len(small) != 100 {
		t.Fatal("small buffer")
	}
	p.put(small) // not pooled: ignored
	b := p.get(poolMin + 1)
	if len(b) != poolMin+1 || cap(b) != 2*poolMin {
		t.Fatalf("len %d cap %d", len(b), cap(b))
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
	p.put(make([]byte, 3*poolMin)) // not a power of two: ignored
	if p.bytes != 0 {
		t.Fatalf("pool holds %d bytes of foreign buffers", p.bytes)
	}
	for i := 0; i < poolMax/poolMin+10; i++ {
		p.put(make([]byte, poolMin))
	}
	if p.bytes > poolMax {
		t.Fatalf("pool holds %d bytes > %d", p.bytes, poolMax)
	}
}
