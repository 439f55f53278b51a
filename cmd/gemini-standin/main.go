// Command gemini-standin serves a scripted stand-in for Google's Gemini API,
// for a person running the real Gemini CLI against it by hand:
//
//	gemini-standin -addr 127.0.0.1:0 -scenario file.json [-home dir] [-log]
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

	"github.com/parleyhq/parley/internal/testkit/geminiapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gemini-standin:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	scenario := flag.String("scenario", "", "scenario JSON file (empty: every prompt gets the default reply)")
	home := flag.String("home", "", "write an isolated HOME for Gemini CLI here and print its environment")
	logReq := flag.Bool("log", false, "print each request as it is answered")
	flag.Parse()

	var sc geminiapi.Scenario
	if *scenario != "" {
		var err error
		if sc, err = geminiapi.LoadScenario(*scenario); err != nil {
			return err
		}
	}
	srv, err := geminiapi.NewServer(*addr, sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println(srv.URL)
	if *home != "" {
		h, err := filepath.Abs(*home)
		if err != nil {
			return err
		}
		env, err := geminiapi.WriteHome(srv.URL, h)
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
