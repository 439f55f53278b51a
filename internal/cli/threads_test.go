package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// parley threads finds a thread by its messages (--search), renames and
// archives it (then only --archived lists it), and deletes it only with
// --yes, having said what happens to the agent's own session.
func TestThreadsSearchArchiveDelete(t *testing.T) {
	t.Parallel()
	d := startDaemon(t)
	srv := remote(d, "a")[:4]
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return parley(append(args, srv...)...)
	}
	if code, _, errs := parley(append(append([]string{"send"}, remote(d, "a")...), "say the heron waits")...); code != 0 {
		t.Fatalf("send: %d %s", code, errs)
	}
	code, out, errs := run("threads", "--search", "hero", "--json")
	var hits []chat.SearchHit
	if code != 0 || json.Unmarshal([]byte(out), &hits) != nil || len(hits) == 0 {
		t.Fatalf("threads --search hero --json: %d %q %s", code, out, errs)
	}
	id := string(hits[0].Thread)
	if code, out, _ := run("threads", "--search", "heron"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "heron waits") {
		t.Errorf("threads --search heron: %d\n%s", code, out)
	}
	if code, _, errs := run("threads", "--search", `"`); code == 0 || !strings.Contains(errs, "word") {
		t.Errorf(`threads --search '"': %d %q; want an error asking for a word`, code, errs)
	}
	if code, out, errs := run("threads", "rename", id, "Bird watching"); code != 0 || !strings.Contains(out, "Bird watching") {
		t.Fatalf("rename: %d %q %s", code, out, errs)
	}
	if code, _, errs := run("threads", "rename", id, " "); code == 0 || !strings.Contains(errs, "empty") {
		t.Errorf("rename to a blank title: %d %q; want refused", code, errs)
	}
	if code, _, errs := run("threads", "archive", id); code != 0 {
		t.Fatalf("archive: %d %s", code, errs)
	}
	if _, out, _ := run("threads"); strings.Contains(out, id) {
		t.Errorf("threads lists the archived thread:\n%s", out)
	}
	if _, out, _ := run("threads", "--archived"); !strings.Contains(out, id) || !strings.Contains(out, "Bird watching") {
		t.Errorf("threads --archived:\n%s", out)
	}
	code, out, errs = run("threads", "delete", id)
	if code == 0 || !strings.Contains(out, "left on disk") || !strings.Contains(errs, "--yes") {
		t.Errorf("delete without --yes: %d %q %q; want the note and nothing deleted", code, out, errs)
	}
	if code, out, errs := run("threads", "delete", id, "--yes"); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete --yes: %d %q %s", code, out, errs)
	}
	if _, out, _ := run("threads", "--archived"); strings.Contains(out, id) {
		t.Errorf("the deleted thread is still listed:\n%s", out)
	}
	if code, _, errs := run("threads", "delete", id, "--yes"); code == 0 || !strings.Contains(errs, "not found") {
		t.Errorf("delete twice: %d %q; want not found", code, errs)
	}
}
