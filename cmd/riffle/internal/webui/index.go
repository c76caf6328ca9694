package webui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/riffle-net/riffle/chunker"
)

// The index and file pages, and their API: a search of the synced index.

// FileView is an index entry as pages and the API show it.
type FileView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Size      uint64    `json:"size"`
	Chunks    int       `json:"chunks"`
	Round     uint32    `json:"round"`
	Published time.Time `json:"published"`
	Link      string    `json:"link"`
}

func fileView(f File) FileView {
	return FileView{ID: f.ID.String(), Name: display(f.Name), Size: f.Size, Chunks: f.Chunks, Round: f.Round, Published: f.Published, Link: f.Link()}
}

// IndexQuery is a search of the index.
type IndexQuery struct {
	Q     string `json:"q"`
	Sort  string `json:"sort"`  // name, size, chunks or published
	Order string `json:"order"` // asc or desc
}

// maxQuery bounds a search string.
const maxQuery = 256

func (u *UI) search(r *http.Request) (IndexQuery, []FileView, error) {
	q := IndexQuery{Q: r.URL.Query().Get("q"), Sort: r.URL.Query().Get("sort"), Order: r.URL.Query().Get("order")}
	if len(q.Q) > maxQuery {
		return q, nil, fmt.Errorf("search text of %d bytes, at most %d", len(q.Q), maxQuery)
	}
	if q.Sort == "" {
		q.Sort = "published"
	}
	if q.Order == "" {
		q.Order = "desc"
		if q.Sort == "name" {
			q.Order = "asc"
		}
	}
	if !slices.Contains([]string{"name", "size", "chunks", "published"}, q.Sort) {
		return q, nil, fmt.Errorf("unknown sort %q (name, size, chunks, published)", q.Sort)
	}
	if q.Order != "asc" && q.Order != "desc" {
		return q, nil, fmt.Errorf("unknown order %q (asc, desc)", q.Order)
	}
	needle := strings.ToLower(q.Q)
	var out []FileView
	for _, f := range u.c.Index() {
		v := fileView(f)
		if needle != "" && !strings.Contains(strings.ToLower(v.Name), needle) && !strings.Contains(v.ID, needle) {
			continue
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b FileView) int {
		var c int
		switch q.Sort {
		case "name":
			c = strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
		case "size":
			c = cmpU(a.Size, b.Size)
		case "chunks":
			c = cmpU(uint64(a.Chunks), uint64(b.Chunks))
		default:
			c = a.Published.Compare(b.Published)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if q.Order == "desc" {
			c = -c
		}
		return c
	})
	return q, out, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (u *UI) indexPage(w http.ResponseWriter, r *http.Request) {
	q, files, err := u.search(r)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	u.render(w, "index", page{Title: "Index", Nav: "index", Data: struct {
		Query IndexQuery
		Files []FileView
		Total int
	}{q, files, len(u.c.Index())}})
}

func (u *UI) apiIndex(w http.ResponseWriter, r *http.Request) {
	// wait=1: not before the first sync (riffle ls), never a request of
	// its own (§7).
	if d, ok := u.c.(Daemon); ok && formBool(r.URL.Query().Get("wait")) {
		if err := d.WaitIndex(r.Context()); err != nil {
			httpError(w, r, http.StatusServiceUnavailable, "index: %v", err)
			return
		}
	}
	q, files, err := u.search(r)
	if err != nil {
		httpError(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	if files == nil {
		files = []FileView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "files": files})
}

// ChunkView is one chunk of a file and whether this client holds it.
type ChunkView struct {
	ID   string `json:"id"`
	Role string `json:"role"` // "manifest" or "data"
	Held bool   `json:"held"`
}

// FileDetail is a file's page: the entry and the chunks this client knows.
type FileDetail struct {
	File FileView `json:"file"`
	// Chunks lists the root manifest and, when this client shared or
	// fetched the file from this UI, its chunks; otherwise the list is in
	// the manifest, which only a get fetches.
	Chunks  []ChunkView `json:"chunks"`
	Listed  bool        `json:"all_chunks_listed"`
	Fetched bool        `json:"fetched_here"`
}

func (u *UI) fileDetail(r *http.Request) (FileDetail, int, error) {
	id, err := chunker.ParseID(r.PathValue("id"))
	if err != nil {
		return FileDetail{}, http.StatusBadRequest, fmt.Errorf("bad file id: %w", err)
	}
	for _, f := range u.c.Index() {
		if f.ID != id {
			continue
		}
		d := FileDetail{File: fileView(f), Fetched: u.jobs.fetched(id)}
		ids := u.jobs.chunksOf(id)
		d.Listed = len(ids) > 0
		if !slices.Contains(ids, id) {
			ids = append([]chunker.ID{id}, ids...)
		}
		held := u.c.Holds(ids)
		for i, c := range ids {
			role := "data"
			if c == id {
				role = "manifest"
			}
			d.Chunks = append(d.Chunks, ChunkView{ID: c.String(), Role: role, Held: held[i]})
		}
		return d, http.StatusOK, nil
	}
	return FileDetail{}, http.StatusNotFound, fmt.Errorf("file %s is not in the synced index", id)
}

func (u *UI) filePage(w http.ResponseWriter, r *http.Request) {
	d, code, err := u.fileDetail(r)
	if err != nil {
		httpError(w, r, code, "%v", err)
		return
	}
	u.render(w, "file", page{Title: d.File.Name, Nav: "index", Data: d})
}

func (u *UI) apiFile(w http.ResponseWriter, r *http.Request) {
	d, code, err := u.fileDetail(r)
	if err != nil {
		httpError(w, r, code, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
