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
	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/fold"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/tui/markdown"
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

// outgoing is a message typed here that the server has not taken yet: kept
// to send again after a reconnect until a receipt names it.
type outgoing struct {
	msg     router.Message
	sending bool // written to the socket, no receipt yet
}

// rendered is an item of the conversation laid out, kept while nothing it
// shows changes.
type rendered struct {
	lines []string
	width int
	key   string
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
	// conv is the shown thread's conversation, folded from its events by
	// the dashboard's rules (internal/fold): messages and receipts, answers,
	// tools, plans, cards, the turn, the mode, provisional text.
	conv      *fold.Fold
	outbox    map[string]*outgoing // messages typed here the server has not taken yet
	seen      map[string]bool      // cards said (again) in this connect sequence
	turnMsg   string               // the message the running turn answers
	recall    int                  // the earlier prompt ↑ put in the box (0: the newest), -1: none
	chosen    bool                 // the initial thread choice is made
	intent    *router.Intent
	agentPick string // the agent the next message asks for

	cards []*card // the open cards of conv, with what the person has begun of each answer

	picker  *picker
	manager *manager // the thread menu (manage.go), while open

	input       textarea.Model
	lines       []string             // the transcript, laid out at the current width
	shown       map[string]*rendered // each item's layout, by its key
	tHeight     int                  // rows the transcript shows
	scroll      int                  // rows scrolled up from the bottom (0: follow new output)
	expandTools bool
	quitArmed   bool
	flash       string // one-line notice in the help row
	dirty       bool

	md *markdown.Renderer // agent text's renderer, in the color setting of st
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
		opt: opt, be: be, st: newStyles(!opt.NoColor), md: markdown.New(!opt.NoColor),
		width: 80, height: 24,
		conv: fold.New(), outbox: map[string]*outgoing{}, seen: map[string]bool{}, shown: map[string]*rendered{}, recall: -1,
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
		m.seen = map[string]bool{}
		return m, nil
	case OfflineMsg:
		m.online, m.connecting = false, false
		m.attempt = msg.Attempt
		m.offline = "the socket closed"
		if msg.Err != nil {
			m.offline = shortErr(msg.Err)
		}
		m.deletedHere(msg.Err)
		for _, o := range m.outbox {
			o.sending = false // its write may not have got there: resent on reconnect
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
	if !m.fresh(ev) {
		return nil
	}
	m.dirty = true
	if ev.Type == chat.TypeError && m.managerErr(decodeError(ev)) {
		return nil // the manager's edit refused: the manager says so
	}
	if ev.Thread == "" || ev.Thread == m.thread.ID {
		m.conv.Apply(ev)
		m.taken()
	}
	if rule := screenRules[ev.Type]; rule != nil {
		return rule(m, ev)
	}
	return nil
}

// fresh reports an event to show: log events are kept by seq, per thread,
// so none shows twice; provisional text belongs right after the event it
// was drawn after, and nowhere else.
func (m *Model) fresh(ev client.Event) bool {
	if ev.Seq > 0 {
		if ev.Thread != m.thread.ID || ev.Seq <= m.lastSeq {
			return false
		}
		m.lastSeq = ev.Seq
	}
	if ev.Type == chat.TypeAgentDraft {
		var p chat.AgentDraft
		return ev.Decode(&p) == nil && ev.Thread == m.thread.ID && p.AfterSeq == m.lastSeq
	}
	return true
}

// taken forgets the messages typed here that the server has a receipt for.
func (m *Model) taken() {
	receipts := m.conv.View().Receipts
	for id := range m.outbox {
		if _, ok := receipts[id]; ok {
			delete(m.outbox, id)
		}
	}
}

// screenRules are what this screen does of an event beyond the conversation
// (which conv folds): the connection, the thread shown, the cards' keys, the
// status line.
var screenRules = map[string]func(*Model, client.Event) tea.Cmd{
	chat.TypeConfig:             func(m *Model, ev client.Event) tea.Cmd { _ = ev.Decode(&m.cfg); return nil },
	chat.TypeThread:             (*Model).onThread,
	chat.TypeReplayDone:         func(m *Model, _ client.Event) tea.Cmd { return m.onReplayDone() },
	chat.TypePermissionRequest:  (*Model).onCard,
	chat.TypeQuestion:           (*Model).onCard,
	chat.TypePermissionResolved: func(m *Model, _ client.Event) tea.Cmd { m.syncCards(); return nil },
	chat.TypeQuestionResolved:   func(m *Model, _ client.Event) tea.Cmd { m.syncCards(); return nil },
	chat.TypeMode:               func(m *Model, _ client.Event) tea.Cmd { m.modeWant = ""; return nil },
	chat.TypeTurnStatus:         (*Model).onTurn,
	chat.TypePromptDone:         func(m *Model, _ client.Event) tea.Cmd { return m.afterTurn() },
	chat.TypeError:              (*Model).onError,
	chat.TypeThreadInfo:         (*Model).onThreadInfo,
	chat.TypeDone: func(m *Model, ev client.Event) tea.Cmd {
		var p chat.Done
		_ = ev.Decode(&p)
		m.onDone(p)
		return nil
	},
}

func (m *Model) onThread(ev client.Event) tea.Cmd {
	var te chat.ThreadEvent
	_ = ev.Decode(&te)
	if te.Thread.ID == m.thread.ID {
		m.thread = te.Thread
		return nil
	}
	m.switchTo(te.Thread)
	return m.afterTurn()
}

// onCard notes a card said in this connect sequence and shows it.
func (m *Model) onCard(ev client.Event) tea.Cmd {
	var p struct {
		RequestID string `json:"request_id"`
	}
	if ev.Decode(&p) == nil {
		m.seen[p.RequestID] = true
	}
	m.syncCards()
	return nil
}

func (m *Model) onTurn(ev client.Event) tea.Cmd {
	var p chat.TurnStatus
	_ = ev.Decode(&p)
	m.turnMsg = ""
	if p.Active {
		m.turnMsg = p.MessageID
	}
	return nil
}

// afterTurn fetches the thread's usage totals, once connected: the turn's
// usage is in them.
func (m *Model) afterTurn() tea.Cmd {
	if m.connecting {
		return nil
	}
	return m.loadUsage()
}

// onThreadInfo: renamed, (un)archived or moved, here or elsewhere: the header follows.
func (m *Model) onThreadInfo(ev client.Event) tea.Cmd {
	var p chat.ThreadInfo
	_ = ev.Decode(&p)
	if ev.Thread != m.thread.ID {
		return nil
	}
	m.thread.Title, m.thread.Archived = p.Title, p.Archived
	if p.Agent != "" {
		m.thread.Agent = p.Agent
	}
	if p.MovedFrom != "" {
		m.thread.State = chat.ThreadUnloaded
	}
	return nil
}

// mode is the agent's mode, as far as it has said.
func (m *Model) mode() chat.Mode {
	if md := m.conv.View().Mode; md != nil {
		return *md
	}
	return chat.Mode{}
}

// switchTo shows another thread: the transcript starts again from its replay.
// Messages typed and not yet sent stay.
func (m *Model) switchTo(th chat.Thread) {
	m.thread, m.lastSeq, m.totals = th, 0, chat.UsageTotals{}
	keep := m.unsent()
	m.conv.Reset()
	for _, it := range keep {
		m.conv.User(it)
	}
	m.shown, m.cards, m.turnMsg, m.recall = map[string]*rendered{}, nil, "", -1
}

// unsent are the messages typed here the server has not taken, in the order typed.
func (m *Model) unsent() []fold.Item {
	var out []fold.Item
	for _, it := range m.userItems() {
		if m.outbox[it.MessageID] != nil {
			out = append(out, it)
		}
	}
	return out
}

// userItems are the person's messages shown, oldest first (those waiting
// behind the running turn last).
func (m *Model) userItems() []fold.Item {
	v := m.conv.View()
	var out []fold.Item
	for _, it := range slices.Concat(v.Items, v.Queued) {
		if it.Kind == fold.KindUser {
			out = append(out, it)
		}
	}
	return out
}

func (m *Model) onReplayDone() tea.Cmd {
	m.connecting = false
	// Open cards were all said again on connect: one not said is over.
	m.conv.CloseUnseen(m.seen)
	m.syncCards()
	cmds := []tea.Cmd{m.loadUsage()}
	for _, it := range m.unsent() {
		o := m.outbox[it.MessageID]
		o.sending = true
		cmds = append(cmds, m.sendCmd("message", it.MessageID, wire.Frame(wire.TypeMessage, o.msg)))
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
		m.intent.New.Worktree = m.opt.Worktree
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
		m.conv.Note(fold.LevelError, "could not list threads: "+shortErr(msg.err))
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
		m.conv.Note(fold.LevelError, fmt.Sprintf("thread %s not found (parley threads lists them)", m.opt.Thread))
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
		m.conv.Note(fold.LevelInfo, "your first message starts a thread with "+m.opt.Agent)
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
	m.conv.Note(fold.LevelInfo, "your next message starts a new thread"+where)
	m.dirty = true
}

// onError is what this screen does of an error beyond the conversation
// (where conv says it, or fails the message it names, or keeps the card
// open with the reason).
func (m *Model) onError(ev client.Event) tea.Cmd {
	p := decodeError(ev)
	if c := m.cardByID(p.Ref); c != nil && p.Ref != "" {
		c.sent, c.err = false, p.Message // answerable again, saying why
	}
	if p.Code == chat.CodeCardClosed && p.Ref != "" {
		// Answered or cancelled elsewhere first: its resolution may have
		// reached this screen before this refusal, so the card may be gone
		// already.
		m.conv.Note(fold.LevelInfo, "that card was already answered or cancelled elsewhere")
	}
	if m.conv.View().Stopping && strings.Contains(p.Message, chat.ErrNoTurn.Error()) {
		m.conv.Stopping(false)
	}
	m.modeWant = "" // a refused set_mode, maybe: the next press starts from what is
	m.syncCards()
	return nil
}

func decodeError(ev client.Event) chat.Error {
	var p chat.Error
	_ = ev.Decode(&p)
	return p
}

func (m *Model) onSent(s sentMsg) tea.Cmd {
	if s.err == nil {
		return nil
	}
	m.dirty = true
	switch s.kind {
	case "message":
		if o := m.outbox[s.ref]; o != nil {
			o.sending = false // sent again once the socket is back
		}
	case "card":
		if c := m.cardByID(s.ref); c != nil {
			c.sent, c.err = false, "not sent: "+shortErr(s.err)
		}
	case "stop":
		m.conv.Stopping(false)
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
	users := m.userItems()
	for i := len(users) - 1; i >= 0; i-- {
		if t := users[i].Text; t != "" {
			prompts = append(prompts, t)
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
	if !m.conv.View().TurnActive {
		m.flash = "no turn is running"
		return nil
	}
	m.conv.Stopping(true)
	// Say which turn: the one answering this message.
	m.flash = "stopping the running turn"
	if it, ok := m.conv.Item(fold.UserKey(m.turnMsg)); ok && m.turnMsg != "" {
		m.flash = "stopping the turn answering “" + ansi.Truncate(strings.Join(strings.Fields(it.Text), " "), 40, "…") + "”"
	}
	return m.sendCmd("stop", "", wire.Frame(wire.TypeStop, struct{}{}))
}

// handBackCommand, typed alone, is "Continue in a terminal" (the chat
// commands' /handback): it goes to parley, never to the agent.
const handBackCommand = "/handback"

// handBack asks parley to end its agent after the turn; the handed_back
// session event then shows the command that resumes the session.
func (m *Model) handBack() tea.Cmd {
	m.flash = "handing the session back to a terminal"
	return m.sendCmd("hand_back", "", wire.Frame(wire.TypeHandBack, struct{}{}))
}

func (m *Model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	if text == "" {
		return nil
	}
	m.input.Reset()
	m.recall = -1
	if text == handBackCommand {
		return m.handBack()
	}
	id := chat.NewID("m")
	out := router.Message{MessageID: id, Text: text, Intent: m.intent, Agent: m.agentPick}
	m.intent, m.agentPick = nil, ""
	o := &outgoing{msg: out}
	m.outbox[id] = o
	m.conv.User(fold.Item{Kind: fold.KindUser, Key: fold.UserKey(id), MessageID: id, Text: text, From: "tui"})
	m.scroll = 0 // back to the newest, where this message shows
	m.dirty = true
	if !m.online || m.connecting {
		return nil // sent when the connect sequence is over
	}
	o.sending = true
	return m.sendCmd("message", id, wire.Frame(wire.TypeMessage, out))
}

func (m *Model) nextMode() tea.Cmd {
	av := m.mode().Available
	if len(av) == 0 {
		m.flash = "the agent has not said which modes it has"
		return nil
	}
	from := m.mode().Current
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

// scrollBy scrolls the transcript up by n rows (down when n < 0), within it.
func (m *Model) scrollBy(n int) {
	m.scroll = min(max(m.scroll+n, 0), max(len(m.lines)-m.tHeight, 0))
}

// permissionNote says how a card was answered, in the transcript.
func permissionNote(it fold.Item) string {
	what := "permission for " + it.Title
	for _, o := range it.Options {
		if o.ID == it.Chosen {
			what += ": " + o.Label
		}
	}
	if it.State == fold.CardCancelled {
		what += ": cancelled"
	}
	return what + by(it.By)
}

func questionNote(it fold.Item) string {
	if it.State == fold.CardCancelled {
		return "question cancelled" + by(it.By)
	}
	parts := []string{}
	for q, a := range it.Answers {
		parts = append(parts, q+" → "+a.String())
	}
	slices.Sort(parts)
	if it.Response != "" {
		parts = append(parts, it.Response)
	}
	return "answered: " + strings.Join(parts, "; ") + by(it.By)
}

func by(channel string) string {
	if channel == "" {
		return ""
	}
	return " (by " + channel + ")"
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
