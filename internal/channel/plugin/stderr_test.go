package plugin

import (
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/testkit"
)

// A plugin flooding its stderr gets a bounded number of lines into parley's
// log, and the log says how many it left out; the plugin is read to its end.
func TestPluginStderrIsRateLimited(t *testing.T) {
	t.Parallel()
	const lines = 20000
	cmd := exec.Command("sh", "-c", "yes 'spam spam spam' | head -n 20000 >&2; echo last words >&2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out testkit.LockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	clock := time.Now()
	// The clock moves one second every 1,000 lines read: twenty seconds in all.
	read := 0
	now := func() time.Time { read++; return clock.Add(time.Duration(read/1000) * time.Second) }
	logLines(stderr, log, now)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the plugin: %v (it must be read to its end)", err)
	}
	text := out.String()
	logged := strings.Count(text, `msg="plugin stderr" line=`)
	// A burst, then the rate for the twenty seconds the clock moved.
	if max := stderrBurst + 20*stderrPerSecond + 1; logged > max || logged < stderrBurst {
		t.Fatalf("lines logged: got %d, want %d to %d", logged, stderrBurst, max)
	}
	dropped := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "lines not logged") {
			for _, f := range strings.Fields(l) {
				if v, ok := strings.CutPrefix(f, "lines="); ok {
					n, err := strconv.Atoi(v)
					if err != nil {
						t.Fatalf("dropped count in %q: %v", l, err)
					}
					dropped += n
				}
			}
		}
	}
	if logged+dropped != lines+1 {
		t.Fatalf("logged %d + said dropped %d = %d, want every one of the %d lines accounted for", logged, dropped, logged+dropped, lines+1)
	}
}
