package node

import (
	"runtime"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// TestHostileBatchCostsNothing: a 338-byte Batch of 16 entries that are
// each one zero run of a whole onion (at the largest parameters, about 4
// MiB each) is refused before anything is rebuilt when its epoch is not
// one this server runs: the sender, epoch and signature are checked on
// the head alone (issue: one such frame cost a server 68 MiB).
func TestHostileBatchCostsNothing(t *testing.T) {
	virtual(t, func(t *testing.T) {
		s := beaconServer(t)
		onion := uint32(mix.OnionSize(MaxChunkSize, MaxK, wire.MaxServers))
		var e wire.Enc
		e.Fixed(make([]byte, 32)) // an epoch no server runs
		e.U32(0)
		e.U16(1)
		e.U32(16)
		for range 16 {
			e.U32(0)
			e.U32(onion)
			e.U32(0)
		}
		e.U32(0)
		e.U32(0)
		e.Fixed(make([]byte, 32+64))
		body := e.B
		if len(body) != 338 {
			t.Fatalf("hostile body of %d bytes, want 338", len(body))
		}
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		_, _, err := s.onBatch(s.h.ID(), body)
		runtime.ReadMemStats(&b)
		if err == nil {
			t.Fatal("batch for an unknown epoch accepted")
		}
		got := b.TotalAlloc - a.TotalAlloc
		t.Logf("hostile batch of %d bytes (%d bytes once rebuilt): %d bytes allocated, refused: %v", len(body), 16*uint64(onion), got, err)
		// The server's own background work allocates a little meanwhile.
		if got > 4<<20 {
			t.Fatalf("hostile batch of %d bytes cost %d bytes", len(body), got)
		}
	})
}
