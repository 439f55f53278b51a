// Command claude-standin serves a scripted stand-in for Anthropic's Messages
// API, for a person running the real Claude Code against it by hand:
//
//	claude-standin -addr 127.0.0.1:0 -scenario file.json [-home dir -cwd dir] [-log]
//
// It prints its URL (and, with -home, the environment to export), then serves
// until interrupted. With -log it prints one line per request it answered.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/testkit/claudeapi"
	"github.com/parleyhq/parley/internal/testkit/standin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "claude-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	var f standin.Flags
	f.Register(flag.CommandLine, "Claude Code")
	cwd := flag.String("cwd", "", "working directory to mark trusted in that HOME (default: the current one)")
	flag.Parse()

	var sc claudeapi.Scenario
	if f.Scenario != "" {
		var err error
		if sc, err = claudeapi.LoadScenario(f.Scenario); err != nil {
			return err
		}
	}
	srv, err := claudeapi.NewServer(f.Addr, sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	var env []string
	if f.Home != "" {
		dir := *cwd
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return err
			}
		}
		h, _ := filepath.Abs(f.Home)
		d, _ := filepath.Abs(dir)
		if env, err = claudeapi.WriteHome(srv.URL, h, d); err != nil {
			return err
		}
	}
	var line func(claudeapi.Request) string
	if f.Log {
		line = func(r claudeapi.Request) string {
			return fmt.Sprintf("%s %s kind=%s rule=%d text=%q", r.Method, r.Path, r.Kind, r.Rule, r.LastUserText())
		}
	}
	standin.Serve(srv, srv.URL, env, line)
	return nil
}
