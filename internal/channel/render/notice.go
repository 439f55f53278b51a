package render

import "github.com/parleyhq/parley/internal/chat"

// Notice is a notice (an agent's notify_person, parley notify) as a chat
// line: a mark for its level, who said it, and its text.
func Notice(n chat.Notice) string {
	mark := "ℹ️"
	switch n.Level {
	case chat.NoticeDone:
		mark = "✅"
	case chat.NoticeError:
		mark = "❗"
	}
	from := "the agent"
	if n.From == chat.FromCLI {
		from = "a script"
	}
	return mark + " Notice from " + from + ": " + n.Text
}
