package chunker

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("a", 300)
	cases := map[string]string{
		"report.pdf":            "report.pdf",
		"résumé €.txt":          "résumé €.txt",
		"../../etc/passwd":      "_.._etc_passwd",
		"/etc/passwd":           "_etc_passwd",
		`..\..\boot.ini`:        `_.._boot.ini`,
		"..":                    FallbackName,
		".":                     FallbackName,
		"":                      FallbackName,
		".bashrc":               "bashrc",
		"...hidden":             "hidden",
		" .x":                   "x",
		"a\x00b\nc\x7f":         "a_b_c_",
		"evil\u202egpj.exe":     "evil_gpj.exe",
		"C:\\x":                 "C__x",
		"con":                   "_con",
		"NUL.txt":               "_NUL.txt",
		"com1.tar.gz":           "_com1.tar.gz",
		"console":               "console",
		"name. . ":              "name",
		"bad\xffutf8":           "bad_utf8",
		long + ".tar.gz":        strings.Repeat("a", MaxNameBytes-3) + ".gz",
		long:                    strings.Repeat("a", MaxNameBytes),
		"a" + long[:254] + ".x": "a" + long[:252] + ".x",
	}
	for in, want := range cases {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// checkSafe asserts the promises of SanitizeName for one output.
func checkSafe(t *testing.T, in, out string) {
	t.Helper()
	if out == "" || len(out) > MaxNameBytes || !utf8.ValidString(out) {
		t.Fatalf("SanitizeName(%q) = %q: empty, too long or invalid UTF-8", in, out)
	}
	if strings.ContainsAny(out, `/\:`) || out[0] == '.' || out == ".." || filepath.Base(out) != out {
		t.Fatalf("SanitizeName(%q) = %q is not one plain component", in, out)
	}
	for _, r := range out {
		if unsafeRune(r) {
			t.Fatalf("SanitizeName(%q) = %q keeps %U", in, out, r)
		}
	}
	if again := SanitizeName(out); again != out {
		t.Fatalf("SanitizeName not idempotent: %q → %q → %q", in, out, again)
	}
	if dir := "/x/y"; filepath.Dir(filepath.Join(dir, out)) != dir {
		t.Fatalf("SanitizeName(%q) = %q escapes a directory", in, out)
	}
}

func TestSanitizeNameRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []rune("a.. /\\:\x00\x1fé€\u202e\u2066 COMNUL1")
	for range 5000 {
		r := make([]rune, rng.IntN(300))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		in := string(r)
		checkSafe(t, in, SanitizeName(in))
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"a", "../x", ".", "con.txt", strings.Repeat("é", 200) + ".longextension"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSafe(t, s, SanitizeName(s)) })
}

func TestNormalizeMediaType(t *testing.T) {
	cases := map[string]string{
		"":                                  DefaultMediaType,
		"text/plain":                        "text/plain",
		"Text/Plain; Charset=UTF-8":         "text/plain; charset=UTF-8",
		"nonsense":                          DefaultMediaType,
		"text/plain; a=\"\x01\"":            "text/plain; a*=utf-8''%01", // RFC 2231 escaping
		"image/" + strings.Repeat("x", 200): DefaultMediaType,
	}
	for in, want := range cases {
		if got := NormalizeMediaType(in); got != want {
			t.Errorf("NormalizeMediaType(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeMediaType(want); got != want {
			t.Errorf("NormalizeMediaType not idempotent on %q: %q", want, got)
		}
	}
}
