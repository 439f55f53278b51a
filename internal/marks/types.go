package marks

import (
	"strings"

	"github.com/parleyhq/parley/internal/chat"
)

// Types names the events' types, in order, for a mark's Of (built only
// while marks are on).
func Types(evs []chat.Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ev.Type)
	}
	return b.String()
}
