package cli

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/store/sqlite"
)

func runAudit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newAuditCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--config", cfg, "--data", dir))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// parley audit lists the trail, narrowed by thread, and parley audit
// verify says it holds, or names the first entry that does not match.
func TestAuditCommandListsAndVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "parley.db")
	st, err := sqlite.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := audit.Start(t.Context(), st, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(audit.Entry{Kind: audit.KindPair, Actor: "device:d-1", Subject: "device d-1 (phone) paired"})
	rec.Record(audit.Entry{Kind: audit.KindMessageSent, Actor: "device:d-1", Thread: "t1", Subject: "message m1 sent"})
	rec.Record(audit.Entry{Kind: audit.KindCardAnswer, Actor: "rule:2", Thread: "t1", Subject: "permission p1 answered \"allow\""})
	rec.Close()
	st.Close()

	out, err := runAudit(t, dir, "--thread", "t1")
	if err != nil || !strings.Contains(out, "message.sent") || !strings.Contains(out, "rule:2") || strings.Contains(out, "paired") {
		t.Fatalf("parley audit --thread t1: %v\n%s", err, out)
	}
	if out, err := runAudit(t, dir, "verify"); err != nil || !strings.Contains(out, "verifies: 3 entries") {
		t.Fatalf("parley audit verify: %v\n%s", err, out)
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE audit SET actor = 'device:d-9' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := runAudit(t, dir, "verify"); err == nil || !strings.Contains(err.Error(), "audit entry 2 does not match") {
		t.Fatalf("parley audit verify of a changed row: %v, want it to name entry 2", err)
	}
	if _, err := runAudit(t, dir, "--since", "last tuesday"); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Fatalf("a bad --since: %v", err)
	}
}
