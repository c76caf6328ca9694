package ltkeys

import (
	"log/slog"
	"testing"

	"github.com/riffle-net/riffle/store"
)

// memRecorder is a Recorder in memory.
type memRecorder struct {
	x    map[[32]byte]store.KeyExclusion
	seen map[[32]byte]store.KeySeen
}

func newMem() *memRecorder {
	return &memRecorder{x: map[[32]byte]store.KeyExclusion{}, seen: map[[32]byte]store.KeySeen{}}
}

func (m *memRecorder) PutKeyExclusion(k [32]byte, x store.KeyExclusion) error {
	m.x[k] = x
	return nil
}
func (m *memRecorder) KeyExclusions() (map[[32]byte]store.KeyExclusion, error) {
	out := map[[32]byte]store.KeyExclusion{}
	for k, v := range m.x {
		out[k] = v
	}
	return out, nil
}
func (m *memRecorder) PutKeySeen(k [32]byte, r store.KeySeen) error { m.seen[k] = r; return nil }
func (m *memRecorder) DeleteKeySeen(k [32]byte) error               { delete(m.seen, k); return nil }
func (m *memRecorder) KeysSeen() (map[[32]byte]store.KeySeen, error) {
	out := map[[32]byte]store.KeySeen{}
	for k, v := range m.seen {
		out[k] = v
	}
	return out, nil
}

// TestKeysRecords (§5.4, §8 "After a blame"): a clean epoch records the
// key and halves its dry count, a dry one counts; a strike excludes the
// key, drops its record and writes both through to the store, so that
// Keys started again on that store refuse the key and count on; an
// excluded key gets no record while excluded.
func TestKeysRecords(t *testing.T) {
	m := newMem()
	ks := &Keys{St: m, Log: slog.New(slog.DiscardHandler)}
	a, b := [32]byte{1}, [32]byte{2}
	ks.NoteClientEnd(a, 3, true)
	ks.NoteClientEnd(a, 4, true)
	ks.NoteClientEnd(a, 5, false)
	if r, ok := ks.Seen(a); !ok || r.Clean != 5 || r.Dry != 1 {
		t.Fatalf("after two dry epochs and a clean one: %+v %v, want clean 5, dry 1", r, ok)
	}
	if m.seen[a] != (store.KeySeen{Clean: 5, Dry: 1}) {
		t.Fatalf("store holds %+v", m.seen[a])
	}
	if got := ks.Strike(a, 10, []byte("ev")); got != 11 {
		t.Fatalf("first strike: excluded to %d, want 11", got)
	}
	if _, ok := ks.Seen(a); ok {
		t.Fatal("a struck key kept its record")
	}
	if _, ok := m.seen[a]; ok {
		t.Fatal("a struck key's record stayed in the store")
	}
	if string(m.x[a].Evidence) != "ev" || m.x[a].Strikes != 1 {
		t.Fatalf("store's exclusion %+v", m.x[a])
	}
	ks.NoteClientEnd(a, 11, false)
	if _, ok := ks.Seen(a); ok {
		t.Fatal("an excluded key got a record")
	}
	ks = &Keys{St: m, Log: slog.New(slog.DiscardHandler)}
	if until, ok := ks.Excluded(a, 11); !ok || until != 11 {
		t.Fatalf("started again: excluded %v to %d, want to 11", ok, until)
	}
	if _, ok := ks.Excluded(a, 12); ok {
		t.Fatal("excluded past its end")
	}
	if _, ok := ks.Excluded(b, 11); ok {
		t.Fatal("another key excluded")
	}
	if got := ks.Strike(a, 20, nil); got != 22 {
		t.Fatalf("second strike after a restart: to %d, want 22 (the count survives)", got)
	}
}

// TestKeysSeenBounded: the record of a primary's clients' keys holds at
// most MaxKeysSeen keys; a new key drops the one with the oldest clean
// epoch, here and in the store.
func TestKeysSeenBounded(t *testing.T) {
	m := newMem()
	ks := &Keys{St: m, Log: slog.New(slog.DiscardHandler)}
	key := func(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8), byte(i >> 16)} }
	for i := range MaxKeysSeen {
		ks.NoteClientEnd(key(i), uint64(10+i), false)
	}
	ks.NoteClientEnd(key(MaxKeysSeen), 5, false)
	if len(ks.seen) != MaxKeysSeen || len(m.seen) != MaxKeysSeen {
		t.Fatalf("%d keys kept, %d in the store; want %d", len(ks.seen), len(m.seen), MaxKeysSeen)
	}
	if _, ok := ks.Seen(key(0)); ok {
		t.Fatal("the oldest clean key was kept")
	}
	if _, ok := m.seen[key(0)]; ok {
		t.Fatal("the oldest clean key stayed in the store")
	}
	if _, ok := ks.Seen(key(MaxKeysSeen)); !ok {
		t.Fatal("the new key got no record")
	}
}
