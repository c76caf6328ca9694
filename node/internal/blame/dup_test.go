package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestDupVerdict: the rules of §4.1 v3 over the two slots' answers.
func TestDupVerdict(t *testing.T) {
	for _, c := range []struct {
		name           string
		proved, failed []uint32
		named, silent  []uint32
	}{
		{"proves, other silent", []uint32{1}, nil, nil, []uint32{2}},
		{"proves, other fails", []uint32{1}, []uint32{2}, []uint32{2}, nil},
		{"both prove", []uint32{1, 2}, nil, []uint32{1, 2}, nil},
		{"both fail", nil, []uint32{1, 2}, []uint32{1, 2}, nil},
		{"both silent", nil, nil, nil, []uint32{1, 2}},
	} {
		d := NewDup(wire.DupAbort{SlotA: 1, SlotB: 2}, nil)
		for _, s := range c.proved {
			d.Answer(s, true, []byte{byte(s)})
		}
		for _, s := range c.failed {
			d.Answer(s, false, []byte{byte(s)})
		}
		named, silent, evidence := d.Verdict()
		var got []uint32
		for _, n := range named {
			got = append(got, n.Slot)
		}
		if !same(got, c.named) || !same(silent, c.silent) {
			t.Errorf("%s: named %v silent %v, want %v %v", c.name, got, silent, c.named, c.silent)
		}
		if len(evidence) != 1+len(c.proved)+len(c.failed) {
			t.Errorf("%s: %d pieces of evidence, want the abort and each answer", c.name, len(evidence))
		}
		if !d.Done {
			t.Errorf("%s: not done after the verdict", c.name)
		}
	}
}

func same(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDupOneAnswer: a slot's first answer stands; none is taken after
// the verdict; Signed waits for every chain server.
func TestDupOneAnswer(t *testing.T) {
	d := NewDup(wire.DupAbort{SlotA: 1, SlotB: 2, Sigs: make([][64]byte, 2)}, nil)
	d.Answer(1, false, []byte{1})
	d.Answer(1, true, []byte{2})
	if !d.Failed(1) || d.Proved(1) {
		t.Fatal("a second answer replaced the first")
	}
	if d.Signed() {
		t.Fatal("signed without signatures")
	}
	d.Abort.Sigs[0], d.Abort.Sigs[1] = [64]byte{1}, [64]byte{2}
	if !d.Signed() {
		t.Fatal("not signed with every signature")
	}
	d.Verdict()
	d.Answer(2, true, []byte{3})
	if d.Proved(2) || d.Answers() != 1 {
		t.Fatal("an answer taken after the verdict")
	}
	if !d.Names(2) || d.Names(3) {
		t.Fatal("names the wrong slots")
	}
}

// TestLeftOutBounded: a silent client is refused up to the epoch after
// the verdict only, and an entry goes once a later verdict is past it.
func TestLeftOutBounded(t *testing.T) {
	l := LeftOut{}
	a, b := peer.ID("a"), peer.ID("b")
	l.Leave(a, 6)
	if l.Admit(a, 6) == nil || l.Admit(a, 7) != nil || l.Admit(b, 6) != nil {
		t.Fatal("left out for the wrong epochs")
	}
	l.Leave(b, 7)
	if len(l) != 2 {
		t.Fatalf("%d entries, want 2 (6 may still be open)", len(l))
	}
	l.Leave(b, 8)
	if _, ok := l[a]; ok || len(l) != 1 {
		t.Fatalf("%d entries, want a's dropped", len(l))
	}
}
