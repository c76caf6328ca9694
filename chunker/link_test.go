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
	// The last character carries 4 unused bits; "b" sets one of them
	// whatever the value, a second spelling of the same id.
	lastBits := good[:len(good)-1] + string(rune(good[len(good)-1]+1))
	cases := map[string]string{
		"":                              "does not start",
		"http://x":                      "does not start",
		"riffle:":                       "0 base32 characters",
		good + "a":                      "53 base32 characters",
		good[:len(good)-1]:              "51 base32 characters",
		"riffle:" + idText[:51] + "1":   "not base32",
		good + "#":                      "key: 0 base32",
		good + "#" + idText[1:] + "#":   "key: not base32",
		good + "#" + idText[1:] + "=":   "key: not base32",
		" " + good:                      "does not start",
		good + strings.Repeat("a", 200): "characters, at most",
	}
	if lastBits != good {
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

func FuzzParseLink(f *testing.F) {
	key := FileKey{9}
	f.Add(Link{ID: Sum(nil)}.String())
	f.Add(Link{ID: Sum([]byte("a")), Key: &key}.String())
	f.Add("RIFFLE:" + strings.ToUpper(Sum(nil).String()))
	f.Add("riffle:")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLink(s)
		if err != nil {
			return
		}
		out := l.String()
		if out != strings.ToLower(s) {
			t.Fatalf("ParseLink(%q).String() = %q, want the lower-case input", s, out)
		}
		l2, err := ParseLink(out)
		if err != nil || l2.ID != l.ID || (l2.Key == nil) != (l.Key == nil) {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
	})
}
