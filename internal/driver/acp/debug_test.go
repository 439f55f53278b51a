package acp

import (
	"os/exec"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/testkit/geminiapi"
)

func TestDebugHome(t *testing.T) {
	r := newRig(t, geminiapi.Scenario{Rules: []geminiapi.Rule{{Reply: geminiapi.Text("x", 1, 0)}}})
	s, sink := r.start("")
	prompt(t, s, "first message")
	if got := waitTurn(t, sink, 0); got != chat.StopEndTurn {
		t.Fatal(got)
	}
	id := sink.all()[0].Value
	s.Close(t.Context())
	out, _ := exec.Command("sh", "-c", "cd "+r.home+"/.gemini/tmp/*/chats/ && wc -l *").CombinedOutput()
	t.Logf("id %s after close:\n%s", id, out)
	_, sink2 := r.start(id)
	out, _ = exec.Command("sh", "-c", "find "+r.home+"; cat "+r.home+"/.gemini/projects.json").CombinedOutput()
	t.Logf("resumed same id: %v", sink2.all()[0].Value == id)
}
