package tmux

import (
	"os/exec"
	"testing"

	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/testkit"
)

// BenchmarkDeepDraftRead is one provisional-text read of an answer taller
// than the pane: capture-pane of draftHistory lines (here through a tmux
// client process; the driver asks its control-mode connection) and its parse.
// Run: go test -run '^$' -bench DeepDraftRead -benchtime 50x ./internal/driver/tmux/
func BenchmarkDeepDraftRead(b *testing.B) {
	testkit.NeedsTmux(b)
	sock := "parley-bench-deepread"
	b.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "40",
		"sh", "-c", "i=0; while [ $i -lt 2500 ]; do echo \"Line $i of a long answer, with some words to fill the width.\"; i=$((i+1)); done; sleep 600").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	args := append([]string{"-L", sock}, ctl.CaptureArgs("%0", -draftHistory)...)
	capture := func() string {
		out, err := exec.Command("tmux", args...).Output()
		if err != nil {
			b.Fatal(err)
		}
		return string(out)
	}
	b.Run("capture+parse", func(b *testing.B) {
		for b.Loop() {
			pane.Read(capture()).Answer("nothing")
		}
	})
	out := capture()
	b.Logf("%d bytes captured", len(out))
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			pane.Read(out).Answer("nothing")
		}
	})
}
