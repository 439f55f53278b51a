package cli_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/ruleset"
	"github.com/parleyhq/parley/internal/testkit/scriptd"
)

// parley rules add whose first answer is lost (the daemon kept the rule,
// then the connection was cut before its answer) sends the same add again
// itself, says so, and the daemon keeps one rule: the one the command
// prints.
func TestRulesAddSentAgainAfterALostAnswerIsMadeOnce(t *testing.T) {
	t.Parallel()
	r := scriptd.Start(t, nil)
	d := r.D()
	// The first add reaches the daemon; its answer does not come back.
	data, adds := loseFirstAnswer(t, d, "/api/rules")
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(`data = "`+data+`"
roots = ["`+r.Work+`"]
[[agent]]
id = "a"
transport = "acp"
command = "/bin/true"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := parley("rules", "add", "--config", cfg, "--action", "allow", "--tool", "Bash", "--command", "go test *")
	if code != 0 {
		t.Fatalf("rules add: %d %q %q", code, out, errs)
	}
	if !strings.Contains(errs, "answer was lost") || !strings.Contains(errs, "an earlier try had made it") {
		t.Errorf("stderr %q, want it to say the answer was lost and the first try made it", errs)
	}
	var list struct {
		Rules []ruleset.Entry `json:"rules"`
	}
	api := client.API{Server: "http://" + d.Addr(), Token: d.Token()}
	if err := api.Call(context.Background(), http.MethodGet, "/api/rules", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Rules) != 1 || out != "rule 1\tallow tool=Bash \"go test *\"\t("+list.Rules[0].ID+")\n" || adds.Load() != 2 {
		t.Fatalf("the daemon keeps %+v after %d adds; the command printed %q: want one rule, the one printed", list.Rules, adds.Load(), out)
	}
}
