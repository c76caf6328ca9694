package node

import (
	"bytes"
	"context"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

func beaconServer(t testing.TB) *Server {
	s, err := NewServer(context.Background(), ServerConfig{DataDir: t.TempDir(), Listen: []string{"/ip4/127.0.0.1/tcp/0"}, NoLAN: true, Store: NewMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestBeaconRoundTrip(t *testing.T) {
	s := beaconServer(t)
	b := s.lanBeacon()
	if len(b) > lanMaxPacket {
		t.Fatalf("beacon of %d bytes > %d", len(b), lanMaxPacket)
	}
	id, addrs, err := parseBeacon(b)
	if err != nil || id != s.ID() || len(addrs) == 0 {
		t.Fatalf("parseBeacon = %v, %v, %v", id, addrs, err)
	}
	for _, bad := range [][]byte{nil, []byte("riffle/1 beacon"), append(append([]byte(nil), b...), 0), b[:len(b)-1]} {
		if _, _, err := parseBeacon(bad); err == nil {
			t.Fatalf("malformed beacon of %d bytes accepted", len(bad))
		}
	}
}

// FuzzBeacon: a beacon is untrusted UDP input; parsing never panics, and an
// accepted beacon re-encodes to the same bytes.
func FuzzBeacon(f *testing.F) {
	s := beaconServer(f)
	f.Add(s.lanBeacon())
	f.Add([]byte(lanBeaconTag))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, _, err := parseBeacon(b)
		if err != nil {
			return
		}
		d := wire.Dec{B: b[len(lanBeaconTag):]}
		idb := d.Bytes(wire.MaxPeerID, "peer id")
		hb := d.Bytes(lanMaxPacket, "hello")
		var h wire.Hello
		if err := h.Unmarshal(hb); err != nil {
			t.Fatalf("accepted beacon with a bad hello: %v", err)
		}
		e := wire.Enc{B: []byte(lanBeaconTag)}
		e.Bytes(idb)
		e.Bytes(h.Marshal())
		if !bytes.Equal(e.B, b) || string(idb) != string(id) {
			t.Fatal("beacon decode→encode differs")
		}
	})
}
