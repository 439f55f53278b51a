package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// parley commit and push against the hub, for a thread on node b: the
// commit is made in b's working tree and said as on b itself; a push with
// no remote fails with b's words and a non-zero exit.
func TestCommitAndPushAtTheHubForANodesThread(t *testing.T) {
	home := t.TempDir() // t.Setenv: not parallel
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v)
	}
	hub := scriptd.Start(t, func(cfg *config.Config) { cfg.Cluster.Node, cfg.Cluster.Listen = "hub", "127.0.0.1:0" })
	addr := hub.D().ClusterHub().Addr()
	b := scriptd.Start(t, func(cfg *config.Config) {
		cfg.Cluster.Node, cfg.Cluster.Hub = "b", addr
		tok, err := cluster.IssueToken(hub.Config().DataDir, addr, "b", time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Join(t.Context(), cfg.DataDir, tok, "b", "test"); err != nil {
			t.Fatal(err)
		}
	})
	gitIn(t, b.Work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(b.Work, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, b.Work, "add", "-A")
	gitIn(t, b.Work, "commit", "-qm", "first")
	own, err := b.D().Router().NewThread(t.Context(), chat.RouteKey{Channel: "rest", Chat: "c1"}, "", b.Work)
	if err != nil {
		t.Fatal(err)
	}
	th := string(own) + "@b"
	srv := []string{"--server", "http://" + hub.D().Addr(), "--token", hub.D().Token()}
	testkit.Eventually(t, 20*time.Second, func() bool {
		code, _, _ := parley(append([]string{"diff"}, append(srv, th)...)...)
		return code == 0
	}, "b's thread at the hub")

	if err := os.WriteFile(filepath.Join(b.Work, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := parley(append([]string{"commit"}, append(srv, th, "-m", "Add two")...)...)
	if code != 0 || !strings.HasPrefix(out, "committed on main: ") || !strings.Contains(out, "Add two") {
		t.Fatalf("parley commit at the hub: %d %q %q", code, out, errs)
	}
	if got := strings.TrimSpace(gitIn(t, b.Work, "log", "-1", "--format=%s")); got != "Add two" {
		t.Fatalf("b's newest commit says %q", got)
	}
	code, out, errs = parley(append([]string{"push"}, append(srv, th)...)...)
	if code == 0 || !strings.Contains(errs, "machine b") || !strings.Contains(errs, "no remote") {
		t.Fatalf("parley push without a remote at the hub: %d %q %q", code, out, errs)
	}
}
