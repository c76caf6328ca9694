package main

import (
	"sort"

	"github.com/urfave/cli/v2"
)

// registered holds the commands that the files of this package add from
// their init functions, so that each command lives in a file of its own.
var registered []*cli.Command

func register(cmds ...*cli.Command) { registered = append(registered, cmds...) }

// extraCommands returns the registered commands.
func extraCommands() []*cli.Command { return append([]*cli.Command(nil), registered...) }

// sortedCommands sorts commands by name, so that help lists them in order.
func sortedCommands(cmds []*cli.Command) []*cli.Command {
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}
