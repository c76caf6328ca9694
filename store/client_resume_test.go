package store

import (
	"path/filepath"
	"testing"
	"time"
)

// A resumable share keeps its link and its chunks' states across a
// reopen; the mark rides in the onion's transaction; the records are
// bounded.
func TestShareResumeRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.db")
	c, err := OpenClient(path, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, a, b := ID{1}, ID{2}, ID{3}
	if _, _, ok, err := c.ResumeShare(key); ok || err != nil {
		t.Fatalf("fresh: %v %v", ok, err)
	}
	if err := c.StartShareResume(key, "riffle:x", time.Unix(10, 0)); err != nil {
		t.Fatal(err)
	}
	if err := c.PutOnionMarked(EpochID{9}, 0, []byte("onion"), 0, &ShareMark{Key: key, Chunk: a}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutOnionMarked(EpochID{9}, 1, []byte("onion"), 0, &ShareMark{Key: key, Chunk: b}); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkSharePublished(ShareMark{Key: key, Chunk: a}); err != nil {
		t.Fatal(err)
	}
	// A second sealing of a round is refused, and marks nothing.
	if err := c.PutOnionMarked(EpochID{9}, 0, []byte("other"), 0, &ShareMark{Key: key, Chunk: ID{4}}); err == nil {
		t.Fatal("second sealing stored")
	}
	c.Close()
	if c, err = OpenClient(path, ClientOptions{}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	link, states, ok, err := c.ResumeShare(key)
	if err != nil || !ok || link != "riffle:x" || len(states) != 2 || states[a] != ChunkPublished || states[b] != ChunkSent {
		t.Fatalf("after reopen: %q %v %v %v", link, states, ok, err)
	}
	for i := range MaxResumableShares + 3 {
		if err := c.StartShareResume(ID{100, byte(i)}, "l", time.Unix(int64(20+i), 0)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, ok, _ := c.ResumeShare(key); ok {
		t.Error("the oldest record outlived the bound")
	}
	if _, _, ok, _ := c.ResumeShare(ID{100, MaxResumableShares + 2}); !ok {
		t.Error("the newest record went")
	}
	if err := c.DropShareResume(ID{100, MaxResumableShares + 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.DropShareResume(ID{100, MaxResumableShares + 2}); err != nil {
		t.Fatalf("drop twice: %v", err)
	}
}
