package chunker

import (
	"errors"
	"strings"
	"testing"
)

func TestLinkRoundTrip(t *testing.T) {
	var id ID
	for i := range id {
		id[i] = byte(i * 13)
	}
	key := FileKey{1, 2, 3}
	for _, l := range []Link{{ID: id}, {ID: id, Key: &key}} {
		s := l.String()
		if s != strings.ToLower(s) || !strings.HasPrefix(s, "riffle:") || strings.Contains(s, "=") {
			t.Fatalf("link %q is not lowercase unpadded riffle:", s)
		}
		got, err := ParseLink(s)
		if err != nil {
			t.Fatalf("ParseLink(%q): %v", s, err)
		}
		if got.ID != l.ID || (got.Key == nil) != (l.Key == nil) || (l.Key != nil && !got.Key.Equal(l.Key)) {
			t.Fatalf("ParseLink(%q) = %+v, want %+v", s, got, l)
		}
		up, err := ParseLink(strings.ToUpper(s))
		if err != nil || up.String() != s {
			t.Fatalf("upper-case link: %v, %q", err, up.String())
		}
	}
	if len(id.String()) != encodedLen {
		t.Fatalf("id text has %d characters", len(id.String()))
	}
}

func TestParseLinkErrors(t *testing.T) {
	good := Link{ID: Sum([]byte("x"))}.String()
	idText := strings.TrimPrefix(good, "riffle:")
	legacy := "riffle:" + idText[:encodedLen]
	// The 52nd character carries 4 unused bits; "b" sets one of them
	// whatever the value, a second spelling of the same id.
	lastBits := legacy[:len(legacy)-1] + string(rune(legacy[len(legacy)-1]+1))
	cases := map[string]string{
		"":                              "does not start",
		"http://x":                      "does not start",
		"riffle:":                       "0 base32 characters",
		good + "a":                      "59 base32 characters, want 58",
		good[:len(good)-1]:              "57 base32 characters, want 58",
		legacy[:len(legacy)-1]:          "51 base32 characters",
		"riffle:" + idText[:57] + "1":   "not base32",
		"riffle:" + idText[:51] + "1":   "not base32",
		good + "#":                      "key: 0 base32",
		good + "#" + idText[1:] + "#":   "key: not base32",
		good + "#" + idText[1:] + "=":   "key: not base32",
		good + "#" + idText:             "key: checksum does not match",
		" " + good:                      "does not start",
		good + strings.Repeat("a", 200): "characters, at most",
	}
	if lastBits != legacy {
		cases[lastBits] = "trailing bits"
	}
	for in, want := range cases {
		_, err := ParseLink(in)
		if err == nil || !errors.Is(err, ErrBadLink) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLink(%q) = %v, want error with %q", in, err, want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "riffle: bad link: ") {
			t.Errorf("error %q does not start with \"riffle: bad link: \"", err)
		}
	}
}

// A link's parts carry checksums: every one-character typo, and every swap
// of two neighbours, is refused as such, before anything waits for a file
// nobody shared. A link written before checksums still reads.
func TestLinkChecksum(t *testing.T) {
	key := FileKey{7, 7, 7}
	l := Link{ID: Sum([]byte("typo")), Key: &key}
	s := l.String()
	if len(s) != len(LinkScheme)+2*(encodedLen+checkLen)+1 {
		t.Fatalf("link %q has %d characters", s, len(s))
	}
	for i := len(LinkScheme); i < len(s); i++ {
		if s[i] == '#' {
			continue
		}
		for _, c := range alphabet {
			if byte(c) == s[i] {
				continue
			}
			typo := s[:i] + string(c) + s[i+1:]
			if _, err := ParseLink(typo); !errors.Is(err, ErrChecksum) {
				t.Fatalf("%q (character %d changed) = %v, want a checksum error", typo, i, err)
			}
		}
		if j := i + 1; j < len(s) && s[j] != '#' && s[j] != s[i] {
			swap := s[:i] + s[j:j+1] + s[i:i+1] + s[j+1:]
			if _, err := ParseLink(swap); !errors.Is(err, ErrChecksum) {
				t.Fatalf("%q (characters %d and %d swapped) = %v, want a checksum error", swap, i, j, err)
			}
		}
	}
	if !strings.Contains(ErrChecksum.Error(), "check the link") {
		t.Errorf("checksum error %q does not say to check the link", ErrChecksum)
	}
	// Old links: both parts without checksums.
	old := LinkScheme + l.ID.String() + "#" + l.Key.String()
	got, err := ParseLink(old)
	if err != nil || got.String() != s {
		t.Fatalf("old link %q: %v, %q", old, err, got.String())
	}
	// An id reads with or without the checksum of a link's id part.
	for _, in := range []string{l.ID.String(), strings.TrimPrefix(strings.Split(s, "#")[0], LinkScheme)} {
		if id, err := ParseID(strings.ToUpper(in)); err != nil || id != l.ID {
			t.Errorf("ParseID(%q) = %v, %v", in, id, err)
		}
	}
	// The key's checksum is not the id's: an id cannot pass for a key.
	if c1, c2 := checksum(l.ID.String(), idTag), checksum(l.ID.String(), keyTag); c1 == c2 {
		t.Errorf("id and key checksums agree: %q", c1)
	}
}

func FuzzParseLink(f *testing.F) {
	key := FileKey{9}
	f.Add(Link{ID: Sum(nil)}.String())
	f.Add(Link{ID: Sum([]byte("a")), Key: &key}.String())
	f.Add("RIFFLE:" + strings.ToUpper(Sum(nil).String()))
	f.Add(LinkScheme + Sum([]byte("b")).String() + "#" + key.String())
	f.Add("riffle:")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLink(s)
		if err != nil {
			return
		}
		out := l.String()
		// A link without checksums (written before them) reads, and is
		// written back with them.
		idText, keyText, hasKey := strings.Cut(strings.TrimPrefix(strings.ToLower(s), LinkScheme), "#")
		old := len(idText) == encodedLen || hasKey && len(keyText) == encodedLen
		if out != strings.ToLower(s) && !old {
			t.Fatalf("ParseLink(%q).String() = %q, want the lower-case input", s, out)
		}
		l2, err := ParseLink(out)
		if err != nil || l2.ID != l.ID || (l2.Key == nil) != (l.Key == nil) {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
	})
}
