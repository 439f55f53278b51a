// Command parley hosts AI coding agents and carries the conversation between
// them and browsers, terminals and chat apps.
package main

import (
	"os"

	"github.com/parleyhq/parley/internal/cli"
)

// Set with -ldflags "-X main.version=…" by release builds.
var version, commit, built string

func main() {
	b := cli.ReadBuild(cli.Build{Version: version, Commit: commit, Built: built})
	os.Exit(cli.MainWith(b, cli.Parts{JoinTailnet: joinTailnet}, os.Args[1:], os.Stdout, os.Stderr))
}
