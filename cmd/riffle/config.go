package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// The config file (docs/proto-cli.md, "Config file") gives flags their
// defaults. A key is a flag's name: bare keys (server, require-server,
// data, min-anonymity, accept-budget-drops, max-rate, quiet) belong to the client
// commands, and keys "server.NAME" (server.data, server.listen,
// server.peer, ...) to `riffle server` and `riffle id`. A flag on the command line wins over
// the file; a repeatable flag takes every line of its key. An unknown key
// is an error naming its line: a typo must not be ignored silently.

// configEnv names another config file than the default one.
const configEnv = "RIFFLE_CONFIG"

// serverPrefix marks the keys of `riffle server`.
const serverPrefix = "server."

// configFile returns the config file's path: $RIFFLE_CONFIG, else
// configPath.
func configFile() (string, error) {
	if p := strings.TrimSpace(os.Getenv(configEnv)); p != "" {
		return p, nil
	}
	return configPath()
}

// applyConfig sets the flags of c's command that the command line left
// unset from the config file. "server" is read by primary itself, which
// names the file in its errors.
func applyConfig(c *cli.Context) error {
	path, err := configFile()
	if err != nil {
		return nil // no config directory: nothing to apply
	}
	lines, err := readConfig(path)
	if err != nil {
		return err
	}
	serverSide := serverSideCommand(c.Command.Name)
	flags := map[string]cli.Flag{}
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			flags[n] = f
		}
	}
	for _, l := range lines {
		if !knownConfigKey(l.key) {
			return fmt.Errorf("config %s line %d: unknown key %q (known: %s)", path, l.n, l.key, strings.Join(configKeys(), ", "))
		}
		key, forServer := strings.CutPrefix(l.key, serverPrefix)
		if forServer != serverSide || flags[key] == nil || (!forServer && key == "server") || c.IsSet(key) && !setFromConfig[key] {
			continue
		}
		val := l.val
		if _, ok := flags[key].(*cli.BoolFlag); ok {
			b, err := parseConfigBool(val)
			if err != nil {
				return fmt.Errorf("config %s line %d: %s: %w", path, l.n, l.key, err)
			}
			val = strconv.FormatBool(b)
		}
		if err := c.Set(key, val); err != nil {
			return fmt.Errorf("config %s line %d: %s: %w", path, l.n, l.key, err)
		}
		setFromConfig[key] = true
	}
	return nil
}

// parseConfigBool reads a boolean as people write one in a config file.
func parseConfigBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "yes", "on", "true", "1":
		return true, nil
	case "no", "off", "false", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (yes/no, on/off, true/false or 1/0)", s)
}

// serverSideCommand reports whether the command takes the "server." keys.
func serverSideCommand(name string) bool { return name == "server" || name == "id" }

// takesConfig reports whether cmd has a flag that the config file can
// set: every such command reads the file, so that no command looks at
// another data directory or server than its siblings do.
func takesConfig(cmd *cli.Command) bool {
	keys := clientConfigKeys
	if serverSideCommand(cmd.Name) {
		keys = serverConfigKeys
	}
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if slices.Contains(keys, n) {
				return true
			}
		}
	}
	return false
}

// setFromConfig marks flags set by applyConfig (so that a repeated key
// adds to what an earlier line of the file set, not to the command line).
var setFromConfig = map[string]bool{}

// clientConfigKeys and serverConfigKeys are the keys the file may hold.
var (
	clientConfigKeys = []string{"server", "require-server", "data", "min-anonymity", "accept-budget-drops", "max-rate", "quiet"}
	serverConfigKeys = []string{"data", "listen", "peer", "nick", "min-servers", "min-clients", "no-mdns", "allow-server",
		"founder", "quota", "retention", "chunk-size", "rounds", "k", "reg-window", "round-limit", "round-interval"}
)

func configKeys() []string {
	keys := append([]string(nil), clientConfigKeys...)
	for _, k := range serverConfigKeys {
		keys = append(keys, serverPrefix+k)
	}
	sort.Strings(keys)
	return keys
}

func knownConfigKey(k string) bool {
	for _, c := range configKeys() {
		if c == k {
			return true
		}
	}
	return false
}
