package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/glamour/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/wire"
)

// sendTimeout bounds one socket write.
const sendTimeout = 10 * time.Second

// Messages the model makes for itself.
type (
	// sentMsg reports how writing one input went.
	sentMsg struct {
		kind string // message, stop, card, mode, resume
		ref  string // message id or request id
		err  error
	}
	// threadsMsg carries the thread list for the initial choice or the picker.
	threadsMsg struct {
		forPicker bool
		threads   []chat.Thread
		err       error
	}
)

// Entry kinds of the transcript.
const (
	entryUser    = "user"
	entryAgent   = "agent"
	entryThought = "thought"
	entryTool    = "tool"
	entryPlan    = "plan"
	entryNote    = "note"
	entryError   = "error"
)

// entry is one block of the transcript.
type entry struct {
	kind string
	text string
	// user messages
	id    string
	from  chat.RouteKey
	state string // "" (not sent yet), sending, queued, delivering, submitted, failed
	// detail says why a message failed.
	detail string
	out    *router.Message // what to (re)send while it has no receipt
	// agent text
	agentMsgID string
	// tool calls
	tool   chat.ToolCall
	name   string // the tool's name, when a permission card named it
	status string
	output string
	diffs  []chat.Diff
	// plan
	plan []chat.PlanEntry

	rendered      []string // cache of the rendering's lines…
	renderedWidth int      // … at this width
	renderedKey   string
}

// Model is the Bubble Tea model of `parley chat`.
type Model struct {
	opt Options
	be  Backend
	st  styles

	width, height int

	// connection
	online     bool
	everOnline bool
	connecting bool // between OnlineMsg and replay_done
	offline    string
	attempt    int
	fatal      error

	modeWant string           // the mode asked for and not yet confirmed
	totals   chat.UsageTotals // the shown thread's usage, as of its last turn
	cfg      chat.Config
	thread   chat.Thread
	lastSeq  int64
	// draft is the agent's provisional text (agent_draft): drawn after the
	// transcript, apart, until its final words or the turn's end replace it.
	draft     string
	draftID   int64 // the draft shown's id: an append (drafts=append) adds only to it
	mode      chat.Mode
	turn      bool
	turnMsg   string // the message the running turn answers
	stopping  bool
	recall    int  // the earlier prompt ↑ put in the box (0: the newest), -1: none
	chosen    bool // the initial thread choice is made
	intent    *router.Intent
	agentPick string // the agent the next message asks for

	entries []*entry
	users   map[string]*entry
	tools   map[string]*entry
	hidden  map[string]string // tool calls shown as their own card: id → title
	cards   []*card

	picker  *picker
	manager *manager // the thread menu (manage.go), while open

	input       textarea.Model
	lines       []string // the transcript, laid out at the current width
	tHeight     int      // rows the transcript shows
	scroll      int      // rows scrolled up from the bottom (0: follow new output)
	expandTools bool
	quitArmed   bool
	flash       string // one-line notice in the help row
	dirty       bool

	md      *glamour.TermRenderer // the Markdown renderer for mdWidth
	mdWidth int
}

// New builds the model; be carries its inputs to the daemon.
func New(opt Options, be Backend) *Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = "> "
	ta.Placeholder = "Message the agent (Enter sends, Alt+Enter adds a line)"
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.SetVirtualCursor(false)
	ta.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j", "shift+enter")
	_ = ta.Focus() // the blink it asks for is the virtual cursor's, not used
	ta.SetHeight(3)
	m := &Model{
		opt: opt, be: be, st: newStyles(!opt.NoColor),
		width: 80, height: 24,
		users: map[string]*entry{}, tools: map[string]*entry{}, hidden: map[string]string{}, recall: -1,
		input: ta, dirty: true,
	}
	m.layout()
	return m
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 8)
		m.layout()
		m.dirty = true
		return m, nil
	case OnlineMsg:
		m.online, m.everOnline, m.connecting, m.offline, m.attempt = true, true, true, "", 0
		for _, c := range m.cards {
			c.confirmed = false
		}
		return m, nil
	case OfflineMsg:
		m.online, m.connecting = false, false
		m.attempt = msg.Attempt
		m.offline = "the socket closed"
		if msg.Err != nil {
			m.offline = shortErr(msg.Err)
		}
		m.deletedHere(msg.Err)
		for _, e := range m.users {
			if e.state == "sending" {
				e.state = "" // its write may not have got there: resent on reconnect
			}
		}
		m.dirty = true
		return m, nil
	case FatalMsg:
		m.fatal = msg.Err
		return m, tea.Quit
	case EventMsg:
		return m, m.onEvent(msg.Event)
	case sentMsg:
		return m, m.onSent(msg)
	case threadsMsg:
		return m, m.onThreads(msg)
	case searchMsg:
		m.onSearch(msg)
		return m, nil
	case usageMsg:
		if msg.thread == m.thread.ID {
			m.totals, m.dirty = msg.totals, true
		}
		return m, nil
	case tea.PasteMsg:
		if c := m.card(); c != nil {
			c.free += strings.ReplaceAll(msg.Content, "\n", " ")
			return m, nil
		}
		if m.picker != nil {
			return m, nil
		}
		if g := m.manager; g != nil {
			if g.step == "rename" {
				g.title += strings.ReplaceAll(msg.Content, "\n", " ")
				m.dirty = true
			}
			return m, nil
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

// layout sizes the transcript and the input to the window.
func (m *Model) layout() {
	m.input.SetWidth(m.width)
	m.tHeight = max(m.height-m.bottomHeight()-1, 1)
	m.scrollBy(0)
}

// --- events ------------------------------------------------------------------

func (m *Model) onEvent(ev client.Event) tea.Cmd {
	// Never show an event twice: log events are kept by seq, per thread.
	if ev.Seq > 0 {
		if ev.Thread != m.thread.ID || ev.Seq <= m.lastSeq {
			return nil
		}
		m.lastSeq = ev.Seq
		if chat.EndsDraft(ev.Type) {
			m.draft, m.draftID = "", 0
		}
	}
	m.dirty = true
	switch ev.Type {
	case chat.TypeAgentDraft:
		var p chat.AgentDraft
		// It belongs right after its event: after a later one it may stand
		// for final words already shown.
		if ev.Decode(&p) == nil && ev.Thread == m.thread.ID && p.AfterSeq == m.lastSeq {
			m.draftID, m.draft = p.Onto(m.draftID, m.draft)
		}
	case chat.TypeConfig:
		_ = ev.Decode(&m.cfg)
	case chat.TypeThread:
		var te chat.ThreadEvent
		_ = ev.Decode(&te)
		if te.Thread.ID != m.thread.ID {
			m.switchTo(te.Thread)
			if !m.connecting {
				return m.loadUsage()
			}
		} else {
			m.thread = te.Thread
		}
	case chat.TypeReplayDone:
		return m.onReplayDone()
	case chat.TypeUserMessage:
		var p chat.UserMessage
		_ = ev.Decode(&p)
		if e := m.users[p.MessageID]; e != nil {
			if e.out != nil {
				// Our own message, typed here: its place in the log is the truth.
				m.entries = slices.DeleteFunc(m.entries, func(x *entry) bool { return x == e })
				m.add(e)
			}
			e.from = p.From
			if e.state == "" || e.state == "sending" {
				e.state = chat.DeliveryQueued
			}
			e.out = nil
			return nil
		}
		e := &entry{kind: entryUser, id: p.MessageID, text: p.Text, from: p.From, state: chat.DeliveryQueued}
		m.users[p.MessageID] = e
		m.add(e)
	case chat.TypeDelivery:
		var p chat.Delivery
		_ = ev.Decode(&p)
		if e := m.users[p.MessageID]; e != nil {
			if rank(p.State) >= rank(e.state) {
				e.state, e.detail = p.State, p.Detail
			}
			e.out = nil
		}
	case chat.TypeAgentChunk:
		var p chat.AgentChunk
		_ = ev.Decode(&p)
		if last := m.last(); last != nil && last.kind == entryAgent && (p.MessageID == "" || last.agentMsgID == "" || p.MessageID == last.agentMsgID) {
			last.text += p.Text
			if last.agentMsgID == "" {
				last.agentMsgID = p.MessageID
			}
			return nil
		}
		m.add(&entry{kind: entryAgent, text: p.Text, agentMsgID: p.MessageID})
	case chat.TypeThoughtChunk:
		var p chat.ThoughtChunk
		_ = ev.Decode(&p)
		if last := m.last(); last != nil && last.kind == entryThought {
			last.text += p.Text
			return nil
		}
		m.add(&entry{kind: entryThought, text: p.Text})
	case chat.TypeToolCall:
		var p chat.ToolCall
		_ = ev.Decode(&p)
		if ownCard(p.Title) {
			// Shown as its question card (the dashboard's rule, ui/src/fold.ts).
			m.hidden[p.ToolCallID] = p.Title
			return nil
		}
		if e := m.tools[p.ToolCallID]; e != nil {
			e.tool, e.status = p, p.Status
			return nil
		}
		e := &entry{kind: entryTool, tool: p, status: p.Status}
		m.tools[p.ToolCallID] = e
		m.add(e)
	case chat.TypeToolCallUpdate:
		var p chat.ToolCallUpdate
		_ = ev.Decode(&p)
		hidden, isHidden := m.hidden[p.ToolCallID]
		if isHidden && p.Status != "failed" {
			return nil
		}
		e := m.tools[p.ToolCallID]
		if e == nil {
			title := p.Title
			if title == "" {
				title = hidden
			}
			e = &entry{kind: entryTool, tool: chat.ToolCall{ToolCallID: p.ToolCallID, Title: title}}
			m.tools[p.ToolCallID] = e
			m.add(e)
		}
		if p.Status != "" {
			e.status = p.Status
		}
		if p.Title != "" {
			e.tool.Title = p.Title
		}
		if p.Output != "" {
			e.output = p.Output
		}
		if len(p.Diffs) > 0 {
			e.diffs = p.Diffs
		}
	case chat.TypePlan:
		var p chat.Plan
		_ = ev.Decode(&p)
		// The plan comes whole each time: one entry per turn, updated in place
		// (the dashboard's rule, ui/src/fold.ts).
		for i := len(m.entries) - 1; i >= 0; i-- {
			if e := m.entries[i]; e.kind == entryPlan {
				e.plan = p.Entries
				m.dirty = true
				return nil
			} else if e.kind == entryUser {
				break
			}
		}
		m.add(&entry{kind: entryPlan, plan: p.Entries})
	case chat.TypePermissionRequest:
		var p chat.PermissionRequest
		_ = ev.Decode(&p)
		if e := m.tools[p.Tool.ToolCallID]; e != nil && p.Tool.ToolCallID != "" {
			e.name = p.Tool.Name // its expanded view shows the change (Ctrl+O)
		}
		m.openCard(&card{id: p.RequestID, kind: chat.CardPermission, perm: p})
	case chat.TypeQuestion:
		var p chat.Question
		_ = ev.Decode(&p)
		m.openCard(&card{id: p.RequestID, kind: chat.CardQuestion, q: p, answers: chat.Answers{}})
	case chat.TypePermissionResolved:
		var p chat.PermissionResolved
		_ = ev.Decode(&p)
		c := m.closeCard(p.RequestID)
		m.add(&entry{kind: entryNote, text: permissionNote(c, p)})
	case chat.TypeQuestionResolved:
		var p chat.QuestionResolved
		_ = ev.Decode(&p)
		m.closeCard(p.RequestID)
		m.add(&entry{kind: entryNote, text: questionNote(p)})
	case chat.TypeMode:
		was := m.mode.Current
		_ = ev.Decode(&m.mode)
		m.modeWant = ""
		if was != "" && m.mode.Current != "" && m.mode.Current != was {
			m.add(&entry{kind: entryNote, text: "mode changed to " + modeName(m.mode)})
		}
	case chat.TypeTurnStatus:
		var p chat.TurnStatus
		_ = ev.Decode(&p)
		m.turn = p.Active
		if p.Active {
			m.turnMsg = p.MessageID
			if p.Stopping {
				m.stopping = true // asked from here or from any other screen
			}
		} else {
			m.stopping, m.turnMsg = false, ""
		}
	case chat.TypeUsage:
		var u chat.Usage
		_ = ev.Decode(&u)
		if s := turnUsage(u); s != "" && (u.InputTokens != 0 || u.OutputTokens != 0 || u.CostUSD != 0) {
			m.add(&entry{kind: entryNote, text: "usage: " + s})
		}
	case chat.TypePromptDone:
		var p chat.PromptDone
		_ = ev.Decode(&p)
		if p.StopReason != chat.StopEndTurn {
			m.add(&entry{kind: entryNote, text: "turn ended: " + p.StopReason})
		}
		if !m.connecting {
			return m.loadUsage()
		}
	case chat.TypeError:
		var p chat.Error
		_ = ev.Decode(&p)
		m.onError(p)
	case chat.TypeNotice:
		var p chat.Notice
		_ = ev.Decode(&p)
		m.add(&entry{kind: entryNote, text: noticeLine(p)})
	case chat.TypeSessionInfo:
		var p chat.SessionInfo
		_ = ev.Decode(&p)
		switch p.State {
		case "exited":
			m.add(&entry{kind: entryNote, text: "agent session exited" + suffix(p.Detail)})
		case "restarted":
			m.add(&entry{kind: entryNote, text: "agent restarted" + suffix(p.Detail)})
		}
	case chat.TypeThreadInfo:
		// Renamed, (un)archived or moved, here or elsewhere: the header follows.
		var p chat.ThreadInfo
		_ = ev.Decode(&p)
		if ev.Thread == m.thread.ID {
			m.thread.Title, m.thread.Archived = p.Title, p.Archived
			if p.Agent != "" {
				m.thread.Agent = p.Agent
			}
			if p.MovedFrom != "" {
				m.thread.State = chat.ThreadUnloaded
				m.add(&entry{kind: entryNote, text: movedNote(p)})
			}
		}
	case chat.TypeDone:
		var p chat.Done
		_ = ev.Decode(&p)
		m.onDone(p)
	}
	return nil
}

// ownCard reports a tool call the conversation shows as its own card.
func ownCard(title string) bool { return title == "AskUserQuestion" }

// modeName is the current mode's name as the agent calls it.
func modeName(md chat.Mode) string {
	for _, o := range md.Available {
		if o.ID == md.Current {
			return o.Name
		}
	}
	return md.Current
}

// switchTo shows another thread: the transcript starts again from its replay.
// Messages typed and not yet sent stay.
func (m *Model) switchTo(th chat.Thread) {
	m.thread, m.lastSeq, m.totals, m.draft, m.draftID = th, 0, chat.UsageTotals{}, "", 0
	keep := []*entry{}
	users := map[string]*entry{}
	for _, e := range m.entries {
		if e.kind == entryUser && e.out != nil {
			keep = append(keep, e)
			users[e.id] = e
		}
	}
	m.entries, m.users, m.tools, m.hidden, m.cards = keep, users, map[string]*entry{}, map[string]string{}, nil
	m.mode, m.turn, m.stopping, m.turnMsg, m.recall = chat.Mode{Current: th.Mode}, false, false, "", -1
}

func (m *Model) onReplayDone() tea.Cmd {
	m.connecting = false
	// Open cards were all said again on connect: one not said is over.
	m.cards = slices.DeleteFunc(m.cards, func(c *card) bool { return !c.confirmed })
	m.layout()
	cmds := []tea.Cmd{m.loadUsage()}
	for _, e := range m.entries {
		if e.kind == entryUser && e.out != nil && (e.state == "" || e.state == "sending") {
			e.state = "sending"
			cmds = append(cmds, m.sendCmd("message", e.id, wire.Frame(wire.TypeMessage, *e.out)))
		}
	}
	if !m.chosen {
		m.chosen = true
		if cmd := m.chooseThread(); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return tea.Batch(cmds...)
}

// chooseThread makes the initial choice `parley chat`'s flags ask for.
func (m *Model) chooseThread() tea.Cmd {
	switch {
	case m.opt.New:
		m.startNew(m.opt.Cwd, m.opt.Agent)
		return nil
	case m.opt.Thread != "" && m.opt.Thread == m.thread.ID:
		return nil
	case m.opt.Thread == "" && m.thread.ID != "" && (m.opt.Agent == "" || m.opt.Agent == m.thread.Agent):
		return nil // the route's current thread
	}
	return m.listThreads(false)
}

// usageMsg is a thread's usage totals, fetched.
type usageMsg struct {
	thread chat.ThreadID
	totals chat.UsageTotals
}

// loadUsage fetches the shown thread's usage totals for the status line.
func (m *Model) loadUsage() tea.Cmd {
	be, id := m.be, m.thread.ID
	if id == "" {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		t, err := be.Usage(ctx, id)
		if err != nil {
			return nil // the status line keeps what it had
		}
		return usageMsg{thread: id, totals: t}
	}
}

func (m *Model) listThreads(forPicker bool) tea.Cmd {
	be := m.be
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		ths, err := be.Threads(ctx)
		return threadsMsg{forPicker: forPicker, threads: ths, err: err}
	}
}

func (m *Model) onThreads(msg threadsMsg) tea.Cmd {
	m.dirty = true
	if msg.err != nil {
		m.add(&entry{kind: entryError, text: "could not list threads: " + shortErr(msg.err)})
		return nil
	}
	slices.SortFunc(msg.threads, func(a, b chat.Thread) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	if msg.forPicker {
		m.picker = &picker{threads: msg.threads}
		m.layout()
		return nil
	}
	if m.opt.Thread != "" {
		for _, th := range msg.threads {
			if th.ID == m.opt.Thread {
				return m.attach(th)
			}
		}
		m.add(&entry{kind: entryError, text: fmt.Sprintf("thread %s not found (parley threads lists them)", m.opt.Thread)})
		return nil
	}
	agent := m.opt.Agent
	if agent == "" {
		agent = m.cfg.DefaultAgent
	}
	for _, th := range msg.threads {
		if th.Agent == agent && th.SessionID != "" {
			return m.attach(th)
		}
	}
	if m.opt.Agent != "" {
		m.agentPick = m.opt.Agent
		m.add(&entry{kind: entryNote, text: "your first message starts a thread with " + m.opt.Agent})
	}
	return nil
}

// attach makes th the route's thread (open_thread binds it to this route).
func (m *Model) attach(th chat.Thread) tea.Cmd {
	if th.ID == m.thread.ID {
		return nil
	}
	m.intent, m.agentPick = nil, ""
	return m.sendCmd("open", string(th.ID), wire.Frame(wire.TypeOpenThread, wire.OpenThread{ThreadID: string(th.ID)}))
}

// startNew makes the next message start a new thread.
func (m *Model) startNew(cwd, agent string) {
	if agent == "" {
		agent = m.thread.Agent
	}
	if cwd == "" && (agent == "" || agent == m.thread.Agent) {
		cwd = m.thread.Cwd
	}
	if agent == "" {
		agent = m.cfg.DefaultAgent
	}
	for _, a := range m.cfg.Agents {
		if cwd == "" && a.ID == agent && len(a.Roots) > 0 {
			cwd = a.Roots[0]
		}
	}
	m.intent = &router.Intent{New: &router.NewIntent{Cwd: cwd, Agent: agent}}
	where := ""
	if cwd != "" {
		where = " in " + cwd
	}
	m.add(&entry{kind: entryNote, text: "your next message starts a new thread" + where})
	m.dirty = true
}

func (m *Model) onError(p chat.Error) {
	if m.managerErr(p) {
		return
	}
	if e := m.users[p.Ref]; e != nil && p.Ref != "" && rank(e.state) < rank(chat.DeliveryDelivering) {
		// Refused before it was taken (busy, bad input): it failed, and says why.
		e.state, e.detail, e.out = chat.DeliveryFailed, p.Message, nil
		return
	}
	if p.Code == chat.CodeCardClosed && p.Ref != "" {
		// Answered or cancelled elsewhere first: its resolution may have
		// reached this screen before this refusal, so the card may be gone
		// already. Any other refusal of an answer (the agent is not
		// running) leaves the card open, with the reason on it.
		m.closeCard(p.Ref)
		m.add(&entry{kind: entryNote, text: "that card was already answered or cancelled elsewhere"})
		return
	}
	for _, c := range m.cards {
		if c.id == p.Ref && p.Ref != "" {
			c.sent, c.err = false, p.Message
			return
		}
	}
	if m.stopping && strings.Contains(p.Message, chat.ErrNoTurn.Error()) {
		m.stopping = false
	}
	m.modeWant = "" // a refused set_mode, maybe: the next press starts from what is
	m.add(&entry{kind: entryError, text: p.Message})
}

func (m *Model) onSent(s sentMsg) tea.Cmd {
	if s.err == nil {
		return nil
	}
	m.dirty = true
	switch s.kind {
	case "message":
		if e := m.users[s.ref]; e != nil && e.state == "sending" {
			e.state = "" // sent again once the socket is back
		}
	case "card":
		if c := m.cardByID(s.ref); c != nil {
			c.sent, c.err = false, "not sent: "+shortErr(s.err)
		}
	case "stop":
		m.stopping = false
		m.flash = "stop not sent: " + shortErr(s.err)
	case "edit", "delete":
		if g := m.manager; g != nil && g.ref == s.ref {
			g.ref, g.note = "", "not sent: "+shortErr(s.err)
		}
	default:
		m.flash = s.kind + " not sent: " + shortErr(s.err)
	}
	return nil
}

// --- keys --------------------------------------------------------------------

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if key == "ctrl+c" {
		if m.quitArmed {
			return tea.Quit
		}
		m.quitArmed = true
		m.flash = "press Ctrl-C again to quit"
		return nil
	}
	m.quitArmed = false
	m.flash = ""
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if m.manager != nil {
		return m.managerKey(k)
	}
	if key == "esc" {
		return m.stop()
	}
	if key == "ctrl+o" {
		// Tools' input, output and diffs, and a card's whole diff.
		m.expandTools = !m.expandTools
		m.dirty = true
		return nil
	}
	if c := m.card(); c != nil {
		return m.cardKey(c, k)
	}
	switch key {
	case "enter":
		return m.submit()
	case "ctrl+t":
		return m.listThreads(true)
	case "ctrl+e":
		m.openManager()
		return nil
	case "ctrl+n":
		m.startNew("", "")
		return nil
	case "shift+tab":
		return m.nextMode()
	case "pgup":
		m.scrollBy(max(m.tHeight-1, 1))
		return nil
	case "pgdown":
		m.scrollBy(-max(m.tHeight-1, 1))
		return nil
	case "ctrl+end":
		m.scroll = 0
		return nil
	case "up", "down":
		if m.recallPrompt(key == "up") {
			return nil
		}
	}
	m.recall = -1
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// recallPrompt puts an earlier prompt of this thread in the empty box (↑,
// newest first; ↓ goes back): false when the key is the box's own (the box
// holds text of the person's, or there is nothing to recall).
func (m *Model) recallPrompt(older bool) bool {
	var prompts []string
	for i := len(m.entries) - 1; i >= 0; i-- {
		if e := m.entries[i]; e.kind == entryUser && e.text != "" {
			prompts = append(prompts, e.text)
		}
	}
	v := m.input.Value()
	recalled := m.recall >= 0 && m.recall < len(prompts) && v == prompts[m.recall]
	switch {
	case older && (v == "" || recalled) && m.recall+1 < len(prompts):
		m.recall++
		m.input.SetValue(prompts[m.recall])
	case !older && recalled:
		m.recall--
		if m.recall >= 0 {
			m.input.SetValue(prompts[m.recall])
		} else {
			m.input.Reset()
		}
	default:
		return false
	}
	m.dirty = true
	return true
}

func (m *Model) stop() tea.Cmd {
	if !m.turn {
		m.flash = "no turn is running"
		return nil
	}
	m.stopping = true
	// Say which turn: the one answering this message.
	m.flash = "stopping the running turn"
	if e := m.users[m.turnMsg]; e != nil {
		m.flash = "stopping the turn answering “" + ansi.Truncate(strings.Join(strings.Fields(e.text), " "), 40, "…") + "”"
	}
	return m.sendCmd("stop", "", wire.Frame(wire.TypeStop, struct{}{}))
}

func (m *Model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	if text == "" {
		return nil
	}
	m.input.Reset()
	m.recall = -1
	id := chat.NewID("m")
	out := router.Message{MessageID: id, Text: text, Intent: m.intent, Agent: m.agentPick}
	m.intent, m.agentPick = nil, ""
	e := &entry{kind: entryUser, id: id, text: text, from: chat.RouteKey{Channel: "tui", Chat: m.cfg.Chat}, out: &out}
	m.users[id] = e
	m.add(e)
	m.scroll = 0 // back to the newest, where this message shows
	m.dirty = true
	if !m.online || m.connecting {
		return nil // sent when the connect sequence is over
	}
	e.state = "sending"
	return m.sendCmd("message", id, wire.Frame(wire.TypeMessage, out))
}

func (m *Model) nextMode() tea.Cmd {
	av := m.mode.Available
	if len(av) == 0 {
		m.flash = "the agent has not said which modes it has"
		return nil
	}
	from := m.mode.Current
	if m.modeWant != "" {
		from = m.modeWant // pressed again before the agent said: go on from there
	}
	i := slices.IndexFunc(av, func(o chat.ModeOption) bool { return o.ID == from })
	next := av[(i+1)%len(av)]
	m.modeWant = next.ID
	m.flash = "mode → " + next.Name
	return m.sendCmd("mode", next.ID, wire.Frame(wire.TypeSetMode, router.SetMode{ModeID: next.ID}))
}

func (m *Model) sendCmd(kind, ref string, frame json.RawMessage) tea.Cmd {
	be := m.be
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		return sentMsg{kind: kind, ref: ref, err: be.Send(ctx, frame)}
	}
}

// --- transcript ----------------------------------------------------------------

// add puts an entry in the transcript. Messages waiting for their turn stay
// last, after the running answer (the dashboard's rule, ui/src/fold.ts): what
// the running turn shows next goes before them; a message goes at the end.
func (m *Model) add(e *entry) {
	m.dirty = true
	at := len(m.entries)
	if e.kind != entryUser {
		at = m.pendingFrom()
	}
	m.entries = slices.Insert(m.entries, at, e)
}

// pendingFrom is where the trailing run of messages not yet delivering begins,
// while a turn runs (the end of the transcript otherwise).
func (m *Model) pendingFrom() int {
	i := len(m.entries)
	for m.turn && i > 0 {
		e := m.entries[i-1]
		if e.kind != entryUser || (e.state != "" && e.state != "sending" && e.state != chat.DeliveryQueued) {
			break
		}
		i--
	}
	return i
}

// scrollBy scrolls the transcript up by n rows (down when n < 0), within it.
func (m *Model) scrollBy(n int) {
	m.scroll = min(max(m.scroll+n, 0), max(len(m.lines)-m.tHeight, 0))
}

// last is the newest entry of what runs: messages waiting behind it are not.
func (m *Model) last() *entry {
	i := m.pendingFrom()
	if i == 0 {
		return nil
	}
	return m.entries[i-1]
}

// rank orders receipt states so a late, older receipt never moves one back.
func rank(state string) int {
	switch state {
	case "sending":
		return 1
	case chat.DeliveryQueued:
		return 2
	case chat.DeliveryDelivering:
		return 3
	case chat.DeliverySubmitted, chat.DeliveryFailed:
		return 4
	}
	return 0
}

func permissionNote(c *card, p chat.PermissionResolved) string {
	what := "permission"
	if c != nil {
		what = "permission for " + c.perm.Tool.Title
		for _, o := range c.perm.Options {
			if o.ID == p.OptionID {
				what += ": " + o.Label
			}
		}
	} else if p.OptionID != "" {
		what += ": " + p.OptionID
	}
	if p.Cancelled {
		what += ": cancelled"
	}
	return what + by(p.By)
}

func questionNote(p chat.QuestionResolved) string {
	if p.Cancelled {
		return "question cancelled" + by(p.By)
	}
	parts := []string{}
	for q, a := range p.Answers {
		parts = append(parts, q+" → "+a.String())
	}
	slices.Sort(parts)
	if p.Response != "" {
		parts = append(parts, p.Response)
	}
	return "answered: " + strings.Join(parts, "; ") + by(p.By)
}

func by(k *chat.RouteKey) string {
	if k == nil {
		return ""
	}
	return " (by " + k.Channel + ")"
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func shortErr(err error) string {
	if errors.Is(err, ErrOffline) {
		return "not connected"
	}
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// noticeLine is a notice as the conversation shows it: who said it, how,
// and what.
func noticeLine(n chat.Notice) string {
	from := "the agent"
	if n.From == chat.FromCLI {
		from = "a script"
	}
	return fmt.Sprintf("notice from %s (%s): %s", from, n.Level, n.Text)
}
