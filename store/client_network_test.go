package store

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The network record round-trips; a file without one stands for the
// servers it synced the index from; a fresh file for none.
func TestClientNetworkRecord(t *testing.T) {
	c, err := OpenClient(filepath.Join(t.TempDir(), "client.db"), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Network(); err != nil || got != nil {
		t.Fatalf("fresh file: %q, %v; want none", got, err)
	}
	if err := c.ApplyIndex([]byte("server-a"), 3, time.Unix(1, 0), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Network(); err != nil || !slices.EqualFunc(got, [][]byte{[]byte("server-a")}, slices.Equal) {
		t.Fatalf("file of before the record: %q, %v; want the server synced from", got, err)
	}
	want := [][]byte{[]byte("p1"), []byte("p2"), []byte("p3")}
	if err := c.PutNetwork(want); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Network(); err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("record: %q, %v; want %q", got, err, want)
	}
	for _, bad := range [][][]byte{nil, {{}}, {make([]byte, maxServerKey+1)}, make([][]byte, MaxNetworkServers+1)} {
		if err := c.PutNetwork(bad); err == nil {
			t.Errorf("PutNetwork of %d servers (first %d bytes) taken", len(bad), len(bad[0]))
		}
	}
}
