package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/riffle-net/riffle/node/client"
)

// progress shows a command's progress on stderr: a bar per job on a
// terminal, plain lines otherwise (logs, pipes, CI), nothing under --quiet.
// A job's events come from the client, in this process or from a running
// client over its local API; a moving job's chunk counts drive the bar,
// every other event is printed as its line. The client's own lines (its
// epochs, warnings) are printed as they are.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
	tty   bool
	bar   *progressbar.ProgressBar
	job   string // the job the bar shows
	last  string // the last line, kept for the message of a timeout
	part  []byte // Write's unfinished line
}

// quiet reports --quiet.
func quiet(c *cli.Context) bool {
	for _, cc := range c.Lineage() {
		if cc != nil && cc.Bool("quiet") {
			return true
		}
	}
	return false
}

func newProgress(c *cli.Context) *progress {
	p := &progress{w: stderr(c), quiet: quiet(c)}
	if f, ok := p.w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

// event shows one event of a job.
func (p *progress) event(e client.JobEvent) {
	if e.Phase != client.PhaseMoving || e.Total <= 0 {
		if l := e.Line(); l != "" {
			p.line(l)
		}
		return
	}
	p.mu.Lock()
	if !p.tty || p.quiet {
		p.mu.Unlock()
		p.line(e.Line())
		return
	}
	defer p.mu.Unlock()
	p.last = printable(e.Line())
	job := printable(e.Kind + " " + e.Name)
	if p.bar == nil || p.job != job {
		p.endBar()
		p.job = job
		p.bar = progressbar.NewOptions(e.Total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(job),
			progressbar.OptionShowCount(), progressbar.OptionSetItsString("chunks"), progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30))
	}
	p.bar.ChangeMax(e.Total)
	_ = p.bar.Set(e.Done)
}

// line shows one progress line.
func (p *progress) line(s string) {
	s = printable(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = s
	if p.quiet {
		return
	}
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	p.endBar()
	fmt.Fprintln(p.w, s)
}

// endBar ends the bar on its own line (p.mu held).
func (p *progress) endBar() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
		p.bar, p.job = nil, ""
	}
}

// finish ends the bar, if one is shown.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endBar()
}

// lastLine returns the last progress line.
func (p *progress) lastLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Write takes lines written by a client's Progress writer.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.part = append(p.part, b...)
	var lines []string
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(p.part[:i]))
		p.part = p.part[i+1:]
	}
	p.mu.Unlock()
	for _, l := range lines {
		p.line(l)
	}
	return len(b), nil
}

// printable escapes control characters (a file name may hold escape
// sequences and newlines, which must not reach the terminal raw).
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
