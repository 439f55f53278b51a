// Package cli is parley's command line: one file per command, each a constructor
// returning a *cobra.Command. Commands parse flags and call into the packages that
// do the work; no logic of their own lives here.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/tailnet"
)

// Build says what this binary is; main fills Version from -ldflags when set.
type Build struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Built   string `json:"built"`
}

// ReadBuild fills what -ldflags did not from the Go build info.
func ReadBuild(b Build) Build {
	if b.Version == "" {
		b.Version = "dev"
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if b.Commit == "" {
					b.Commit = s.Value
				}
			case "vcs.time":
				if b.Built == "" {
					b.Built = s.Value
				}
			case "vcs.modified":
				if s.Value == "true" && b.Commit != "" && !strings.HasSuffix(b.Commit, "-dirty") {
					b.Commit += "-dirty"
				}
			}
		}
	}
	return b
}

// Root returns the parley command with every subcommand, without parts.
func Root(b Build) *cobra.Command { return RootWith(b, Parts{}) }

// Parts are what the program running this CLI plugs into `parley serve`:
// cmd/parley sets JoinTailnet; Go test code that plays parley in its own
// process sets what it needs (pushchild: PushNet). No flag, config key or
// environment variable reaches them.
type Parts struct {
	// JoinTailnet is daemon.Options.JoinTailnet, tsnode.Join in the parley
	// binary: passed in rather than imported here, so that test binaries
	// linking this package do not link tsnet (package tailnet says why).
	JoinTailnet tailnet.Join
	// PushNet is how pushes reach push services (daemon.Options.PushNet): a
	// test's push service stand-in on loopback, with its own CA. Test code only.
	PushNet push.Net
}

// RootWith is Root with parts.
func RootWith(b Build, p Parts) *cobra.Command {
	root := &cobra.Command{
		Use:           "parley",
		Short:         "Host AI coding agents and talk to them from anywhere",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newServeCommand(b, p),
		newTokenCommand(),
		newLoginLinkCommand(),
		newVersionCommand(b),
	)
	for _, extra := range extraCommands {
		root.AddCommand(extra(b))
	}
	return root
}

// extraCommands are added by files of this package that wire other packages'
// commands (hook, debug, chat, …), so root.go does not change for each.
var extraCommands []func(Build) *cobra.Command

// Main runs the CLI without parts (no tailnet) and returns the process exit
// code: a test binary that plays parley.
func Main(b Build, args []string, stdout, stderr io.Writer) int {
	return MainWith(b, Parts{}, args, stdout, stderr)
}

// MainWith is Main with parts: the parley binary's main.
func MainWith(b Build, p Parts, args []string, stdout, stderr io.Writer) int {
	root := RootWith(b, p)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		var ec exitCode
		if asExit(err, &ec) {
			return int(ec)
		}
		fmt.Fprintln(stderr, "parley:", err)
		return 1
	}
	return 0
}

// exitCode is an error that only sets the process status (the command already said why).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExit(err error, ec *exitCode) bool {
	e, ok := err.(exitCode)
	if ok {
		*ec = e
	}
	return ok
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
