package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// version is set at link time with -ldflags "-X main.version=...".
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	// Two protocol numbers, each named: the design (docs/protocol.md) and
	// the wire version of the stream ids, which a server must share with
	// its chain.
	return fmt.Sprintf("riffle %s (%s, %s/%s); protocol design v%d (docs/protocol.md), wire protocol /riffle/%d",
		v, runtime.Version(), runtime.GOOS, runtime.GOARCH, node.DesignVersion, node.ProtocolVersion)
}

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "riffle",
		Usage:                "anonymous file sharing over a verifiable mix-net and multi-server PIR",
		HideVersion:          true,
		EnableBashCompletion: false,
		// -v before the command (riffle -v share …) as well as after it.
		Flags: []cli.Flag{verboseFlag()},
		Commands: []*cli.Command{
			{
				Name:  "version",
				Usage: "print the version of riffle",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, versionString())
					return nil
				},
			},
		},
	}
	app.Commands = sortedCommands(append(app.Commands, extraCommands()...))
	// `riffle bogus` is a usage error (exit 2), not a help topic.
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("unknown command %q (riffle --help lists the commands)", c.Args().First())
		}
		return cli.ShowAppHelp(c)
	}
	// A bad flag is one line and exit 2, not the whole help text.
	onUsage := func(c *cli.Context, err error, _ bool) error {
		name := "riffle"
		if c.Command != nil && c.Command.Name != "" {
			name += " " + c.Command.Name
		}
		return usagef("%v (%s --help lists the flags)", err, name)
	}
	app.OnUsageError = onUsage
	for _, cmd := range app.Commands {
		cmd.OnUsageError = onUsage
		if takesConfig(cmd) {
			cmd.Before = applyConfig
		}
	}
	return app
}
