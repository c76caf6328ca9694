package chunker

import (
	"mime"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds a file name in a manifest: the common file-system
// limit of 255 bytes per name component.
const MaxNameBytes = 255

// MaxMediaTypeBytes bounds a media type in a manifest (RFC 6838 allows 127
// bytes for each of type and subtype; parameters are rarely long).
const MaxMediaTypeBytes = 127

// maxExtBytes is the longest extension that SanitizeName keeps when it
// shortens a long name.
const maxExtBytes = 16

// FallbackName replaces a name that sanitises to nothing.
const FallbackName = "riffle-download"

// EncryptedName and EncryptedMediaType are the public name and media type of
// every privately shared file; the real ones are sealed under the file key.
const (
	EncryptedName      = "encrypted.riffle"
	EncryptedMediaType = "application/octet-stream"
)

// DefaultMediaType is used when a media type is empty or not valid.
const DefaultMediaType = "application/octet-stream"

// SanitizeName turns any string into a name that is safe to create inside a
// chosen directory on Unix, macOS and Windows: one path component, never "."
// or "..", not hidden, no control or bidirectional-override characters, no
// characters that Windows forbids, not a Windows device name, valid UTF-8,
// at most MaxNameBytes bytes (shortened keeping a short extension), and
// FallbackName when nothing is left. It is idempotent; manifests carry only
// names for which SanitizeName(name) == name.
func SanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	var b strings.Builder
	for _, r := range name {
		if unsafeRune(r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	name = trimName(b.String())
	if len(name) > MaxNameBytes {
		ext := path.Ext(name)
		if len(ext) > maxExtBytes || len(ext) == len(name) {
			ext = ""
		}
		stem := truncateUTF8(name[:len(name)-len(ext)], MaxNameBytes-len(ext))
		name = trimName(trimName(stem) + ext)
		if len(name) > MaxNameBytes { // the stem trimmed away: keep it short
			name = trimName(truncateUTF8(name, MaxNameBytes))
		}
	}
	if windowsReserved(name) {
		name = "_" + name
		if len(name) > MaxNameBytes {
			name = trimName(truncateUTF8(name, MaxNameBytes))
		}
	}
	if name == "" {
		return FallbackName
	}
	return name
}

// unsafeRune reports characters that never appear in a sanitised name.
func unsafeRune(r rune) bool {
	switch r {
	case '/', '\\', ':', '*', '?', '"', '<', '>', '|', utf8.RuneError:
		return true
	case '\u2028', '\u2029', // line and paragraph separators
		'\u200e', '\u200f', '\u061c', // direction marks
		'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', // embeddings and overrides ("gpj.exe")
		'\u2066', '\u2067', '\u2068', '\u2069', // isolates
		'\ufeff': // byte order mark
		return true
	}
	return unicode.IsControl(r)
}

// trimName removes what makes a name hidden or mangled by Windows: leading
// dots and spaces, trailing dots and spaces.
func trimName(s string) string {
	s = strings.TrimLeft(s, ". ")
	return strings.TrimRight(s, ". ")
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// windowsReserved reports device names that Windows opens as devices
// whatever the extension ("nul.txt", "COM1").
func windowsReserved(name string) bool {
	stem, _, _ := strings.Cut(name, ".")
	stem = strings.ToUpper(strings.TrimRight(stem, " "))
	switch stem {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(stem) == 4 && (strings.HasPrefix(stem, "COM") || strings.HasPrefix(stem, "LPT")) {
		c := stem[3]
		return c >= '0' && c <= '9'
	}
	return false
}

// NormalizeMediaType returns the canonical form of a media type
// ("Text/Plain; Charset=UTF-8" → "text/plain; charset=UTF-8"), or
// DefaultMediaType for one that is empty, malformed or too long. Manifests
// carry only canonical media types.
func NormalizeMediaType(t string) string {
	if t == "" || len(t) > 4*MaxMediaTypeBytes {
		return DefaultMediaType
	}
	mt, params, err := mime.ParseMediaType(t)
	if err != nil || !strings.Contains(mt, "/") {
		return DefaultMediaType
	}
	out := mime.FormatMediaType(mt, params)
	if out == "" || len(out) > MaxMediaTypeBytes || !printableASCII(out) {
		return DefaultMediaType
	}
	// FormatMediaType is not always a fixed point of ParseMediaType; a
	// canonical form must be.
	if mt2, p2, err := mime.ParseMediaType(out); err != nil || mime.FormatMediaType(mt2, p2) != out {
		return DefaultMediaType
	}
	return out
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
