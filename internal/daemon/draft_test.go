package daemon_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// A socket that asked for appends (drafts=append) gets a draft that only grew
// as what it adds, naming the draft it adds to; a socket that did not gets
// every draft whole, as before; any other value of drafts is refused.
func TestSocketsGetDraftAppendsOnlyWhenTheyAskForThem(t *testing.T) {
	t.Parallel()
	e := startDaemon(t, nil)
	appends := chatsock.Dial(t, e.url(), e.d.Token(), client.Options{Chat: "drafts", Since: -1, DraftAppends: true})
	appends.WaitFor(0, 10*time.Second, chatsock.Type(chat.TypeReplayDone), "ready")
	whole := e.ready("drafts")
	appends.Send(chatsock.Msg("m1", "draft The first\npause 200ms\ndraft The first line\npause 200ms\nsay done"))
	drafts := func(c *chatsock.Conn) []string {
		c.WaitFor(0, 10*time.Second, chatsock.PromptDone("m1", chat.StopEndTurn), "the turn's end")
		var out []string
		for _, ev := range c.Snapshot() {
			var d chat.AgentDraft
			if ev.Type == chat.TypeAgentDraft && ev.Decode(&d) == nil {
				out = append(out, fmt.Sprintf("%d %d+%q", d.ID, d.Extends, d.Text))
			}
		}
		return out
	}
	a, w := drafts(appends), drafts(whole)
	if len(w) != 2 || len(a) != 2 {
		t.Fatalf("drafts: %q with appends, %q whole; want two each", a, w)
	}
	var first, second int64
	fmt.Sscanf(w[0], "%d", &first)
	fmt.Sscanf(w[1], "%d", &second)
	if want := []string{fmt.Sprintf(`%d 0+"The first"`, first), fmt.Sprintf(`%d %d+" line"`, second, first)}; !slices.Equal(a, want) {
		t.Errorf("the socket taking appends got %q; want %q", a, want)
	}
	if want := []string{fmt.Sprintf(`%d 0+"The first"`, first), fmt.Sprintf(`%d 0+"The first line"`, second)}; !slices.Equal(w, want) {
		t.Errorf("the socket taking whole drafts got %q; want %q", w, want)
	}

	req, _ := http.NewRequest("GET", e.url()+"/ws/chat?drafts=delta", nil)
	req.Header.Set("Authorization", "Bearer "+e.d.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("drafts=delta: %d; want 400", resp.StatusCode)
	}
}
