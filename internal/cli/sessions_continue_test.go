package cli_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// parley sessions continue makes a session found on the machine the thread
// this terminal's parley chat shows, resumed by the configured agent; only
// with the daemon's token.
func TestSessionsContinueMakesTheSessionThisTerminalsThread(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	r := scriptd.Start(t, nil)
	d := r.D()
	const id = "aaaaaaaa-0000-4000-8000-000000000001"
	claudeTranscript(t, home, r.Work, id)

	args := []string{"--server", "http://" + d.Addr(), "--token", "not-the-token", "--chat", "term"}
	if code, out, errs := parley(append([]string{"sessions", "continue", "aaaaaaaa", "--agent", "echo"}, args...)...); code == 0 {
		t.Fatalf("continue with a wrong token: exit 0\n%s%s", out, errs)
	}
	args[3] = d.Token()
	code, out, errs := parley(append([]string{"sessions", "continue", "aaaaaaaa", "--agent", "echo"}, args...)...)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "continues in thread") {
		t.Fatalf("sessions continue: %d %s\n%s", code, errs, out)
	}
	api := client.API{Server: "http://" + d.Addr(), Token: d.Token()}
	th, err := api.RouteThread(t.Context(), chat.RouteKey{Channel: "tui", Chat: "term"})
	if err != nil || th == "" {
		t.Fatalf("the terminal's route shows %q, %v", th, err)
	}
	got, err := api.Thread(t.Context(), th)
	if err != nil || got.SessionID != id || got.Agent != "echo" || got.Cwd != r.Work {
		t.Fatalf("thread %+v, %v: want session %s of echo in %s", got, err, id, r.Work)
	}
	if code, _, errs := parley(append([]string{"sessions", "continue", "ffff", "--agent", "echo"}, args...)...); code == 0 || !strings.Contains(errs, "no agent session") {
		t.Fatalf("continue of no such session: %d %s", code, errs)
	}
}
