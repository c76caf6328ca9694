package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/cmd/riffle/internal/webui"
	"github.com/riffle-net/riffle/node"
)

func init() {
	register(&cli.Command{
		Name:  "ls",
		Usage: "list the public index of shared files",
		Description: `Fetches the whole public index from the primary (never a per-file look-up,
so the primary learns nothing about what interests you) and prints name, size,
link and publication time. A privately shared file is not listed: its manifest
is sealed under the key that only its link carries.`,
		Flags:  append(clientFlags(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array"}),
		Action: runLs,
	})
}

// lsEntry is one row of `riffle ls --json`: the keys of a file in the
// web UI's JSON API (webui.FileView).
type lsEntry struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Size      uint64    `json:"size"`
	Chunks    uint32    `json:"chunks"`
	Round     uint32    `json:"round"`
	Published time.Time `json:"published"`
	Link      string    `json:"link"`
}

func runLs(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	var idx []node.IndexEntry
	var err error
	lc, err := runningClient(ctx, c)
	if err != nil {
		return err
	}
	if lc != nil {
		idx, err = localIndex(ctx, lc)
	} else {
		if err := oneShot(c, "ls"); err != nil {
			return err
		}
		cl, cerr := startClientProgress(ctx, c, nil)
		if cerr != nil {
			return cerr
		}
		defer cl.Close()
		warnNow(c, "ls")
		idx, err = cl.Index(ctx)
	}
	if err != nil {
		return fmt.Errorf("fetch index: %w", err)
	}
	rows := make([]lsEntry, 0, len(idx))
	for _, e := range idx {
		rows = append(rows, lsEntry{
			ID: chunker.ID(e.FileID).String(), Name: e.Name, Size: e.Size, Chunks: e.Chunks,
			Link:  chunker.Link{ID: chunker.ID(e.FileID)}.String(),
			Round: e.Round, Published: e.Time.UTC(),
		})
	}
	// By name, then newest first: what a reader looks for.
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Name != rows[j].Name {
			return rows[i].Name < rows[j].Name
		}
		return rows[i].Round > rows[j].Round
	})
	w := stdout(c)
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLINK\tWHEN")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", lsName(r.Name), humanBytes(r.Size), r.Link, r.Published.Format(time.RFC3339))
	}
	return tw.Flush()
}

// humanBytes formats a size with a binary unit.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// maxLsName is the width of the name column: a long name is cut (its
// whole text is in --json) so that one name does not widen every row.
const maxLsName = 48

// lsName is a name as the table shows it: control characters escaped,
// cut to maxLsName characters.
func lsName(name string) string {
	name = printable(name)
	if utf8.RuneCountInString(name) <= maxLsName {
		return name
	}
	r := []rune(name)
	return string(r[:maxLsName-1]) + "…"
}

// localIndex is the index as the running client lc synced it.
func localIndex(ctx context.Context, lc *webui.LocalClient) ([]node.IndexEntry, error) {
	files, err := lc.Index(ctx)
	if err != nil {
		return nil, err
	}
	idx := make([]node.IndexEntry, 0, len(files))
	for _, f := range files {
		id, err := chunker.ParseID(f.ID)
		if err != nil {
			return nil, fmt.Errorf("running client: index entry %q: %w", f.ID, err)
		}
		idx = append(idx, node.IndexEntry{FileID: [32]byte(id), Name: f.Name, Size: f.Size, Chunks: uint32(f.Chunks), Round: f.Round, Time: f.Published})
	}
	return idx, nil
}
