// Package webui is riffle's local web UI (docs/webui.md): a view of a
// running client (index, get, share, network) and a read-only operator
// view of a server, served with net/http and html/template from files
// embedded in the binary. It sends nothing on the network itself: a share
// or get goes through the client's own job path, the index is the copy the
// client syncs once per epoch (§7), so using the UI changes nothing a
// client sends (§5.4).
//
// The UI is reachable by any web page the user visits, so every request
// passes guard: the Host header must name the UI (DNS rebinding), every
// state change is a POST carrying the per-run token, and every response
// has a strict Content-Security-Policy. Published names and media types
// come from strangers; html/template escapes them.
package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// Client is what the UI needs of a running client. NodeClient adapts a
// *client.Client; tests use a fake.
type Client interface {
	// Status returns the client's view of the network now.
	Status() Status
	// Index returns the public index as the client last synced it.
	Index() []File
	// Holds reports, for each id, whether this client holds the chunk.
	Holds(ids []chunker.ID) []bool
	// Share uploads r as a file named name through the client's job path
	// and returns once every chunk is published. It calls progress once
	// the file is chunked and queued (Link and Total set; r is not read
	// after that), then as chunks are published.
	Share(ctx context.Context, r io.Reader, name string, private bool, progress func(Progress)) (chunker.Link, error)
	// Get fetches link into dir and returns the file's path, calling
	// progress as chunks arrive.
	Get(ctx context.Context, link chunker.Link, dir string, progress func(Progress)) (string, error)
	// Resume lets the paused jobs of file id (docs/protocol.md §5.4: a
	// job pauses after sending in J epochs) send in J more epochs, and
	// returns how many it resumed.
	Resume(id chunker.ID) int
}

// Progress is how far a share or get job is.
type Progress struct {
	Done, Total int // chunks
	Name        string
	Link        chunker.Link
	IDs         []chunker.ID // a share's chunks, when known
	// Paused says why the job paused and waits for its user (§5.4), or
	// is "" while it runs.
	Paused string
	// Waiting says what a running job waits for (an epoch, the presence
	// rule), and about how long, or "" while it moves.
	Waiting string
	// File is the id the client follows the job by (for Resume; a
	// private share's, until it is done, is not shown).
	File chunker.ID
}

// Status is a client's view of the network.
type Status struct {
	InEpoch      bool          `json:"in_epoch"`
	Epoch        string        `json:"epoch"` // hex prefix of the epoch id
	Number       uint64        `json:"number"`
	Chain        []ChainServer `json:"chain"`
	Pins         []Pin         `json:"pins"`
	AnonymitySet int           `json:"anonymity_set"`
	ChunkSize    int           `json:"chunk_size"`
	K            int           `json:"k"`
	Rounds       int           `json:"rounds"` // R
	// RoundsDone counts every round the client took part in, all epochs.
	RoundsDone int `json:"rounds_done"`
	Epochs     int `json:"epochs"`
	Uploaded   int `json:"uploaded"`
	Fetched    int `json:"fetched"`
	// Throughput is what the client's slot carries a second in this
	// epoch (one upload and K requests a round, cover included); Goodput
	// only the chunks of its jobs.
	Throughput float64 `json:"throughput_bytes_per_s"`
	Goodput    float64 `json:"goodput_bytes_per_s"`
	// Waiting says why the client is in no epoch, if it is in none.
	Waiting string `json:"waiting,omitempty"`
	// What the client moves an hour: the group's worst case from its
	// constants (0 before the first descriptor) and what it measured.
	GroupSendPerHour float64 `json:"group_send_bytes_per_hour"`
	GroupRecvPerHour float64 `json:"group_recv_bytes_per_hour"`
	SentPerHour      float64 `json:"sent_bytes_per_hour"`
	RecvPerHour      float64 `json:"recv_bytes_per_hour"`
}

// ChainServer is one server of the chain, in chain order.
type ChainServer struct {
	Nick    string `json:"nick"`
	PeerID  string `json:"peer_id"`
	Primary bool   `json:"primary"`
	Pinned  bool   `json:"pinned"`
}

// Pin is a server the client requires in its chain.
type Pin struct {
	PeerID  string `json:"peer_id"`
	InChain bool   `json:"in_chain"`
}

// File is one entry of the public index.
type File struct {
	ID        chunker.ID
	Name      string
	Size      uint64
	Chunks    int
	Round     uint32
	Published time.Time
}

// Link returns the file's public link.
func (f File) Link() string { return chunker.Link{ID: f.ID}.String() }

// Options configure a UI.
type Options struct {
	// Addr is the address the UI listens on (host:port); it decides the
	// Host headers accepted.
	Addr string
	// Public allows a non-loopback address; then every request, pages
	// included, must carry the token.
	Public bool
	// Token is the per-run secret every POST carries (random if empty).
	Token string
	// DownloadDir receives fetched files.
	DownloadDir string
	// ShareDirs are the directories under which the share form takes a
	// path (symlinks resolved); none: path shares are refused, uploads
	// only.
	ShareDirs []string
	// DataDir is the client's data directory: no file in it is shared by
	// path, whatever ShareDirs say (it holds the UI's token).
	DataDir string
	// MaxUpload bounds a browser upload (default DefaultMaxUpload).
	MaxUpload int64
	// Now is the clock (time.Now if nil); tests fix it.
	Now func() time.Time
}

// DefaultMaxUpload bounds a file uploaded from the browser: the client
// holds a share's chunks in memory until they are published.
const DefaultMaxUpload = 256 << 20

// maxForm bounds the body of a POST that is not an upload.
const maxForm = 64 << 10

// NewToken returns a fresh per-run token.
func NewToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// CheckAddr refuses a listen address that is not loopback unless public is
// set; it returns a warning to print when a public address is allowed.
func CheckAddr(addr string, public bool) (warning string, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("ui address %q: %w", addr, err)
	}
	if isLoopback(host) {
		return "", nil
	}
	if !public {
		return "", fmt.Errorf("ui address %q is not loopback: anyone who reaches it could use this client; add --ui-public to allow it", addr)
	}
	return fmt.Sprintf("warning: the web UI listens on %s, beyond this machine; anyone with its token can share and fetch through this client", addr), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard holds the checks every request passes.
type guard struct {
	token  string
	public bool
	hosts  map[string]bool // accepted Host headers (loopback mode)
}

func newGuard(addr, token string, public bool) *guard {
	g := &guard{token: token, public: public, hosts: map[string]bool{}}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		g.hosts[net.JoinHostPort(host, port)] = true
		if isLoopback(host) {
			for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
				g.hosts[net.JoinHostPort(h, port)] = true
			}
		}
	}
	return g
}

// tokenCookie carries the token of a public UI in the browser after the
// printed URL's ?token= was visited once.
const tokenCookie = "riffle_ui"

func (g *guard) tokenOK(s string) bool {
	return s != "" && subtle.ConstantTimeCompare([]byte(s), []byte(g.token)) == 1
}

// requestToken returns the token a request carries outside its body.
func (g *guard) requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Riffle-Token"); t != "" {
		return t
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return c.Value
	}
	return ""
}

// securityHeaders are sent with every response.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on the UI's own form posts, which originOK refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// wrap applies the guard to next. readOnly refuses every POST.
func (g *guard) wrap(next http.Handler, readOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w.Header())
		if !g.public && !g.hosts[strings.ToLower(r.Host)] {
			httpError(w, r, http.StatusMisdirectedRequest, "unknown Host header %q: the UI answers only to its own address", r.Host)
			return
		}
		if g.public {
			// A public UI wants the token on every request; visiting
			// the printed URL once stores it in a cookie.
			if t := r.URL.Query().Get("token"); t != "" && g.tokenOK(t) && r.Method == http.MethodGet {
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: g.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
				return
			}
			if !g.tokenOK(g.requestToken(r)) && r.Method != http.MethodPost {
				httpError(w, r, http.StatusUnauthorized, "this UI needs its token: open the URL the riffle command printed")
				return
			}
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			next.ServeHTTP(w, r)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			httpError(w, r, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
			return
		}
		if readOnly {
			w.Header().Set("Allow", "GET, HEAD")
			httpError(w, r, http.StatusMethodNotAllowed, "this UI is read-only")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !g.originOK(o) {
			httpError(w, r, http.StatusForbidden, "cross-origin request refused")
			return
		}
		// A page on another port of this machine is "same-site", not
		// "same-origin": only the UI's own pages (or no browser) may post.
		if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
			httpError(w, r, http.StatusForbidden, "%s request refused", sfs)
			return
		}
		if g.tokenOK(r.Header.Get("X-Riffle-Token")) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenChecked{}, true)))
			return
		}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			httpError(w, r, http.StatusBadRequest, "bad form: %v", err)
			return
		}
		if !g.tokenOK(r.PostForm.Get("csrf")) {
			httpError(w, r, http.StatusForbidden, "missing or wrong CSRF token")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenChecked{}, true)))
	})
}

// tokenChecked marks a request context whose token the guard verified.
type tokenChecked struct{}

func checked(r *http.Request) bool { v, _ := r.Context().Value(tokenChecked{}).(bool); return v }

func (g *guard) originOK(o string) bool {
	h, ok := strings.CutPrefix(strings.ToLower(o), "http://")
	if !ok {
		return false
	}
	if g.public {
		return true // the token decides
	}
	return g.hosts[h]
}
