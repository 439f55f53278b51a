package cli_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit"
)

// `parley rules` lists a rule made over the API after the config's, and
// `parley rules test` answers with it, both through the running daemon.
func TestRulesCommandListsStoredRules(t *testing.T) {
	t.Parallel()
	bin := testkit.ParleyBinary(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	data, work := filepath.Join(base, "data"), filepath.Join(base, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "config.toml")
	os.WriteFile(cfg, []byte(`data = "`+data+`"
roots = ["`+work+`"]
[[agent]]
id = "a"
transport = "acp"
command = "/bin/true"
[[rule]]
action = "deny"
command = "rm *"
`), 0o600)
	serveProc(t, bin, base, base, data, loginLink, "--config", cfg)
	server, token, err := client.Local(data)
	if err != nil {
		t.Fatal(err)
	}
	api := client.API{Server: server, Token: token}
	if err := api.Call(context.Background(), http.MethodPost, "/api/rules",
		map[string]any{"action": "allow", "tool": "Bash", "command": "go test *"}, &struct{}{}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--config", cfg)...)
		cmd.Env = []string{"HOME=" + base, "PATH="}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("parley %v: %v %s", args, err, out)
		}
		return string(out)
	}
	out := run("rules")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1\tdeny \"rm *\"\t(config)") ||
		!strings.HasPrefix(lines[1], "2\tallow tool=Bash \"go test *\"\t(dashboard r_") || !strings.Contains(lines[1], "by token") {
		t.Fatalf("parley rules:\n%s\nwant the config's rule then the one made over the API", out)
	}
	if out := run("rules", "test", "--agent", "a", "--tool", "Bash", "--command", "go test ./...", "--cwd", work); !strings.HasPrefix(out, "allow by rule 2") {
		t.Fatalf("parley rules test: %s, want allowed by rule 2", out)
	}
}
