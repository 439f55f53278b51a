package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/testkit"
)

// TestDebugPaneFindsTheAgentsSocket: `parley debug pane` looks for the session
// on the tmux server the config gives the agent (options.socket), not only on
// parley's own, so it finds a session on a person's server without --socket.
func TestDebugPaneFindsTheAgentsSocket(t *testing.T) {
	t.Parallel()
	testkit.NeedsTmux(t)
	sock := fmt.Sprintf("pdebug-%d", os.Getpid())
	tmux := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
	}
	tmux("new-session", "-d", "-s", "work", "-x", "80", "-y", "20", "sh", "-c", "echo ready; exec sleep 600")
	t.Cleanup(func() {
		path, _ := exec.Command("tmux", "-L", sock, "display-message", "-p", "#{socket_path}").Output()
		exec.Command("tmux", "-L", sock, "kill-server").Run()
		if p := strings.TrimSpace(string(path)); p != "" {
			os.Remove(p)
		}
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("roots = [%q]\n[[agent]]\nid = \"mine\"\ntransport = \"tmux\"\ncommand = \"claude\"\noptions = { adopt = \"work\", socket = %q }\n", dir, sock)), 0o600)
	code, out, errs := parley("debug", "pane", "--config", cfg, "work")
	if code != 0 || !strings.Contains(out, "session:       work") || !strings.Contains(out, "-L "+sock) {
		t.Fatalf("debug pane: status %d, stdout %q, stderr %q; want the session found on -L %s", code, out, errs, sock)
	}
	// A session on no configured server is said to be missing, naming where it looked.
	code, _, errs = parley("debug", "pane", "--config", cfg, "nowhere")
	if code == 0 || !strings.Contains(errs, "-L "+sock) || !strings.Contains(errs, "-L parley") {
		t.Errorf("a missing session: status %d, stderr %q; want an error naming -L %s and -L parley", code, errs, sock)
	}
}
