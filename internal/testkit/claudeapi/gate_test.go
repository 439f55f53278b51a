package claudeapi

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// A held reply streams its first deltas, then nothing more (no end of the
// message) until the gate opens; then the rest, whole.
func TestGateHoldsTheStream(t *testing.T) {
	t.Parallel()
	g := NewGate(2)
	t.Cleanup(g.Open)
	srv := Start(t, Scenario{Rules: []Rule{{Reply: Held(Text("abcdef", 3, 0), g)}}})
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var sb strings.Builder
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
		if text, n := streamedText(sb.String()); n == 2 {
			if text != "abcd" {
				t.Fatalf("before the gate: %q, want %q", text, "abcd")
			}
			break
		}
	}
	// Held: the next line can only come after Open (a ping aside).
	g.Open()
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
	}
	if text, n := streamedText(sb.String()); text != "abcdef" || n != 3 || !strings.Contains(sb.String(), "message_stop") {
		t.Fatalf("after the gate: %q in %d deltas:\n%s", text, n, sb.String())
	}
}
