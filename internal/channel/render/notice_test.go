package render

import (
	"testing"

	"github.com/parleyhq/parley/internal/chat"
)

// A notice reads in a chat app as what it is: its level, who said it, and
// its words.
func TestNoticeLine(t *testing.T) {
	for _, c := range []struct {
		n    chat.Notice
		want string
	}{
		{chat.Notice{Text: "The build is green.", Level: chat.NoticeDone, From: chat.FromAgent}, "✅ Notice from the agent: The build is green."},
		{chat.Notice{Text: "CI failed", Level: chat.NoticeError, From: chat.FromCLI}, "❗ Notice from a script: CI failed"},
		{chat.Notice{Text: "fyi", Level: chat.NoticeInfo, From: chat.FromAgent}, "ℹ️ Notice from the agent: fyi"},
	} {
		if got := Notice(c.n); got != c.want {
			t.Errorf("Notice(%+v) = %q, want %q", c.n, got, c.want)
		}
	}
}
