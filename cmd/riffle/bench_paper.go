package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/cmd/riffle/internal/benchreport"
)

// runBenchPaper is `riffle bench --paper`: the paper's figures measured on
// this machine, written as a Markdown report, data.json and SVG plots.
func runBenchPaper(ctx context.Context, c *cli.Context) error {
	dir := c.String("out")
	if dir == "" {
		return fmt.Errorf("--out: an output directory is required")
	}
	args := []string{"riffle", "bench", "--paper"}
	if c.Bool("quick") {
		args = append(args, "--quick")
	}
	if c.Bool("setup-10k") {
		args = append(args, "--setup-10k")
	}
	if c.IsSet("out") {
		args = append(args, "--out", dir)
	}
	if c.IsSet("note") {
		args = append(args, "--note", strconv.Quote(c.String("note")))
	}
	d, err := benchreport.Paper(ctx, benchreport.PaperConfig{Out: dir, Quick: c.Bool("quick"), Setup10k: c.Bool("setup-10k"),
		Command: strings.Join(args, " "), Note: c.String("note"), Logger: logger(c), Progress: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout(c), "riffle bench: paper report in %s (%s)\n", dir, d.Elapsed.Round(1e9))
	return nil
}
