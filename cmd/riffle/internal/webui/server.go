package webui

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"time"
)

// Server is what the operator view needs of a running server. NodeServer
// adapts a *node.Server.
type Server interface {
	Status() ServerStatus
}

// ServerStatus is a server's public, aggregate state: nothing in it is
// about any one client.
type ServerStatus struct {
	PeerID string        `json:"peer_id"`
	Nick   string        `json:"nick"`
	Roster []RosterEntry `json:"roster"`
	Chain  []string      `json:"chain"` // peer ids in chain order
	Epochs []EpochInfo   `json:"epochs"`
	// Rounds this server published and the time its parts took, summed.
	TimedRounds int           `json:"timed_rounds"`
	Mix         time.Duration `json:"mix_ns"`
	Verify      time.Duration `json:"verify_ns"`
	Store       time.Duration `json:"store_ns"`
	PIR         time.Duration `json:"pir_ns"`
	StoreBytes  int64         `json:"store_bytes"`
	QuotaBytes  int64         `json:"quota_bytes"` // 0: no quota
	// Excluded counts clients refused after a setup share fault.
	Excluded int `json:"excluded_clients"`
}

// RosterEntry is a live server of the roster.
type RosterEntry struct {
	PeerID string    `json:"peer_id"`
	Nick   string    `json:"nick"`
	Addrs  []string  `json:"addrs"`
	Seen   time.Time `json:"seen"`
}

// EpochInfo is one epoch a server keeps.
type EpochInfo struct {
	ID        string   `json:"id"` // hex prefix
	Number    uint64   `json:"number"`
	Position  int      `json:"position"`
	Clients   int      `json:"clients"`
	Rounds    int      `json:"rounds"`
	ChunkSize int      `json:"chunk_size"`
	Listed    int      `json:"rounds_listed"`
	Ended     bool     `json:"ended"`
	Reason    string   `json:"end_reason,omitempty"`
	Void      []uint32 `json:"void_rounds"`
	// RecentChunks are the chunks published in each recent round kept,
	// oldest first.
	RecentChunks []RoundChunks `json:"recent_chunks"`
}

// RoundChunks is how many chunks (not covers) a round published.
type RoundChunks struct {
	Round  uint32 `json:"round"`
	Chunks int    `json:"chunks"`
}

// ServerUI is the read-only operator view of a server.
type ServerUI struct {
	s    Server
	opts Options
	hist history
	tmpl map[string]*template.Template
	h    http.Handler
}

// NewServerUI returns the operator view of s. It has no POST at all.
func NewServerUI(s Server, opts Options) (*ServerUI, error) {
	if opts.Token == "" {
		opts.Token = NewToken()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tm, err := parseTemplates("server")
	if err != nil {
		return nil, err
	}
	u := &ServerUI{s: s, opts: opts, tmpl: tm}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", u.page)
	m.HandleFunc("GET /api/server", u.api)
	handleStatic(m)
	m.HandleFunc("/", notFound(m))
	u.h = newGuard(opts.Addr, opts.Token, opts.Public).wrap(m, true)
	return u, nil
}

// Token returns the per-run token (needed on every request of a public UI).
func (u *ServerUI) Token() string { return u.opts.Token }

func (u *ServerUI) ServeHTTP(w http.ResponseWriter, r *http.Request) { u.h.ServeHTTP(w, r) }

// Run samples the server's round counters until ctx ends.
func (u *ServerUI) Run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		st := u.s.Status()
		epoch := ""
		if len(st.Epochs) > 0 {
			epoch = st.Epochs[0].ID
		}
		u.hist.observePIR(u.opts.Now(), st.TimedRounds, epoch, st.PIR, st.TimedRounds)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ServerView is the operator page's data.
type ServerView struct {
	ServerStatus
	Nicks       map[string]string `json:"-"`
	RoundTime   time.Duration     `json:"round_time_ns"`
	PIRPerRound time.Duration     `json:"pir_per_round_ns"`
	// ChunksPerRound averages the rounds whose state the server keeps.
	ChunksPerRound float64       `json:"chunks_per_round"`
	QuotaPercent   int           `json:"quota_percent"`
	Samples        []roundSample `json:"round_times"`
	Chart          template.HTML `json:"-"`
}

func (u *ServerUI) view() ServerView {
	st := u.s.Status()
	s, _ := u.hist.snapshot(st.TimedRounds)
	v := ServerView{ServerStatus: st, Nicks: map[string]string{st.PeerID: display(st.Nick)}, RoundTime: lastRoundTime(s), Samples: s, Chart: chartSVG(s)}
	for i := range v.Roster {
		v.Roster[i].Nick = display(v.Roster[i].Nick)
		v.Nicks[v.Roster[i].PeerID] = v.Roster[i].Nick
	}
	if len(s) > 0 {
		v.PIRPerRound = s[len(s)-1].PIR
	}
	if v.Samples == nil {
		v.Samples = []roundSample{}
	}
	n, rounds := 0, 0
	for _, e := range st.Epochs {
		for _, rc := range e.RecentChunks {
			n, rounds = n+rc.Chunks, rounds+1
		}
	}
	if rounds > 0 {
		v.ChunksPerRound = float64(n) / float64(rounds)
	}
	if st.QuotaBytes > 0 {
		v.QuotaPercent = int(100 * st.StoreBytes / st.QuotaBytes)
	}
	return v
}

func (u *ServerUI) page(w http.ResponseWriter, r *http.Request) {
	renderTemplate(w, u.tmpl["server"], page{Title: "Server", Nav: "server", Refresh: 3, Data: u.view()})
}

func (u *ServerUI) api(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, u.view())
}

func sortRounds(rc []RoundChunks) {
	slices.SortFunc(rc, func(a, b RoundChunks) int { return cmpU(uint64(a.Round), uint64(b.Round)) })
}
