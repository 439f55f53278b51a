package standin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Flags are the flags every stand-in command takes.
type Flags struct {
	Addr     string // address to listen on
	Scenario string // scenario JSON file, or empty
	Home     string // where to write an isolated HOME, or empty
	Log      bool   // print each request as it is answered
}

// Register defines the flags on fs; agent names the CLI the HOME is for.
func (f *Flags) Register(fs *flag.FlagSet, agent string) {
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:0", "address to listen on")
	fs.StringVar(&f.Scenario, "scenario", "", "scenario JSON file (empty: every prompt gets the default reply)")
	fs.StringVar(&f.Home, "home", "", "write an isolated HOME for "+agent+" here and print its environment")
	fs.BoolVar(&f.Log, "log", false, "print each request as it is answered")
}

// Recorder is a stand-in server as Follow sees it.
type Recorder[R any] interface {
	Requests() []R
	Changed() <-chan struct{}
}

// Follow calls each for every request rec has recorded and records, oldest
// first, until ctx ends.
func Follow[R any](ctx context.Context, rec Recorder[R], each func(R)) {
	seen := 0
	for ctx.Err() == nil {
		// Take the channel first, so a request recorded meanwhile is not missed.
		changed := rec.Changed()
		reqs := rec.Requests()
		for _, r := range reqs[seen:] {
			each(r)
		}
		seen = len(reqs)
		select {
		case <-ctx.Done():
		case <-changed:
		}
	}
}

// Serve is the rest of a stand-in command once its server runs at url: it
// prints url and env (as shell exports) to stdout, then serves until SIGINT
// or SIGTERM, printing line(r) for each request rec records if line is not nil.
func Serve[R any](rec Recorder[R], url string, env []string, line func(R) string) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	printEnv(os.Stdout, url, env)
	if line != nil {
		go Follow(ctx, rec, func(r R) { fmt.Println(line(r)) })
	}
	<-ctx.Done()
}

func printEnv(w io.Writer, url string, env []string) {
	fmt.Fprintln(w, url)
	for _, kv := range env {
		fmt.Fprintln(w, "export "+kv)
	}
}
