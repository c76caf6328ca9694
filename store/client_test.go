package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestClientDownloadResume(t *testing.T) {
	r := testRand(20)
	path := filepath.Join(t.TempDir(), "client.db")
	c, err := OpenClient(path, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manifest := mkChunk(r, 700)
	data := []Chunk{mkChunk(r, 256<<10), mkChunk(r, 256<<10), mkChunk(r, 1234)}
	fid := manifest.ID
	const link = "riffle:abc#key"
	dl, resumed, err := c.StartDownload(fid, link, "/out/file")
	if err != nil || resumed || dl.Needed != 1 || dl.Held != 0 {
		t.Fatalf("start: %+v %v %v", dl, resumed, err)
	}
	if _, err := c.MarkChunk(fid, data[0].Data); !errors.Is(err, ErrNotNeeded) {
		t.Fatalf("chunk not yet needed: %v", err)
	}
	if dl, err = c.MarkChunk(fid, manifest.Data); err != nil || dl.Held != 1 {
		t.Fatalf("mark manifest: %+v %v", dl, err)
	}
	// The manifest lists the data chunks, one of them twice.
	if dl, err = c.Need(fid, append(ids(data), data[0].ID)); err != nil || dl.Needed != 4 {
		t.Fatalf("need: %+v %v", dl, err)
	}
	if dl, err = c.MarkChunk(fid, data[1].Data); err != nil || dl.Held != 2 {
		t.Fatalf("mark: %+v %v", dl, err)
	}
	if _, err := c.CompleteDownload(fid); err == nil {
		t.Fatal("completed a download that lacks chunks")
	}
	c.Close()

	// Interrupted; the next run resumes with what was held.
	c, err = OpenClient(path, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dl, resumed, err = c.StartDownload(fid, "ignored", "ignored")
	if err != nil || !resumed || dl.Held != 2 || dl.Needed != 4 || dl.Link != link || dl.Output != "/out/file" {
		t.Fatalf("resume: %+v %v %v", dl, resumed, err)
	}
	wantBytes := uint64(len(manifest.Data) + len(data[1].Data))
	if dl.Bytes != wantBytes {
		t.Fatalf("held bytes %d, want %d", dl.Bytes, wantBytes)
	}
	missing, err := c.Missing(fid)
	if err != nil || len(missing) != 2 {
		t.Fatalf("missing %x, %v", missing, err)
	}
	for _, id := range missing {
		if id != data[0].ID && id != data[2].ID {
			t.Fatalf("missing lists %x", id[:4])
		}
	}
	for _, ch := range []Chunk{data[0], data[2], data[2]} {
		if dl, err = c.MarkChunk(fid, ch.Data); err != nil {
			t.Fatal(err)
		}
	}
	if dl.Held != 4 {
		t.Fatalf("held %d after marking all", dl.Held)
	}
	// Assemble the output in file order straight from the map.
	var out []byte
	err = c.ViewHeld(fid, ids(data), func(rows [][]byte) error {
		for _, row := range rows {
			out = append(out, row...)
		}
		return nil
	})
	if err != nil || !bytes.Equal(out, append(append(append([]byte{}, data[0].Data...), data[1].Data...), data[2].Data...)) {
		t.Fatalf("assembled %d bytes, %v", len(out), err)
	}
	got, err := c.HeldChunk(fid, manifest.ID)
	if err != nil || !bytes.Equal(got, manifest.Data) {
		t.Fatalf("held manifest: %v", err)
	}
	if dl, err = c.CompleteDownload(fid); err != nil || !dl.Completed || dl.Bytes != 0 {
		t.Fatalf("complete: %+v %v", dl, err)
	}
	if _, err := c.HeldChunk(fid, manifest.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("chunk bytes kept after completion: %v", err)
	}
	var n int
	if err := c.Downloads(func(d Download) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("downloads: %d %v", n, err)
	}
	if err := c.RemoveDownload(fid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Download(fid); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed download: %v", err)
	}
}

func TestClientShares(t *testing.T) {
	c, err := OpenClient(filepath.Join(t.TempDir(), "client.db"), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Unix(1_800_000_000, 0).UTC()
	s := Share{FileID: ID{1}, Link: "riffle:xyz", Path: "/home/u/a.pdf", State: ShareQueued, ChunksTotal: 10, Created: now, Updated: now}
	if err := c.PutShare(s); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateShare(s.FileID, func(sh *Share) error {
		sh.ChunksSent, sh.State = 4, ShareUploading
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateShare(s.FileID, func(sh *Share) error { sh.FileID = ID{2}; return nil }); err == nil {
		t.Fatal("update changed the file id")
	}
	if err := c.UpdateShare(ID{3}, func(*Share) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of unknown share: %v", err)
	}
	got, err := c.Share(s.FileID)
	if err != nil || got.ChunksSent != 4 || got.State != ShareUploading || got.Path != s.Path || !got.Created.Equal(now) {
		t.Fatalf("share: %+v %v", got, err)
	}
	if err := c.PutShare(Share{FileID: ID{2}, Path: string([]byte{0xff})}); err == nil {
		t.Fatal("non-UTF-8 path accepted")
	}
	var n int
	if err := c.Shares(func(Share) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("shares: %d %v", n, err)
	}
	if err := c.RemoveShare(s.FileID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Share(s.FileID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed share: %v", err)
	}
}

func TestClientOnions(t *testing.T) {
	c, err := OpenClient(filepath.Join(t.TempDir(), "client.db"), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := testRand(21)
	ep, other := EpochID{1}, EpochID{2}
	o := mkChunk(r, 300<<10).Data
	for round := uint32(0); round < 3; round++ {
		if err := c.PutOnion(ep, round, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutOnion(other, 0, o[:10]); err != nil {
		t.Fatal(err)
	}
	if err := c.PutOnion(ep, 1, o); err != nil {
		t.Fatalf("same onion again: %v", err)
	}
	// Sealing a round twice must never get through (§5.1).
	if err := c.PutOnion(ep, 1, o[1:]); !errors.Is(err, ErrConflict) {
		t.Fatalf("second onion for a round: %v", err)
	}
	got, err := c.Onion(ep, 2)
	if err != nil || !bytes.Equal(got, o) {
		t.Fatalf("onion: %d bytes, %v", len(got), err)
	}
	if n, err := c.DropOnions(ep); err != nil || n != 3 {
		t.Fatalf("drop: %d %v", n, err)
	}
	if _, err := c.Onion(ep, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("dropped onion: %v", err)
	}
	if got, err := c.Onion(other, 0); err != nil || !bytes.Equal(got, o[:10]) {
		t.Fatalf("other epoch's onion: %v", err)
	}
}
