package irc

import (
	"strings"

	"github.com/parleyhq/parley/internal/channel/render"
)

// wire makes text safe to put in a PRIVMSG. CR, LF and NUL end (or break) an
// IRC line, so each is a line break of its own; \x01 makes clients read the
// text as a CTCP request (a DCC offer, an ACTION) however it got there, so it
// is shown as the visible ␁ instead. Other formatting codes (bold, colours)
// are left as they are: they only change how the text looks.
var wire = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\x00", "\n", "\x01", "␁")

// Lines is text as the PRIVMSG texts to send, in order: each within limit
// bytes, none holding CR, LF, NUL or \x01, and together all of text's words.
// It is the one encoder for what the plugin says: the bridge has chunked text
// already, but only this knows what the IRC wire refuses or reads as CTCP.
func Lines(text string, limit int) []string {
	return render.Lines(wire.Replace(text), limit)
}
