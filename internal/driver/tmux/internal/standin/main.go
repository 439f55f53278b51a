// Command standin runs the scripted Anthropic API stand-in with a scenario file
// and a fresh Claude Code HOME, for capturing the real TUI's screens by hand
// into the tmux driver's testdata (see testdata/README.md there).
//
//	go run ./internal/driver/tmux/internal/standin -scenario s.json -home /tmp/h -cwd /tmp/c
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func main() {
	scenario := flag.String("scenario", "", "scenario JSON file")
	home := flag.String("home", "", "HOME to prepare for Claude Code")
	cwd := flag.String("cwd", "", "working directory to trust")
	flag.Parse()
	sc, err := claudeapi.LoadScenario(*scenario)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := claudeapi.NewServer("127.0.0.1:0", sc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer srv.Close()
	env, err := claudeapi.WriteHome(srv.URL, *home, *cwd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(env, "\n"))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}
