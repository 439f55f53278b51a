// Command gemini-standin serves a scripted stand-in for Google's Gemini API,
// for a person running the real Gemini CLI against it by hand:
//
//	gemini-standin -addr 127.0.0.1:0 -scenario file.json [-home dir] [-log]
//
// It prints its URL (and, with -home, the environment to export), then serves
// until interrupted. With -log it prints one line per request it answered.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/testkit/geminiapi"
	"github.com/parleyhq/parley/internal/testkit/standin"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gemini-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	var f standin.Flags
	f.Register(flag.CommandLine, "Gemini CLI")
	flag.Parse()

	var sc geminiapi.Scenario
	if f.Scenario != "" {
		var err error
		if sc, err = geminiapi.LoadScenario(f.Scenario); err != nil {
			return err
		}
	}
	srv, err := geminiapi.NewServer(f.Addr, sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	var env []string
	if f.Home != "" {
		h, err := filepath.Abs(f.Home)
		if err != nil {
			return err
		}
		if env, err = geminiapi.WriteHome(srv.URL, h); err != nil {
			return err
		}
	}
	var line func(geminiapi.Request) string
	if f.Log {
		line = func(r geminiapi.Request) string {
			return fmt.Sprintf("%s %s kind=%s rule=%d text=%q", r.Method, r.Path, r.Kind, r.Rule, r.LastUserText())
		}
	}
	standin.Serve(srv, srv.URL, env, line)
	return nil
}
