// Command devserve is a temporary in-process parley for looking at the dashboard
// before `parley serve` exists. It will be removed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/hub"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/ui"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fl := flag.NewFlagSet("serve", flag.ExitOnError)
	cfgPath := fl.String("config", "", "")
	dir := fl.String("data", "", "")
	addr := fl.String("addr", "127.0.0.1:0", "")
	fl.Parse(os.Args[2:])
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	wd, _ := os.Getwd()
	cfg, err := config.Load(*cfgPath, config.Default(*dir, wd))
	if err != nil {
		return err
	}
	os.MkdirAll(*dir, 0o700)
	st, err := sqlite.Open(ctx, filepath.Join(*dir, "parley.db"), log)
	if err != nil {
		return err
	}
	h := hub.New(nil)
	r := router.New(st, h, router.Options{Agents: cfg.Agents, DefaultAgent: cfg.DefaultAgent, Roots: cfg.Roots,
		Drivers: map[string]driver.Driver{"stream": stream.New(log)}, Logger: log})
	if err := r.Start(ctx); err != nil {
		return err
	}
	srv := web.New(r, st, h, web.Options{Token: "devtoken", Limits: cfg.Limits, Roots: cfg.Roots, UI: ui.FS(), Logger: log,
		Version: web.Version{Version: "dev", UIHash: ui.Hash()}})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/?token=devtoken\n", ln.Addr())
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	<-ctx.Done()
	srv.Shutdown()
	hs.Close()
	return r.Close(context.Background())
}
