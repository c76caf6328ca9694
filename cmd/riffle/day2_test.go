package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/riffle-net/riffle/node"
)

// Tests of issue 27, "day two": what a user meets after the first share.

// writeConfig writes the config file of env (cleanEnv's XDG directory).
func writeConfig(t *testing.T, env []string, text string) string {
	t.Helper()
	xdg := strings.TrimPrefix(env[len(env)-1], "XDG_CONFIG_HOME=")
	path := filepath.Join(xdg, configDirName, configFileName)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Point 2: every command that takes a flag the config file can set reads
// the file; status, resume and ui once looked at the default data
// directory whatever the file said.
func TestConfigAppliesToEveryCommand(t *testing.T) {
	for _, cmd := range newApp().Commands {
		if takesConfig(cmd) && cmd.Before == nil {
			t.Errorf("riffle %s takes config flags but does not read the config file", cmd.Name)
		}
	}
	for _, name := range []string{"status", "resume", "ui", "share", "get", "ls", "client", "server", "id"} {
		var found bool
		for _, cmd := range newApp().Commands {
			if cmd.Name == name {
				found = takesConfig(cmd)
			}
		}
		if !found {
			t.Errorf("riffle %s does not count as taking the config file", name)
		}
	}

	env := cleanEnv(t)
	data := filepath.Join(t.TempDir(), "configured")
	writeConfig(t, env, "data = "+data+"\n")
	for _, cmd := range []string{"status", "resume"} {
		_, errOut, err := runBin(t, env, cmd)
		if exitCodeOf(err) != 1 || !strings.Contains(errOut, "no riffle client runs on data directory "+data) {
			t.Errorf("riffle %s with data in the config: %v, stderr %q; want it to look at %s", cmd, err, errOut, data)
		}
	}
	// ui finds the client that runs on the configured directory (here a
	// listening socket and the URL file such a client writes) instead of
	// starting a second client elsewhere.
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(data, node.ControlSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const url = "http://127.0.0.1:7777/"
	if err := os.WriteFile(filepath.Join(data, uiURLFile), []byte(url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runBin(t, env, "ui")
	if err != nil || strings.TrimSpace(out) != url {
		t.Errorf("riffle ui with data in the config: %v, stdout %q, stderr %q; want %s", err, out, errOut, url)
	}
}

// Point 9: a boolean in the config file is written as people write one.
func TestConfigBooleans(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config")
	t.Setenv(configEnv, cfg)
	run := func(text string, args ...string) (bool, error) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		clear(setFromConfig)
		var got bool
		app := &cli.App{Name: "riffle", Writer: &strings.Builder{}, ErrWriter: &strings.Builder{}, Commands: []*cli.Command{{
			Name: "probe", Flags: clientFlags(), Before: applyConfig,
			Action: func(c *cli.Context) error { got = c.Bool("quiet"); return nil },
		}}}
		err := app.Run(append([]string{"riffle", "probe"}, args...))
		return got, err
	}
	for val, want := range map[string]bool{"yes": true, "Yes": true, "on": true, "true": true, "1": true, "no": false, "OFF": false, "false": false, "0": false} {
		got, err := run("quiet = " + val + "\n")
		if err != nil || got != want {
			t.Errorf("quiet = %s: %v, %v; want %v", val, got, err, want)
		}
	}
	if _, err := run("# c\nquiet = maybe\n"); err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "yes/no") {
		t.Errorf("quiet = maybe: %v; want an error naming line 2 and the words accepted", err)
	}
	// The command line still wins.
	if got, err := run("quiet = yes\n", "--quiet=false"); err != nil || got {
		t.Errorf("--quiet=false over quiet = yes: %v, %v", got, err)
	}
}
