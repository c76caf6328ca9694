package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes of riffle (documented in README.md, "Exit codes").
const (
	exitOK          = 0   // done
	exitError       = 1   // the command failed; the message says why
	exitUsage       = 2   // unknown command, missing or extra arguments, bad flag
	exitInterrupted = 130 // SIGINT (Ctrl-C): 128 + 2, as shells report it
	exitTerminated  = 143 // SIGTERM: 128 + 15
)

// interrupt holds the signal that cancelled the running command (0: none).
// main turns an error after a signal into exit 130 or 143, so that scripts
// can tell "stopped" from "failed".
var interrupt atomic.Int32

// usageError marks an error in the command line itself (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// noArgs refuses arguments to a command that takes none: an ignored
// argument is usually a flag placed wrong.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("%s takes no arguments, got %q (flags go before arguments)", c.Command.Name, c.Args().First())
	}
	return nil
}

// errorLine is the one line printed for err: "riffle: " once, however many
// layers below added a package prefix of their own.
func errorLine(err error) string {
	s := err.Error()
	for _, p := range []string{"riffle: ", "node: ", "chunker: "} {
		s = strings.ReplaceAll(s, ": "+p, ": ")
		s = strings.TrimPrefix(s, p)
	}
	// One line: multi-line errors (libp2p's dial errors list every
	// address tried) are joined.
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
	return "riffle: " + s
}

// exitCode maps the error of a run to the process's exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case interrupt.Load() == int32(syscall.SIGINT):
		return exitInterrupted
	case interrupt.Load() == int32(syscall.SIGTERM):
		return exitTerminated
	}
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode()
	}
	return exitError
}

// run runs the app on args and returns the exit code, having printed the
// error (if any) on errw.
func run(app *cli.App, args []string, errw io.Writer) int {
	err := app.Run(args)
	if err != nil && err.Error() != "" {
		fmt.Fprintln(errw, errorLine(err))
	}
	return exitCode(err)
}
