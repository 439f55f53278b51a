package tui

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/fold"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/wire"
)

// card is an open permission request or question, shown at the bottom until the
// server says it is over (answered here, answered elsewhere, or cancelled).
type card struct {
	id   string
	kind string
	perm chat.PermissionRequest
	q    chat.Question

	qi       int          // the question being answered
	cursor   int          // the highlighted option
	selected map[int]bool // multi-select ticks of the current question
	answers  chat.Answers // answers to the questions before qi
	free     string       // the person's own words

	sent bool   // answered here; waiting for the server to close it
	err  string // why the last answer did not take
}

// syncCards shows at the bottom the cards the conversation has open, oldest
// first, keeping what the person has begun of each answer.
func (m *Model) syncCards() {
	var open []*card
	for _, it := range m.conv.View().Items {
		if (it.Kind != fold.KindPermission && it.Kind != fold.KindQuestion) || (it.State != fold.CardOpen && it.State != fold.CardAnswering) {
			continue
		}
		c := m.cardByID(it.RequestID)
		if c == nil {
			c = newCard(it)
		}
		c.perm.Diffs = it.Diffs // the call's changes, as they come while it is open
		open = append(open, c)
	}
	m.cards = open
	m.layout()
}

func newCard(it fold.Item) *card {
	if it.Kind == fold.KindQuestion {
		return &card{id: it.RequestID, kind: chat.CardQuestion, q: chat.Question{RequestID: it.RequestID, Questions: it.Questions},
			answers: chat.Answers{}, selected: map[int]bool{}}
	}
	return &card{id: it.RequestID, kind: chat.CardPermission, selected: map[int]bool{}, perm: chat.PermissionRequest{
		RequestID: it.RequestID, Options: it.Options, Diffs: it.Diffs,
		Tool: chat.PermissionTool{Name: it.Name, Title: it.Title, Input: it.Input, ToolCallID: it.ToolCallID}}}
}

// card is the card the keys go to: the oldest open one.
func (m *Model) card() *card {
	if len(m.cards) == 0 {
		return nil
	}
	return m.cards[0]
}

func (m *Model) cardByID(id string) *card {
	for _, c := range m.cards {
		if c.id == id {
			return c
		}
	}
	return nil
}

// options are the labels the current step offers.
func (c *card) options() []string {
	if c.kind == chat.CardPermission {
		out := make([]string, len(c.perm.Options))
		for i, o := range c.perm.Options {
			out[i] = o.Label
		}
		return out
	}
	if c.qi >= len(c.q.Questions) {
		return nil
	}
	qs := c.q.Questions[c.qi]
	out := make([]string, len(qs.Options))
	for i, o := range qs.Options {
		out[i] = o.Label
	}
	return out
}

func (c *card) multi() bool {
	return c.kind == chat.CardQuestion && c.qi < len(c.q.Questions) && c.q.Questions[c.qi].MultiSelect
}

func (m *Model) cardKey(c *card, k tea.KeyPressMsg) tea.Cmd {
	m.dirty = true
	if c.sent {
		return nil
	}
	opts := c.options()
	key := k.String()
	switch key {
	case "up":
		if c.cursor > 0 {
			c.cursor--
		}
		return nil
	case "down", "tab":
		if c.cursor < len(opts)-1 {
			c.cursor++
		}
		return nil
	case "backspace":
		if c.free != "" {
			r := []rune(c.free)
			c.free = string(r[:len(r)-1])
		}
		return nil
	case "enter":
		switch {
		case strings.TrimSpace(c.free) != "":
			return m.answerFree(c, strings.TrimSpace(c.free))
		case c.multi():
			if len(c.selected) == 0 && len(opts) > 0 {
				c.selected[c.cursor] = true
			}
			return m.answerStep(c)
		case len(opts) > 0:
			return m.pick(c, c.cursor)
		}
		return nil
	case "space":
		if c.free == "" {
			if c.multi() {
				c.selected[c.cursor] = !c.selected[c.cursor]
				if !c.selected[c.cursor] {
					delete(c.selected, c.cursor)
				}
			}
			return nil
		}
		c.free += " "
		return nil
	}
	if k.Text == "" || k.Mod&^tea.ModShift != 0 {
		return nil
	}
	r := []rune(k.Text)
	if c.free == "" && len(r) == 1 && unicode.IsDigit(r[0]) {
		n := int(r[0] - '1')
		if n >= 0 && n < len(opts) {
			c.cursor = n
			if c.multi() {
				c.selected[n] = !c.selected[n]
				if !c.selected[n] {
					delete(c.selected, n)
				}
				return nil
			}
			return m.pick(c, n)
		}
	}
	c.free += k.Text
	return nil
}

// pick chooses option i of the current step.
func (m *Model) pick(c *card, i int) tea.Cmd {
	if c.kind == chat.CardPermission {
		o := c.perm.Options[i]
		return m.answerPermission(c, router.PermissionAnswer{RequestID: c.id, OptionID: o.ID})
	}
	c.selected = map[int]bool{i: true}
	return m.answerStep(c)
}

// answerFree answers the current step in the person's own words. For a
// permission card they are the reason given with a rejection.
func (m *Model) answerFree(c *card, text string) tea.Cmd {
	if c.kind == chat.CardPermission {
		for _, o := range c.perm.Options {
			if o.Kind == chat.OptionRejectOnce || o.Kind == chat.OptionRejectAlways {
				return m.answerPermission(c, router.PermissionAnswer{RequestID: c.id, OptionID: o.ID, Message: text})
			}
		}
		c.err = "this card takes one of its options"
		c.free = ""
		return nil
	}
	if c.qi >= len(c.q.Questions) {
		return m.answerQuestion(c, text)
	}
	c.answers[c.q.Questions[c.qi].Question] = chat.Answer{Text: text}
	return m.nextStep(c)
}

// answerStep records the ticked options of the current question.
func (m *Model) answerStep(c *card) tea.Cmd {
	if len(c.q.Questions) == 0 {
		return nil
	}
	qs := c.q.Questions[c.qi]
	var labels []string
	for i, o := range qs.Options {
		if c.selected[i] {
			labels = append(labels, o.Label)
		}
	}
	if qs.MultiSelect {
		c.answers[qs.Question] = chat.Answer{Labels: append([]string{}, labels...)}
	} else if len(labels) > 0 {
		c.answers[qs.Question] = chat.Answer{Text: labels[0]}
	}
	return m.nextStep(c)
}

func (m *Model) nextStep(c *card) tea.Cmd {
	c.qi++
	c.cursor, c.free, c.selected = 0, "", map[int]bool{}
	if c.qi < len(c.q.Questions) {
		return nil
	}
	return m.answerQuestion(c, "")
}

func (m *Model) answerPermission(c *card, r router.PermissionAnswer) tea.Cmd {
	c.sent, c.err = true, ""
	return m.sendCmd("card", c.id, wire.Frame(wire.TypePermissionResponse, r))
}

func (m *Model) answerQuestion(c *card, response string) tea.Cmd {
	c.sent, c.err = true, ""
	c.qi = len(c.q.Questions)
	return m.sendCmd("card", c.id, wire.Frame(wire.TypeQuestionAnswer, router.QuestionAnswer{RequestID: c.id, Answers: c.answers, Response: response}))
}

// cardLines renders the card for the bottom of the screen.
func (m *Model) cardLines(c *card) []string {
	st := m.st
	var lines []string
	more := ""
	if n := len(m.cards); n > 1 {
		more = fmt.Sprintf(" (1 of %d)", n)
	}
	if c.kind == chat.CardPermission {
		title := c.perm.Tool.Title
		if title == "" {
			title = c.perm.Tool.Name
		}
		lines = append(lines, st.cardTitle.Render("Permission: "+title+more))
		// What will change, before it is allowed: the agent's diffs of the
		// tool call (else parley's), or the change the tool's input describes.
		diffs := c.perm.Diffs
		if len(diffs) == 0 {
			diffs = proposedDiffs(c.perm.Tool.Name, c.perm.Tool.Input)
		}
		if len(diffs) > 0 {
			limit := max(m.height/2-4, 4)
			if m.expandTools {
				limit = max(m.height-10, 4)
			}
			for _, l := range m.diffLines(diffs, m.width-2, limit) {
				lines = append(lines, "  "+l)
			}
		} else if in := compactJSON(c.perm.Tool.Input, m.width-4); in != "" {
			lines = append(lines, st.dim.Render("  "+in))
		}
	} else if c.qi < len(c.q.Questions) {
		qs := c.q.Questions[c.qi]
		head := "Question"
		if qs.Header != "" {
			head = qs.Header
		}
		if len(c.q.Questions) > 1 {
			head += fmt.Sprintf(" %d/%d", c.qi+1, len(c.q.Questions))
		}
		lines = append(lines, st.cardTitle.Render(head+more))
		for _, l := range strings.Split(qs.Question, "\n") {
			lines = append(lines, "  "+l)
		}
	} else {
		lines = append(lines, st.cardTitle.Render("Question"+more))
	}
	for i, label := range c.options() {
		mark := "  "
		if i == c.cursor && c.free == "" {
			mark = st.accent.Render("› ")
		}
		tick := ""
		if c.multi() {
			tick = "[ ] "
			if c.selected[i] {
				tick = "[x] "
			}
		}
		line := fmt.Sprintf("%s%d. %s%s", mark, i+1, tick, label)
		if c.kind == chat.CardQuestion && c.qi < len(c.q.Questions) {
			if d := c.q.Questions[c.qi].Options[i].Description; d != "" {
				line += st.dim.Render("  " + d)
			}
		}
		lines = append(lines, line)
	}
	ownWords := "  Or type your own answer: "
	if c.kind == chat.CardPermission {
		ownWords = "  Or type what to do instead: "
	}
	lines = append(lines, ownWords+c.free+st.accent.Render("▏"))
	switch {
	case c.sent:
		lines = append(lines, st.dim.Render("  sent; waiting for the agent…"))
	case c.err != "":
		lines = append(lines, st.err.Render("  "+c.err))
	}
	hint := "1-9 or ↑↓ Enter choose · type to answer · Esc stop turn"
	if c.multi() {
		hint = "Space or 1-9 tick · Enter confirm · type to answer · Esc stop turn"
	}
	lines = append(lines, st.dim.Render(hint))
	return lines
}

// picker lists threads to switch to; entry 0 is "a new thread". "/" searches
// titles and messages instead: the list is then the threads found.
type picker struct {
	threads []chat.Thread
	cursor  int
	typing  bool   // the search line takes the keys
	query   string // the search typed
	note    string // what the last search found, or why it failed
	// unsearched names the machines a hub's search did not cover: its hits
	// are not all there is.
	unsearched string
}

// searchMsg carries a search's hits to the picker.
type searchMsg struct {
	query      string
	hits       []chat.SearchHit
	unsearched []client.Unsearched
	err        error
}

func (m *Model) searchThreads(q string) tea.Cmd {
	be := m.be
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		hits, unsearched, err := be.Search(ctx, q)
		return searchMsg{query: q, hits: hits, unsearched: unsearched, err: err}
	}
}

// onSearch lists the threads a search found, best first, once each.
func (m *Model) onSearch(msg searchMsg) {
	p := m.picker
	if p == nil || msg.query != p.query {
		return
	}
	m.dirty = true
	p.unsearched = ""
	if msg.err != nil {
		p.note = "search: " + shortErr(msg.err)
		return
	}
	p.threads, p.cursor = nil, 0
	seen := map[chat.ThreadID]bool{}
	for _, h := range msg.hits {
		if seen[h.Thread] {
			continue
		}
		seen[h.Thread] = true
		p.threads = append(p.threads, chat.Thread{ID: h.Thread, Title: h.Title, Archived: h.Archived, Agent: h.Kind + ": " + oneLine(h.Snippet, 40)})
	}
	if len(p.threads) > 0 {
		p.cursor = 1
	}
	p.note = fmt.Sprintf("%d threads found for %q", len(p.threads), msg.query)
	if len(msg.unsearched) > 0 {
		var machines []string
		for _, u := range msg.unsearched {
			machines = append(machines, u.Node+" ("+u.Reason+")")
		}
		// A node's words may carry terminal control sequences.
		p.unsearched = printable("not searched: " + strings.Join(machines, ", "))
	}
}

func oneLine(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

func (m *Model) pickerKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	m.dirty = true
	n := len(p.threads) + 1
	if p.typing {
		switch k.String() {
		case "esc":
			p.typing = false
		case "enter":
			p.typing = false
			if strings.TrimSpace(p.query) == "" {
				return nil
			}
			p.note = "searching…"
			return m.searchThreads(p.query)
		case "backspace":
			if r := []rune(p.query); len(r) > 0 {
				p.query = string(r[:len(r)-1])
			}
		default:
			if k.Text != "" {
				p.query += k.Text
			}
		}
		return nil
	}
	switch key := k.String(); key {
	case "/":
		p.typing, p.query, p.note, p.unsearched = true, "", "", ""
		m.layout()
		return nil
	case "esc", "ctrl+t":
		m.picker = nil
		m.layout()
		return nil
	case "up":
		if p.cursor > 0 {
			p.cursor--
		}
		return nil
	case "down":
		if p.cursor < n-1 {
			p.cursor++
		}
		return nil
	case "enter":
		return m.pickThread(p.cursor)
	default:
		// The keys are the numbers the list shows: 0 the new thread, 1-9 the
		// threads in view (scrolled or not).
		if len(k.Text) == 1 && k.Text[0] >= '0' && k.Text[0] <= '9' {
			d := int(k.Text[0] - '0')
			if d == 0 {
				return m.pickThread(0)
			}
			for _, r := range m.pickerRows() {
				if r.key == d {
					return m.pickThread(r.i)
				}
			}
		}
	}
	return nil
}

// pickerRow is a row of the picker in view: its index (0 the new thread,
// i the i-th thread) and the digit that opens it (-1 none).
type pickerRow struct{ i, key int }

// pickerRows are the rows in view, each with the digit that opens it: the
// first nine threads in view get 1-9, the rest are reached with ↑↓.
func (m *Model) pickerRows() []pickerRow {
	p := m.picker
	rows := max(m.height/2-3, 3)
	start := 0
	if p.cursor >= rows {
		start = p.cursor - rows + 1
	}
	var out []pickerRow
	next := 1
	for i := start; i < len(p.threads)+1 && i < start+rows; i++ {
		key := -1
		switch {
		case i == 0:
			key = 0
		case next <= 9:
			key = next
			next++
		}
		out = append(out, pickerRow{i: i, key: key})
	}
	return out
}

func (m *Model) pickThread(i int) tea.Cmd {
	p := m.picker
	m.picker = nil
	m.layout()
	if i == 0 {
		m.startNew("", "")
		return nil
	}
	return m.attach(p.threads[i-1])
}

func (m *Model) pickerLines() []string {
	p := m.picker
	st := m.st
	lines := []string{st.cardTitle.Render("Switch thread")}
	for _, r := range m.pickerRows() {
		i := r.i
		mark := "  "
		if i == p.cursor {
			mark = st.accent.Render("› ")
		}
		if i == 0 {
			lines = append(lines, mark+"0. + new thread here")
			continue
		}
		label := "  "
		if r.key > 0 {
			label = fmt.Sprintf("%d.", r.key)
		}
		th := p.threads[i-1]
		cur := ""
		if th.ID == m.thread.ID {
			cur = " (this one)"
		}
		if th.Archived {
			cur += " (archived)"
		}
		title := th.Title
		if title == "" {
			title = th.Cwd
		}
		if th.State == "" { // a search hit: where it matched
			lines = append(lines, fmt.Sprintf("%s%s %s · %s%s", mark, label, title, th.Agent, cur))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s%s %s · %s · %s%s", mark, label, th.Agent, title, th.State, cur))
	}
	if p.typing {
		lines = append(lines, "Search: "+p.query+"▏")
	} else if p.note != "" {
		lines = append(lines, st.dim.Render(p.note))
	}
	if !p.typing && p.unsearched != "" {
		lines = append(lines, m.wrap(p.unsearched)...)
	}
	if p.typing {
		lines = append(lines, st.dim.Render("type words · Enter search · Esc back"))
		return lines
	}
	lines = append(lines, st.dim.Render("0-9 or ↑↓ Enter open · / search · Esc close"))
	return lines
}
