package store

import (
	"encoding/hex"
	"testing"
	"time"
)

// TestVectors pins the record encodings written down in
// docs/proto-store.md: a change here is a change of the on-disk format
// (bump recordVersion) and of that document.
func TestVectors(t *testing.T) {
	tm := time.Unix(1_800_000_000, 0)
	fid, ep := ID{0xaa}, EpochID{0xee}
	z31 := "00000000000000000000000000000000000000000000000000000000000000" // 31 zero bytes
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"index entry", (&IndexEntry{FileID: fid, Name: "a.txt", Size: 300000, Chunks: 2, Epoch: ep, Round: 7, Time: tm}).encode(),
			"01" + "aa" + z31 + "00000005" + "612e747874" + "00000000000493e0" + "00000002" + "ee" + z31 + "00000007" + "18fae27693b40000"},
		{"round record", (&RoundRecord{Epoch: ep, Round: 7, Time: tm, Published: []ID{fid}, Requests: []Request{{fid, 1000}}}).encode(),
			"01" + "ee" + z31 + "00000007" + "18fae27693b40000" + "00000001" + "aa" + z31 + "00000001" + "aa" + z31 + "000003e8"},
		{"epoch record", (&EpochRecord{ID: ep, Number: 3, Started: tm, Descriptor: []byte{1, 2}}).encode(),
			"01" + "ee" + z31 + "0000000000000003" + "18fae27693b40000" + "0000000000000000" + "00000000" + "00000000" + "00000002" + "0102"},
		{"manifest", (&Manifest{ID: fid, Epoch: ep, Round: 7, Pos: 3, Data: []byte{0x89, 0x52}}).encode(),
			"01" + "ee" + z31 + "00000007" + "00000003" + "00000002" + "8952"},
		{"chunk meta", chunkMeta{touched: tm, length: 262144}.encode(), "18fae27693b40000" + "00040000"},
		{"share", (&Share{FileID: fid, Link: "riffle:x", Path: "/a", State: ShareUploading, ChunksTotal: 3, ChunksSent: 1, Created: tm, Updated: tm}).encode(),
			"01" + "aa" + z31 + "00000008" + "726966666c653a78" + "00000002" + "2f61" + "02" + "00000003" + "00000001" + "18fae27693b40000" + "18fae27693b40000"},
		{"download", (&Download{FileID: fid, Link: "riffle:x", Output: "/o", Needed: 4, Held: 2, Bytes: 1700, Created: tm, Updated: tm}).encode(),
			"01" + "aa" + z31 + "00000008" + "726966666c653a78" + "00000002" + "2f6f" + "00000004" + "00000002" + "00000000000006a4" + "00" + "18fae27693b40000" + "18fae27693b40000"},
		{"client strike", ClientStrike{Strikes: 3, Until: 19}.encode(), "00000003" + "0000000000000013"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if got := hex.EncodeToString(roundKey(ep, 7)); got != "ee"+z31+"00000007" {
		t.Errorf("round key %s", got)
	}
	if got := hex.EncodeToString(ageKey(tm, fid[:])); got != "18fae27693b40000"+"aa"+z31 {
		t.Errorf("age key %s", got)
	}
}
