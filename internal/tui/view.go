package tui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fold"
)

type styles struct {
	color                                       bool
	user, agentHead, dim, accent, err, note     lipgloss.Style
	draft                                       lipgloss.Style // provisional text: italic, dim
	status, statusOff, cardTitle, receiptFailed lipgloss.Style
	add, del                                    lipgloss.Style // diff lines
}

func newStyles(color bool) styles {
	s := styles{color: color}
	plain := lipgloss.NewStyle()
	s.user, s.agentHead, s.dim, s.accent, s.err, s.note = plain.Bold(true), plain.Bold(true), plain, plain.Bold(true), plain.Bold(true), plain
	s.status, s.statusOff, s.cardTitle, s.receiptFailed = plain.Reverse(true), plain.Reverse(true), plain.Bold(true), plain.Bold(true)
	s.add, s.del = plain, plain
	s.draft = plain.Italic(true)
	if !color {
		return s
	}
	s.user = s.user.Foreground(lipgloss.Color("12"))
	s.agentHead = s.agentHead.Foreground(lipgloss.Color("10"))
	s.dim = s.dim.Foreground(lipgloss.Color("8"))
	s.accent = s.accent.Foreground(lipgloss.Color("14"))
	s.err = s.err.Foreground(lipgloss.Color("9"))
	s.note = s.note.Foreground(lipgloss.Color("8")).Italic(true)
	s.draft = s.draft.Foreground(lipgloss.Color("8"))
	s.status = plain.Background(lipgloss.Color("4")).Foreground(lipgloss.Color("15"))
	s.statusOff = plain.Background(lipgloss.Color("1")).Foreground(lipgloss.Color("15"))
	s.cardTitle = s.cardTitle.Foreground(lipgloss.Color("11"))
	s.receiptFailed = s.receiptFailed.Foreground(lipgloss.Color("9"))
	s.add = plain.Foreground(lipgloss.Color("2"))
	s.del = plain.Foreground(lipgloss.Color("1"))
	return s
}

// bottomHeight is how many rows the part under the status line takes.
func (m *Model) bottomHeight() int {
	switch {
	case m.picker != nil:
		return min(len(m.pickerLines()), m.height/2)
	case m.manager != nil:
		return min(len(m.managerLines()), m.height/2)
	case m.card() != nil:
		return min(len(m.cardLines(m.card())), m.height-4)
	}
	return m.input.Height() + 1
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	if m.dirty {
		m.renderTranscript()
	}
	var b strings.Builder
	m.writeTranscript(&b)
	b.WriteString(m.statusLine())
	b.WriteByte('\n')
	var cursor *tea.Cursor
	switch {
	case m.picker != nil:
		b.WriteString(m.fit(m.pickerLines(), m.bottomHeight()))
	case m.manager != nil:
		b.WriteString(m.fit(m.managerLines(), m.bottomHeight()))
	case m.card() != nil:
		b.WriteString(m.fit(m.cardLines(m.card()), m.bottomHeight()))
	default:
		b.WriteString(m.input.View())
		b.WriteByte('\n')
		b.WriteString(m.helpLine())
		if c := m.input.Cursor(); c != nil {
			c.Y += m.tHeight + 1
			cursor = c
		}
	}
	v := tea.NewView(b.String())
	v.AltScreen = true
	v.Cursor = cursor
	v.WindowTitle = "parley chat"
	return v
}

func (m *Model) fit(lines []string, n int) string {
	if len(lines) > n {
		lines = append(lines[:n-1:n-1], lines[len(lines)-1]) // keep the hint row
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) statusLine() string {
	parts := []string{"parley"}
	agent := m.thread.Agent
	if agent == "" {
		agent = m.cfg.DefaultAgent
	}
	if agent != "" {
		parts = append(parts, agent)
	}
	switch {
	case m.intent != nil:
		parts = append(parts, "new thread")
	case m.thread.ID != "":
		name := m.thread.Title
		if name == "" && m.thread.Cwd != "" {
			name = filepath.Base(m.thread.Cwd)
		}
		id := truncate(string(m.thread.ID), 9)
		if name == "" {
			parts = append(parts, id)
		} else {
			parts = append(parts, truncate(name, 20)+" "+id)
		}
	default:
		parts = append(parts, "no thread yet")
	}
	v := m.conv.View()
	mode := m.mode().Current
	if mode == "" {
		mode = m.thread.Mode
	}
	if mode != "" {
		parts = append(parts, "mode "+mode)
	}
	switch {
	case v.Stopping:
		parts = append(parts, "stopping…")
	case v.TurnActive:
		parts = append(parts, "● working")
	default:
		parts = append(parts, "idle")
	}
	st := m.st.status
	if m.online && !m.connecting {
		parts = append(parts, "online")
	} else {
		st = m.st.statusOff
		var s string
		switch {
		case m.online:
			s = "catching up…"
		case !m.everOnline && m.attempt == 0:
			s = "connecting…"
		default:
			s = "OFFLINE, reconnecting"
			if m.attempt > 1 {
				s += fmt.Sprintf(" (try %d)", m.attempt)
			}
		}
		parts = append(parts, s)
	}
	// Last, so a narrow terminal cuts it before the state and connection.
	if s := threadUsage(m.totals); s != "" {
		parts = append(parts, s)
	}
	// The model after the usage: the first a narrow terminal cuts.
	if model := m.mode().ModelName(); model != "" {
		parts = append(parts, "model "+truncate(model, 30))
	}
	line := " " + strings.Join(parts, " │ ") + " "
	line = ansi.Truncate(line, m.width, "…")
	if w := ansi.StringWidth(line); w < m.width {
		line += strings.Repeat(" ", m.width-w)
	}
	return st.Render(line)
}

func (m *Model) helpLine() string {
	s := m.flash
	if s == "" && m.scroll > 0 {
		s = fmt.Sprintf("scrolled up %d lines: PgDn or Ctrl+End for the newest", m.scroll)
	}
	if s == "" && !m.online && m.offline != "" {
		s = "offline: " + m.offline
	}
	if s == "" && m.machineGone() {
		s = "machine " + m.thread.Node + " is not joined to this hub (revoked, or never joined): to join it again, `parley join-token --name " +
			m.thread.Node + "` here, then `parley join <token>` on " + m.thread.Node
	}
	if s == "" && m.agentGone() {
		s = "the agent " + m.thread.Agent + " is not configured: ^E moves this thread to another agent"
	}
	if s == "" {
		s = "Enter send · Alt+Enter newline · Esc stop · ^T threads · ^N new · ⇧Tab mode · ^O tools · ^C^C quit"
		if m.width < ansi.StringWidth(s) {
			s = "Enter send · Esc stop · ^T threads · ^N new · ⇧Tab mode · ^O tools · ^C^C quit"
		}
		if m.width < ansi.StringWidth(s) {
			s = "Enter send · Esc stop · ^T threads · ⇧Tab mode · ^C² quit"
		}
	}
	return m.st.dim.Render(ansi.Truncate(s, m.width, "…"))
}

// renderTranscript lays the conversation out at the current width. Items
// keep their layout, so a streamed chunk lays out only the item it grows.
func (m *Model) renderTranscript() {
	m.dirty = false
	w := max(m.width-1, 10)
	before := len(m.lines)
	m.lines = m.lines[:0]
	v := m.conv.View()
	asked := askedTools(v.Items)
	// Messages waiting behind the running turn come after it.
	for _, it := range slices.Concat(v.Items, v.Queued) {
		lines := m.renderItem(it, w, asked[it.ID])
		if len(lines) > 0 && it.Kind == fold.KindUser && len(m.lines) > 0 {
			m.lines = append(m.lines, "") // a blank line before each of the person's messages
		}
		m.lines = append(m.lines, lines...)
	}
	if v.Draft != "" {
		// As the agent's screen shows it, not its final words: apart, dim
		// and italic, replaced when they come.
		m.lines = append(m.lines, m.st.dim.Render("agent · drawing (provisional)"))
		for _, l := range strings.Split(lipgloss.NewStyle().Width(w).Render(v.Draft), "\n") {
			m.lines = append(m.lines, m.st.draft.Render(l))
		}
	}
	if len(m.lines) == 0 {
		m.lines = append(m.lines, m.st.dim.Render("No messages yet. Type below and press Enter."))
	}
	if m.scroll > 0 {
		m.scroll += len(m.lines) - before // keep what is being read in place
	}
	m.scrollBy(0)
}

// askedTools maps a tool call to the tool's name a permission card gave it:
// its expanded view shows the change the input describes (Ctrl+O).
func askedTools(items []fold.Item) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		if it.Kind == fold.KindPermission && it.ToolCallID != "" {
			out[it.ToolCallID] = it.Name
		}
	}
	return out
}

// writeTranscript writes the rows of the transcript in view, each ending in a newline.
func (m *Model) writeTranscript(b *strings.Builder) {
	end := len(m.lines) - m.scroll
	start := max(end-m.tHeight, 0)
	n := 0
	for _, l := range m.lines[start:end] {
		b.WriteString(ansi.Truncate(l, m.width, "…"))
		b.WriteByte('\n')
		n++
	}
	for ; n < m.tHeight; n++ {
		b.WriteByte('\n')
	}
}

// renderItem lays one item out, from its layout while nothing it shows changed.
// name is the tool's name a card gave a tool call.
func (m *Model) renderItem(it fold.Item, w int, name string) []string {
	key := m.itemKey(it, name)
	if r := m.shown[it.Key]; r != nil && r.width == w && r.key == key {
		return r.lines
	}
	var lines []string
	if s := m.renderItemNow(it, w, name); s != "" {
		lines = strings.Split(s, "\n")
	}
	m.shown[it.Key] = &rendered{lines: lines, width: w, key: key}
	return lines
}

// itemKey is what an item's layout depends on.
func (m *Model) itemKey(it fold.Item, name string) string {
	switch it.Kind {
	case fold.KindUser:
		return fmt.Sprint(m.receiptOf(it.MessageID), "|", it.From, "|", m.online, "|", it.Text)
	case fold.KindTool:
		return fmt.Sprint(it.Title, "|", it.Tool, "|", it.Status, "|", len(it.Output), "|", m.expandTools, "|", len(it.Input), "|", len(it.Diffs), "|", name)
	case fold.KindPlan:
		return fmt.Sprint(it.Entries)
	case fold.KindPermission, fold.KindQuestion:
		return fmt.Sprint(it.State, "|", it.Chosen, "|", it.By, "|", it.Answers, "|", it.Response)
	case fold.KindUsage:
		return fmt.Sprint(it.Usage)
	}
	return it.Text
}

// receiptOf is what is known of a message: the server's receipt, else
// whether it is being written to the socket now.
func (m *Model) receiptOf(id string) fold.Receipt {
	if r, ok := m.conv.View().Receipts[id]; ok {
		return r
	}
	if o := m.outbox[id]; o != nil && o.sending {
		return fold.Receipt{State: "sending"}
	}
	return fold.Receipt{}
}

func (m *Model) renderItemNow(it fold.Item, w int, name string) string {
	st := m.st
	wrap := func(s string) string { return lipgloss.NewStyle().Width(w).Render(s) }
	note := func(s string) string { return st.note.Render(wrap("· " + s)) }
	switch it.Kind {
	case fold.KindUser:
		who := "you"
		switch {
		case it.Origin != nil:
			// No person typed it: say which schedule or trigger did.
			who = it.Origin.Kind + " " + cmp.Or(it.Origin.Name, it.Origin.ID)
		case it.From != "" && it.From != "tui":
			who = "you (" + it.From + ")"
		}
		r := m.receiptOf(it.MessageID)
		out := st.user.Render(who) + "  " + m.receipt(r.State) + "\n" + wrap(it.Text)
		switch {
		case (r.State == chat.DeliveryFailed || r.State == chat.DeliveryUnknown) && r.Detail != "":
			out += "\n" + st.receiptFailed.Render(wrap("✗ "+r.Detail))
		case r.State == chat.DeliveryQueued && r.Detail != "":
			out += "\n" + st.dim.Render(wrap("… "+r.Detail))
		}
		return out
	case fold.KindAgent:
		return st.agentHead.Render("agent") + "\n" + m.markdown(it.Text, w)
	case fold.KindThought:
		return st.dim.Render(wrap("thinking: " + it.Text))
	case fold.KindTool:
		return m.toolLines(it, w, name)
	case fold.KindPlan:
		out := []string{st.agentHead.Render("plan")}
		for _, p := range it.Entries {
			mark := "[ ]"
			switch p.Status {
			case "completed":
				mark = "[x]"
			case "in_progress":
				mark = "[~]"
			}
			out = append(out, wrap(mark+" "+p.Content))
		}
		return strings.Join(out, "\n")
	case fold.KindPermission, fold.KindQuestion:
		// An open card is drawn at the bottom, where the keys answer it; one
		// closed unanswered was said as such (onError) or went quietly.
		switch {
		case it.State != fold.CardResolved && it.State != fold.CardCancelled:
			return ""
		case it.Kind == fold.KindPermission:
			return note(permissionNote(it))
		}
		return note(questionNote(it))
	case fold.KindUsage:
		if s := turnUsage(it.Usage); s != "" {
			return note("usage: " + s)
		}
		return ""
	case fold.KindHandBack:
		return note("handed back: to continue in a terminal, " + it.Text)
	case fold.KindNotice:
		text := it.Text
		if it.From != "" { // a notice event: the agent's or a script's words
			text = "from " + it.From + ": " + text
		}
		if it.Level == fold.LevelError {
			return st.err.Render(wrap("! " + text))
		}
		return note(text)
	}
	return ""
}

// toolLines is a tool call: one line, or (Ctrl+O) with its input or the
// change it makes, and its output.
func (m *Model) toolLines(it fold.Item, w int, name string) string {
	st := m.st
	status := it.Status
	if status == "" {
		status = "pending"
	}
	title := it.Title
	if title == "" {
		title = it.Tool
	}
	line := fmt.Sprintf("⚙ %s · %s", title, status)
	if !m.expandTools {
		return ansi.Truncate(line, w, "…")
	}
	out := []string{line}
	diffs := it.Diffs
	if len(diffs) == 0 {
		diffs = proposedDiffs(name, it.Input)
	}
	if len(diffs) > 0 {
		for _, l := range m.diffLines(diffs, w-2, 0) {
			out = append(out, "  "+l)
		}
	} else if in := compactJSON(it.Input, 0); in != "" {
		out = append(out, st.dim.Render(lipgloss.NewStyle().Width(w).Render("  input: "+in)))
	}
	if it.Output != "" {
		lines := strings.Split(strings.TrimRight(it.Output, "\n"), "\n")
		if len(lines) > 20 {
			lines = append(lines[:20], fmt.Sprintf("… %d more lines", len(lines)-20))
		}
		for _, l := range lines {
			out = append(out, st.dim.Render("  "+ansi.Truncate(l, w-2, "…")))
		}
	}
	return strings.Join(out, "\n")
}

func (m *Model) receipt(state string) string {
	st := m.st
	switch state {
	case "":
		if !m.online {
			return st.dim.Render("waiting for connection")
		}
		return st.dim.Render("not sent yet")
	case "sending":
		return st.dim.Render("sending…")
	case chat.DeliveryQueued:
		return st.dim.Render("queued")
	case chat.DeliveryDelivering:
		return st.dim.Render("delivering…")
	case chat.DeliverySubmitted:
		return st.dim.Render("✓ submitted")
	case chat.DeliveryFailed:
		return st.receiptFailed.Render("✗ failed") // the reason follows the text
	case chat.DeliveryUnknown:
		return st.receiptFailed.Render("? unknown") // the reason follows the text
	}
	return st.dim.Render(state)
}

// markdown renders agent text for the terminal, two cells in from the edge.
func (m *Model) markdown(text string, w int) string {
	lines := strings.Split(m.md.Render(text, w-2), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

func compactJSON(raw json.RawMessage, limit int) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	s := unescapeHTML(buf.String())
	if limit > 0 {
		s = truncate(s, limit)
	}
	return s
}

// unescapeHTML undoes Go's HTML-safe escapes (\u0026, \u003c, \u003e,
// \u2028, \u2029) inside compact JSON's strings: a command reads `a && b`,
// as the agent wrote it. An escaped backslash before them is left alone.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // any other escape, \\ included, stays whole
		i++
	}
	return b.String()
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 0)]) + "…"
}

// count is a token count in few characters: 950, 1.2k, 24k, 1.0M.
func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", (n+500)/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func dollars(v float64) string {
	if v >= 0.01 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

func contextFill(tokens, window int64) string {
	switch {
	case tokens == 0:
		return ""
	case window == 0:
		return "context " + count(tokens)
	}
	return fmt.Sprintf("context %d%% (%s of %s)", (100*tokens+window/2)/window, count(tokens), count(window))
}

// turnUsage is a turn's line, as the dashboard writes it:
// "1.2k in · 56 out · $0.0123 · context 12% (24k of 200k)".
func turnUsage(u chat.Usage) string {
	var parts []string
	if u.InputTokens != 0 {
		parts = append(parts, count(u.InputTokens)+" in")
	}
	if u.OutputTokens != 0 {
		parts = append(parts, count(u.OutputTokens)+" out")
	}
	if u.CostUSD != 0 {
		parts = append(parts, dollars(u.CostUSD))
	}
	if c := contextFill(u.ContextTokens, u.ContextWindow); c != "" {
		parts = append(parts, c)
	}
	return strings.Join(parts, " · ")
}

// threadUsage is the status line's short word on the thread's totals:
// "$0.05 ctx 12%" (nothing when the agent reported none).
func threadUsage(t chat.UsageTotals) string {
	var parts []string
	if t.CostUSD != 0 {
		parts = append(parts, dollars(t.CostUSD))
	} else if t.InputTokens+t.OutputTokens != 0 {
		parts = append(parts, count(t.InputTokens+t.OutputTokens)+" tok")
	}
	if t.ContextTokens != 0 && t.ContextWindow != 0 {
		parts = append(parts, fmt.Sprintf("ctx %d%%", (100*t.ContextTokens+t.ContextWindow/2)/t.ContextWindow))
	}
	return strings.Join(parts, " ")
}
