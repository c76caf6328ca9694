package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// progress shows a command's progress on stderr: a bar per job on a
// terminal, plain lines otherwise (logs, pipes, CI), nothing under --quiet.
// Lines come from the client, in this process or from a running client
// through its control socket; a job's "NAME: d/t chunks" lines drive the
// bar, every other line is printed as it is.
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

// chunkLine matches a job's progress line: "share NAME: 3/10 chunks, ...".
var chunkLine = regexp.MustCompile(`^((?:share|get) .*): (\d+)/(\d+) chunks`)

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
	if m := chunkLine.FindStringSubmatch(s); m != nil {
		done, _ := strconv.Atoi(m[2])
		total, _ := strconv.Atoi(m[3])
		if p.bar == nil || p.job != m[1] {
			p.endBar()
			p.job = m[1]
			p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(m[1]),
				progressbar.OptionShowCount(), progressbar.OptionSetItsString("chunks"), progressbar.OptionShowIts(),
				progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30))
		}
		p.bar.ChangeMax(total)
		_ = p.bar.Set(done)
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
