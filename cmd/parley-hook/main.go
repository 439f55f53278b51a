// Command parley-hook is what Claude Code runs for each hook event of a
// session parley hosts in tmux: `parley hook` in a program of its own. It
// links only the hook package, so it starts in a few milliseconds where the
// whole parley binary spends tens on its packages' init before main; Claude
// Code waits for it on every prompt and tool call (docs/benchmarks.md).
// parley uses it when it sits beside the parley binary, else `parley hook`.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/parleyhq/parley/internal/driver/tmux/hook"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "parley-hook: takes no arguments (Claude Code runs it with one event on stdin)")
		os.Exit(1)
	}
	if err := hook.Run(context.Background(), os.Stdin, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
