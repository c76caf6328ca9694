package main

import (
	"sort"

	"github.com/urfave/cli/v2"
)

// registered holds the commands that the files of this package add from
// their init functions, so that each command lives in a file of its own.
var registered []*cli.Command

func register(cmds ...*cli.Command) { registered = append(registered, cmds...) }

// extraCommands returns the registered commands sorted by name.
func extraCommands() []*cli.Command {
	out := append([]*cli.Command(nil), registered...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
