//go:build e2e

package cluster_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// deleteAt deletes a thread through the REST API of the parley at addr.
func deleteAt(t *testing.T, addr, token string, id chat.ThreadID) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+"/api/threads/"+string(id), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE %s: %s", id, resp.Status)
	}
}

// threadsAt is what `parley threads` prints against the parley at addr.
func threadsAt(t *testing.T, addr, token string) string {
	t.Helper()
	cmd := exec.Command(testkit.ParleyBinary(t), "threads", "--server", "http://"+addr, "--token", token)
	cmd.Env = append(os.Environ(), "PARLEY_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("parley threads: %v\n%s", err, out)
	}
	return string(out)
}

// closedFor waits until the socket closes and says why.
func closedFor(t *testing.T, s *chatsock.Conn, what string) string {
	t.Helper()
	var reason string
	testkit.Eventually(t, wait, func() bool {
		err := s.Err()
		if err == nil {
			return false
		}
		_, reason = client.CloseStatus(err)
		return true
	}, what)
	return reason
}

// reasonDeleted is what a view of a deleted thread is told as it closes.
const reasonDeleted = fanout.ReasonDeleted

// logEvent is an event of a thread's log as GET /api/threads/{id}/events
// answers it.
type logEvent struct {
	Type      string `json:"type"`
	Seq       int64  `json:"seq"`
	Text      string `json:"text"`
	MessageID string `json:"message_id"`
}

// gaplessLog reads thread local's whole log with get (b's own REST API),
// fails t at a gap in it, and counts each person's message by its text.
func gaplessLog(t *testing.T, get func(path string, v any), local chat.ThreadID) ([]logEvent, map[string]int) {
	t.Helper()
	var log struct {
		Events []logEvent `json:"events"`
	}
	get("/api/threads/"+string(local)+"/events?since=0", &log)
	seen := map[string]int{}
	var last int64
	for _, e := range log.Events {
		if e.Seq != last+1 {
			t.Fatalf("b's log jumps from %d to %d", last, e.Seq)
		}
		last = e.Seq
		if e.Type == chat.TypeUserMessage {
			seen[e.Text]++
		}
	}
	return log.Events, seen
}

// sendWhileAway sends "remember w1" to "remember w3" on s while node b is
// away: each receipt says it waits for machine b.
func sendWhileAway(t *testing.T, s *chatsock.Conn) {
	t.Helper()
	from := s.Len()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("w%d", i)
		s.Send(chatsock.Msg(id, "remember "+id))
		j := s.WaitFor(from, wait, chatsock.Delivery(id, chat.DeliveryQueued), id+" queued")
		if d := fmt.Sprint(chatsock.FieldOf(s.Get(j), "detail")); d != "waits for machine b" {
			t.Fatalf("%s: receipt detail %q", id, d)
		}
	}
}

// eachOnce fails t unless "remember w1" to "remember w3" are each in seen once.
func eachOnce(t *testing.T, seen map[string]int) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		if k := seen[fmt.Sprintf("remember w%d", i)]; k != 1 {
			t.Fatalf("w%d in b's log %d times, want once (%v)", i, k, seen)
		}
	}
}
