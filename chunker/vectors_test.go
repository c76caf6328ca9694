package chunker

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// vector is one fixed input and everything Share must make of it. The
// input is byte i = i mod 251 for i < Length; the file key, if any, is the
// bytes 0, 1, …, 31.
type vector struct {
	Case      string   `json:"case"`
	FileName  string   `json:"file_name"`
	MediaType string   `json:"media_type"`
	ChunkSize int      `json:"chunk_size"`
	Length    int      `json:"length"`
	Encrypt   bool     `json:"encrypt"`
	DataIDs   []string `json:"data_ids"`
	Manifests []string `json:"manifests_hex"` // in emission order, root last
	Link      string   `json:"link"`
}

func vectorInput(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func vectorKey() []byte {
	k := make([]byte, KeySize)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func makeVector(t *testing.T, v vector) vector {
	s := newStore()
	l, err := Share(bytes.NewReader(vectorInput(v.Length)), v.FileName, v.MediaType, v.ChunkSize,
		ShareOptions{Encrypt: v.Encrypt, Rand: bytes.NewReader(vectorKey())}, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	v.DataIDs, v.Manifests = []string{}, nil
	for _, id := range s.order {
		if c := s.chunks[id]; IsManifest(c) {
			v.Manifests = append(v.Manifests, hex.EncodeToString(c))
		} else {
			v.DataIDs = append(v.DataIDs, id.String())
		}
	}
	v.Link = l.String()
	return v
}

func TestVectors(t *testing.T) {
	cases := []vector{
		{Case: "empty", FileName: "empty", ChunkSize: MinChunkSize},
		{Case: "three chunks", FileName: "vector.txt", MediaType: "text/plain; charset=utf-8", ChunkSize: MinChunkSize, Length: 2600},
		{Case: "three chunks encrypted", FileName: "vector.txt", MediaType: "text/plain; charset=utf-8", ChunkSize: MinChunkSize, Length: 2600, Encrypt: true},
		{Case: "empty encrypted", FileName: "empty", ChunkSize: MinChunkSize, Encrypt: true},
		{Case: "depth 1", FileName: "tree.bin", ChunkSize: MinChunkSize, Length: 40 * MinChunkSize},
		{Case: "depth 1 encrypted", FileName: "tree.bin", ChunkSize: MinChunkSize, Length: 40 * MinChunkSize, Encrypt: true},
	}
	var got []vector
	for _, c := range cases {
		got = append(got, makeVector(t, c))
	}
	path := filepath.Join("testdata", "vectors.json")
	if *update {
		out, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []vector
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%d vectors on file, %d made", len(want), len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("vector %q: made\n%+v\nwant\n%+v", want[i].Case, got[i], want[i])
		}
		// The vectors decode, and the link parses back.
		for _, h := range want[i].Manifests {
			c, _ := hex.DecodeString(h)
			if _, err := DecodeManifest(c); err != nil {
				t.Errorf("vector %q: %v", want[i].Case, err)
			}
		}
		l, err := ParseLink(want[i].Link)
		if err != nil || l.String() != want[i].Link {
			t.Errorf("vector %q: link %v", want[i].Case, err)
			continue
		}
		// A private root opens with the link's key, and is padded to b.
		if l.Key != nil && len(want[i].Manifests) > 0 {
			c, _ := hex.DecodeString(want[i].Manifests[len(want[i].Manifests)-1])
			if m, err := OpenManifest(c, l.Key, 0, 0); err != nil || len(c) != want[i].ChunkSize {
				t.Errorf("vector %q: root of %d bytes: %v", want[i].Case, len(c), err)
			} else if m.Name != EncryptedName {
				t.Errorf("vector %q: root shows %q", want[i].Case, m.Name)
			}
		}
	}
}
