// Command claude-standin serves a scripted stand-in for Anthropic's Messages
// API, for a person running the real Claude Code against it by hand:
//
//	claude-standin -addr 127.0.0.1:0 -scenario file.json [-home dir -cwd dir] [-log]
//
// It prints its URL (and, with -home, the environment to export), then serves
// until interrupted. With -log it prints one line per request it answered.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/parleyhq/parley/internal/testkit/claudeapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "claude-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	scenario := flag.String("scenario", "", "scenario JSON file (empty: every prompt gets the default reply)")
	home := flag.String("home", "", "write an isolated HOME for Claude Code here and print its environment")
	cwd := flag.String("cwd", "", "working directory to mark trusted in that HOME (default: the current one)")
	logReq := flag.Bool("log", false, "print each request as it is answered")
	flag.Parse()

	var sc claudeapi.Scenario
	if *scenario != "" {
		var err error
		if sc, err = claudeapi.LoadScenario(*scenario); err != nil {
			return err
		}
	}
	srv, err := claudeapi.NewServer(*addr, sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println(srv.URL)
	if *home != "" {
		dir := *cwd
		if dir == "" {
			if dir, err = os.Getwd(); err != nil {
				return err
			}
		}
		h, _ := filepath.Abs(*home)
		d, _ := filepath.Abs(dir)
		env, err := claudeapi.WriteHome(srv.URL, h, d)
		if err != nil {
			return err
		}
		for _, kv := range env {
			fmt.Println("export " + kv)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *logReq {
		go func() {
			seen := 0
			for ctx.Err() == nil {
				reqs := srv.Requests()
				for _, r := range reqs[seen:] {
					fmt.Printf("%s %s kind=%s rule=%d text=%q\n", r.Method, r.Path, r.Kind, r.Rule, r.LastUserText())
				}
				seen = len(reqs)
				select {
				case <-ctx.Done():
				case <-srv.Changed():
				}
			}
		}()
	}
	<-ctx.Done()
	return nil
}
