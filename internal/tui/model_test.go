package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/fold"
)

// fakeBackend records what the model sends.
type fakeBackend struct {
	mu         sync.Mutex
	sent       []map[string]any
	threads    []chat.Thread
	hits       []chat.SearchHit
	unsearched []client.Unsearched
	searched   []string
	offline    bool
}

func (f *fakeBackend) Search(_ context.Context, q string) ([]chat.SearchHit, []client.Unsearched, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searched = append(f.searched, q)
	return f.hits, f.unsearched, nil
}

func (f *fakeBackend) Send(_ context.Context, v any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.offline {
		return ErrOffline
	}
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeBackend) Usage(context.Context, chat.ThreadID) (chat.UsageTotals, error) {
	return chat.UsageTotals{}, nil
}

func (f *fakeBackend) Threads(context.Context) ([]chat.Thread, error) {
	return append([]chat.Thread(nil), f.threads...), nil
}

func (f *fakeBackend) sentOf(typ string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, m := range f.sent {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// harness drives a Model as the program would: every command run to its end.
type harness struct {
	t    *testing.T
	m    *Model
	be   *fakeBackend
	quit bool
}

func newHarness(t *testing.T, opt Options) *harness {
	be := &fakeBackend{}
	h := &harness{t: t, m: New(opt, be), be: be}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.run(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

// frames feeds server frames (JSON lines).
func (h *harness) frames(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		ev, err := client.Parse([]byte(l))
		if err != nil {
			h.t.Fatalf("frame %s: %v", l, err)
		}
		h.send(EventMsg{Event: ev})
	}
}

func (h *harness) key(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(keyMsg(string(r)))
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "ctrl+end":
		return tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl}
	}
	if c, ok := strings.CutPrefix(k, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// screen is what the terminal shows, without styling or trailing blanks.
func (h *harness) screen() string {
	lines := strings.Split(ansi.Strip(h.m.View().Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func (h *harness) wantScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			h.t.Errorf("screen lacks %q; got:\n%s", sub, s)
		}
	}
}

func (h *harness) wantNotScreen(subs ...string) {
	h.t.Helper()
	s := h.screen()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			h.t.Errorf("screen shows %q; want it gone; got:\n%s", sub, s)
		}
	}
}

// recorded reads testdata/recorded/<name>.jsonl, split at its marks.
func recorded(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "recorded", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	segs := [][]string{{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `"type":"__mark"`) {
			segs = append(segs, []string{})
			continue
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], l)
	}
	return segs
}

func connected(h *harness, segs ...[]string) {
	h.send(OnlineMsg{})
	for _, s := range segs {
		h.frames(s...)
	}
}

func TestRecordedAnswer(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "answer")
	h := newHarness(t, Options{NoColor: true})
	connected(h, segs...)
	h.wantScreen("you  ✓ submitted", "say Here is **bold** text.", "agent\n  Here is bold text.", "│ idle │ online")
}

func TestRecordedPermissionAnsweredByKey(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "permission")
	for _, c := range []struct {
		name   string
		keys   []string
		option string
	}{
		{"number", []string{"1"}, "allow"},
		{"arrows", []string{"down", "enter"}, "reject"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Options{NoColor: true})
			connected(h, segs[0])
			h.wantScreen("Permission: Run Bash", "1. Allow", "2. Reject", "● working")
			h.wantNotScreen("Enter send")
			h.key(c.keys...)
			got := h.be.sentOf("permission_response")
			if len(got) != 1 || got[0]["option_id"] != c.option || !strings.HasPrefix(fmt.Sprint(got[0]["request_id"]), "p_") {
				t.Fatalf("sent %v; want one permission_response with option %q", got, c.option)
			}
			// The card stays until the server says it is over.
			h.wantScreen("Permission: Run Bash", "waiting for the agent")
			if c.option == "allow" {
				h.frames(segs[1]...)
				h.wantNotScreen("Permission: Run Bash")
				h.wantScreen("permission for Run Bash: Allow (by tui)", "permission: allow", "Enter send")
			}
		})
	}
}

func TestRecordedQuestionAnsweredByFreeText(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "question")
	h := newHarness(t, Options{NoColor: true})
	connected(h, segs[0])
	h.wantScreen("Which color?", "1. red", "2. blue", "Or type your own answer")
	h.typeText("green please")
	h.wantScreen("Or type your own answer: green please")
	h.key("enter")
	got := h.be.sentOf("question_answer")
	want := map[string]any{"Which color?": "green please"}
	if len(got) != 1 || fmt.Sprint(got[0]["answers"]) != fmt.Sprint(want) {
		t.Fatalf("sent %v; want one question_answer with answers %v", got, want)
	}
	h.frames(segs[1]...)
	h.wantNotScreen("Or type your own answer")
	h.wantScreen("answered: Which color? → green please", "answer: Which color?=green please")
}

func TestRecordedQuestionByNumber(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "question")
	h := newHarness(t, Options{NoColor: true})
	connected(h, segs[0])
	h.key("2")
	got := h.be.sentOf("question_answer")
	if len(got) != 1 || fmt.Sprint(got[0]["answers"]) != fmt.Sprint(map[string]any{"Which color?": "blue"}) {
		t.Fatalf("sent %v; want answers blue", got)
	}
}

// permissionIn is the thread and request id of the permission card in frames.
func permissionIn(frames []string) (thread, rid string) {
	for _, l := range frames {
		ev, _ := client.Parse([]byte(l))
		if ev.Type == chat.TypePermissionRequest {
			var p chat.PermissionRequest
			_ = ev.Decode(&p)
			thread, rid = string(ev.Thread), p.RequestID
		}
	}
	return thread, rid
}

func TestCardResolvedElsewhereDisappears(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "permission")
	h := newHarness(t, Options{NoColor: true})
	connected(h, segs[0])
	h.wantScreen("Permission: Run Bash")
	thread, rid := permissionIn(segs[0])
	h.frames(fmt.Sprintf(`{"type":"permission_resolved","thread":%q,"seq":9,"request_id":%q,"option_id":"reject","by":{"channel":"web","chat":"c1"}}`, thread, rid))
	h.wantNotScreen("Permission: Run Bash")
	h.wantScreen("permission for Run Bash: Reject (by web)", "Enter send")
	if got := h.be.sentOf("permission_response"); len(got) != 0 {
		t.Errorf("sent %v; want nothing sent from here", got)
	}
}

// answeredHere shows a recorded permission card and answers it from this
// screen: the answer is sent, and the server's word on it is the caller's.
func answeredHere(t *testing.T) (h *harness, thread, rid string) {
	t.Helper()
	segs := recorded(t, "permission")
	h = newHarness(t, Options{NoColor: true})
	connected(h, segs[0])
	h.wantScreen("Permission: Run Bash")
	thread, rid = permissionIn(segs[0])
	h.key("1")
	if got := h.be.sentOf("permission_response"); len(got) != 1 {
		t.Fatalf("sent %v; want this screen's answer", got)
	}
	return h, thread, rid
}

// Answered here and elsewhere at once, the other answer won: its resolution
// may reach the screen before this answer's refusal (card_closed), and the
// screen then says the card was answered elsewhere, not an error.
func TestCardAnsweredHereAndElsewhereAtOnce(t *testing.T) {
	t.Parallel()
	h, thread, rid := answeredHere(t)
	h.frames(fmt.Sprintf(`{"type":"permission_resolved","thread":%q,"seq":9,"request_id":%q,"option_id":"reject","by":{"channel":"web","chat":"c1"}}`, thread, rid),
		fmt.Sprintf(`{"type":"error","code":"card_closed","message":"card is no longer open","ref":%q}`, rid))
	h.wantScreen("permission for Run Bash: Reject (by web)", "that card was already answered or cancelled elsewhere")
	h.wantNotScreen("card is no longer open")
}

// An answer refused because the agent is not running (agent_error, not
// card_closed) leaves the card open with the reason on it: the card was not
// answered elsewhere, and a message starts the agent again.
func TestCardAnswerRefusedWhileTheAgentIsNotRunningKeepsTheCard(t *testing.T) {
	t.Parallel()
	h, _, rid := answeredHere(t)
	h.frames(fmt.Sprintf(`{"type":"error","code":"agent_error","message":"the agent is not running; the card stays open","ref":%q}`, rid))
	h.wantScreen("Permission: Run Bash", "the agent is not running; the card stays open")
	h.wantNotScreen("elsewhere")
}

func TestMultiSelectQuestion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, []string{
		`{"type":"config","chat":"c","channel":"tui","agents":[],"default_agent":"echo"}`,
		`{"type":"thread","thread":{"id":"t_1","agent":"echo","cwd":"/w","session_id":"s1","state":"working"}}`,
		`{"type":"replay_done","last_seq":0}`,
		`{"type":"question","thread":"t_1","seq":1,"request_id":"q_1","questions":[` +
			`{"question":"Which files?","header":"Files","multi_select":true,"options":[{"label":"a.go"},{"label":"b.go"},{"label":"c.go"}]},` +
			`{"question":"Commit?","multi_select":false,"options":[{"label":"yes"},{"label":"no"}]}]}`,
	})
	h.wantScreen("Files 1/2", "[ ] a.go")
	h.key("space", "down", "down", "3", "3", "2") // tick a, untick-tick c… then 2 ticks b
	h.wantScreen("[x] a.go", "[x] b.go", "[ ] c.go")
	h.key("enter")
	h.wantScreen("Commit?", "1. yes")
	h.key("1")
	got := h.be.sentOf("question_answer")
	want := map[string]any{"Which files?": []any{"a.go", "b.go"}, "Commit?": "yes"}
	if len(got) != 1 || fmt.Sprint(got[0]["answers"]) != fmt.Sprint(want) {
		t.Fatalf("sent %v; want answers %v", got, want)
	}
}

func TestReconnectNeverShowsAnEventTwice(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "reconnect")
	h := newHarness(t, Options{NoColor: true})
	connected(h, segs[0])
	before := len(h.m.conv.View().Items)
	h.send(OfflineMsg{Err: fmt.Errorf("connection reset")})
	h.wantScreen("OFFLINE")
	connected(h, segs[1]) // replays seq 7..10 again, which this model holds
	h.wantScreen("│ online")
	if got := len(h.m.conv.View().Items); got != before {
		t.Errorf("items after the overlapping replay: got %d, want %d", got, before)
	}
	if got := strings.Count(h.screen(), "one"); got != 2 { // "say one" and the answer "one"
		t.Errorf(`"one" on the screen %d times, want 2 (the message and the answer):\n%s`, got, h.screen())
	}
}

// thread1 is a connect sequence on a route attached to thread t_1.
var thread1 = []string{
	`{"type":"config","chat":"c","channel":"tui","agents":[{"id":"echo"}],"default_agent":"echo"}`,
	`{"type":"thread","thread":{"id":"t_1","agent":"echo","cwd":"/w","session_id":"s1","state":"idle"}}`,
	`{"type":"turn_status","active":false}`,
	`{"type":"replay_done","last_seq":0}`,
}

func TestTypedMessageEchoAndReceipts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.typeText("hello there")
	h.key("enter")
	got := h.be.sentOf("message")
	if len(got) != 1 || got[0]["text"] != "hello there" {
		t.Fatalf("sent %v; want one message", got)
	}
	id := got[0]["message_id"].(string)
	h.wantScreen("you  sending…")
	h.frames(
		fmt.Sprintf(`{"type":"user_message","thread":"t_1","seq":1,"message_id":%q,"text":"hello there","from":{"channel":"tui","chat":"c"}}`, id),
		fmt.Sprintf(`{"type":"delivery","thread":"t_1","seq":2,"message_id":%q,"state":"queued"}`, id),
		fmt.Sprintf(`{"type":"delivery","thread":"t_1","seq":3,"message_id":%q,"state":"submitted"}`, id),
		// A resend's answer (no seq), overtaken by the log's: it does not move the receipt back.
		fmt.Sprintf(`{"type":"delivery","message_id":%q,"state":"queued"}`, id),
	)
	h.wantScreen("you  ✓ submitted")
	if n := strings.Count(h.screen(), "hello there"); n != 1 {
		t.Errorf("the message is shown %d times, want once:\n%s", n, h.screen())
	}
	h.frames(`{"type":"error","code":"busy","message":"thread is busy","ref":"m_other"}`)
	h.wantScreen("! thread is busy")
	// An error about a message already submitted (the turn was cut off) does
	// not make its receipt a lie.
	h.frames(fmt.Sprintf(`{"type":"error","thread":"t_1","seq":5,"code":"restarted","message":"this turn was cut off","ref":%q}`, id))
	h.wantScreen("you  ✓ submitted", "! this turn was cut off")
}

func TestQueuedSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(
		`{"type":"user_message","thread":"t_1","seq":1,"message_id":"m_q","text":"next","from":{"channel":"web","chat":"d"}}`,
		`{"type":"delivery","thread":"t_1","seq":2,"message_id":"m_q","state":"queued","detail":"waits until the open permission request is answered and the turn ends"}`,
	)
	h.wantScreen("you (web)  queued\nnext\n… waits until the open permission request is answered")
	h.frames(`{"type":"delivery","thread":"t_1","seq":3,"message_id":"m_q","state":"submitted"}`)
	if strings.Contains(h.screen(), "waits until") {
		t.Errorf("the wait is still shown once the message was submitted:\n%s", h.screen())
	}
}

func TestFailedDeliverySaysWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(
		`{"type":"user_message","thread":"t_1","seq":1,"message_id":"m_x","text":"hi","from":{"channel":"web","chat":"d"}}`,
		`{"type":"delivery","thread":"t_1","seq":2,"message_id":"m_x","state":"failed","detail":"the agent is not running"}`,
	)
	h.wantScreen("you (web)  ✗ failed\nhi\n✗ the agent is not running")
	// Refused outright: the error names the message.
	h.typeText("too many")
	h.key("enter")
	id := h.be.sentOf("message")[0]["message_id"].(string)
	h.frames(fmt.Sprintf(`{"type":"error","code":"busy","message":"thread is busy: too many messages waiting","ref":%q}`, id))
	h.wantScreen("you  ✗ failed\ntoo many\n✗ thread is busy: too many messages waiting")
}

func TestOfflineMessageIsKeptAndSentOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.be.offline = true
	h.send(OfflineMsg{Err: fmt.Errorf("connection refused"), Attempt: 2})
	h.wantScreen("OFFLINE, reconnecting (try 2)", "offline: connection refused")
	h.typeText("typed while offline")
	h.key("enter")
	h.wantScreen("typed while offline", "waiting for connection")
	if got := h.be.sentOf("message"); len(got) != 0 {
		t.Fatalf("sent %v while offline", got)
	}
	h.be.offline = false
	connected(h, thread1[:3]) // not yet replay_done: still catching up
	if got := h.be.sentOf("message"); len(got) != 0 {
		t.Fatalf("sent %v before replay_done", got)
	}
	h.frames(thread1[3])
	got := h.be.sentOf("message")
	if len(got) != 1 || got[0]["text"] != "typed while offline" {
		t.Fatalf("sent %v after reconnecting; want the message once", got)
	}
	// Dropped again before any receipt: sent again with the same id (the server
	// keeps ids, so it is delivered once).
	h.send(OfflineMsg{})
	connected(h, thread1)
	again := h.be.sentOf("message")
	if len(again) != 2 || again[1]["message_id"] != got[0]["message_id"] {
		t.Fatalf("resent %v; want the same message id %v", again, got[0]["message_id"])
	}
	h.frames(fmt.Sprintf(`{"type":"user_message","thread":"t_1","seq":1,"message_id":%q,"text":"typed while offline","from":{"channel":"tui","chat":"c"}}`, got[0]["message_id"]))
	h.send(OfflineMsg{})
	connected(h, thread1)
	if n := len(h.be.sentOf("message")); n != 2 {
		t.Errorf("sent %d times after the server had it; want no more than 2", n)
	}
}

func TestEscStopsOnlyARunningTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.key("esc")
	if got := h.be.sentOf("stop"); len(got) != 0 {
		t.Fatalf("sent %v with no turn running", got)
	}
	h.wantScreen("no turn is running")
	h.frames(`{"type":"turn_status","thread":"t_1","seq":1,"active":true,"message_id":"m1"}`)
	h.wantScreen("● working")
	h.key("esc")
	if got := h.be.sentOf("stop"); len(got) != 1 {
		t.Fatalf("sent %v; want one stop", got)
	}
	h.wantScreen("stopping…")
	h.frames(`{"type":"prompt_done","thread":"t_1","seq":2,"stop_reason":"cancelled","message_id":"m1"}`,
		`{"type":"turn_status","thread":"t_1","seq":3,"active":false}`)
	h.wantScreen("· Stopped.", "│ idle │")
}

// A stop asked from another screen (the dashboard, another parley chat) shows
// here too, from the logged stopping status, until the agent ends the turn.
func TestAStopFromAnotherScreenShowsStopping(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(`{"type":"turn_status","thread":"t_1","seq":1,"active":true,"message_id":"m1"}`)
	h.wantScreen("● working")
	h.frames(`{"type":"turn_status","thread":"t_1","seq":2,"active":true,"message_id":"m1","stopping":true}`)
	h.wantScreen("stopping…")
	if got := h.be.sentOf("stop"); len(got) != 0 {
		t.Fatalf("sent %v; the stop was another screen's", got)
	}
	h.frames(`{"type":"prompt_done","thread":"t_1","seq":3,"stop_reason":"cancelled","message_id":"m1"}`,
		`{"type":"turn_status","thread":"t_1","seq":4,"active":false}`)
	h.wantScreen("· Stopped.", "│ idle │")
}

func TestCtrlCTwiceQuits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	h.key("ctrl+c")
	if h.quit {
		t.Fatal("quit on the first Ctrl-C")
	}
	h.wantScreen("press Ctrl-C again to quit")
	h.key("x", "ctrl+c")
	if h.quit {
		t.Fatal("quit on a Ctrl-C that was not the second in a row")
	}
	h.key("ctrl+c")
	if !h.quit {
		t.Fatal("did not quit on the second Ctrl-C")
	}
}

func TestModeKeyCyclesModes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.key("shift+tab")
	if got := h.be.sentOf("set_mode"); len(got) != 0 {
		t.Fatalf("sent %v before any mode was known", got)
	}
	h.frames(`{"type":"mode","thread":"t_1","seq":1,"current":"default","available":[{"id":"default","name":"Default"},{"id":"plan","name":"Plan"}]}`)
	h.wantScreen("mode default")
	h.key("shift+tab")
	got := h.be.sentOf("set_mode")
	if len(got) != 1 || got[0]["mode_id"] != "plan" {
		t.Fatalf("sent %v; want set_mode plan", got)
	}
	// Pressed again before the agent answered: on from the mode asked for.
	h.key("shift+tab")
	if got := h.be.sentOf("set_mode"); len(got) != 2 || got[1]["mode_id"] != "default" {
		t.Fatalf("sent %v; want set_mode default second", got)
	}
}

func TestToolCallsAreOneLineAndExpand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(
		`{"type":"tool_call","thread":"t_1","seq":1,"tool_call_id":"tc1","title":"Run ls -la","kind":"execute","status":"in_progress","input":{"command":"ls -la"}}`,
		`{"type":"tool_call_update","thread":"t_1","seq":2,"tool_call_id":"tc1","status":"completed","output":"total 0\nfile-a\nfile-b"}`,
	)
	h.wantScreen("⚙ Run ls -la · completed")
	h.wantNotScreen("file-a")
	h.key("ctrl+o")
	h.wantScreen(`input: {"command":"ls -la"}`, "file-a", "file-b")
}

func TestThreadPickerSwitches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	now := time.Now()
	h.be.threads = []chat.Thread{
		{ID: "t_1", Agent: "echo", Cwd: "/w", SessionID: "s1", State: "idle", UpdatedAt: now},
		{ID: "t_2", Agent: "echo", Cwd: "/w2", SessionID: "s2", Title: "older one", State: "unloaded", UpdatedAt: now.Add(-time.Hour)},
	}
	connected(h, thread1)
	h.key("ctrl+t")
	h.wantScreen("Switch thread", "0. + new thread here", "1. echo · /w · idle (this one)", "2. echo · older one · unloaded")
	h.key("2")
	got := h.be.sentOf("open_thread")
	if len(got) != 1 || got[0]["thread_id"] != "t_2" {
		t.Fatalf("sent %v; want open_thread of t_2", got)
	}
	// The server switches the route: the transcript starts again.
	h.frames(`{"type":"user_message","thread":"t_1","seq":1,"message_id":"m_a","text":"from thread one","from":{"channel":"tui","chat":"c"}}`)
	h.frames(`{"type":"thread","thread":{"id":"t_2","agent":"echo","cwd":"/w2","session_id":"s2","title":"older one","state":"unloaded"}}`,
		`{"type":"user_message","thread":"t_2","seq":1,"message_id":"m_b","text":"from thread two","from":{"channel":"tui","chat":"c"}}`,
		`{"type":"replay_done","last_seq":1}`)
	h.wantScreen("from thread two", "older one")
	h.wantNotScreen("from thread one")
	// A new thread: the next message carries the intent.
	h.key("ctrl+n")
	h.typeText("fresh")
	h.key("enter")
	msgs := h.be.sentOf("message")
	if len(msgs) != 1 || fmt.Sprint(msgs[0]["intent"]) != "map[new:map[agent:echo cwd:/w2]]" {
		t.Fatalf("sent %v; want a message with a new-thread intent", msgs)
	}
}

// In the thread picker, / searches titles and messages: the list becomes the
// threads found (a thread once, with where it matched), and a number opens one.
func TestThreadPickerSearches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	h.be.threads = []chat.Thread{{ID: "t_1", Agent: "echo", Cwd: "/w", State: "idle", UpdatedAt: time.Now()}}
	h.be.hits = []chat.SearchHit{
		{Thread: "t_9", Seq: 12, Kind: "agent", Snippet: "the heron waits by the weir", Title: "Birds"},
		{Thread: "t_9", Seq: 3, Kind: "user", Snippet: "heron?", Title: "Birds"},
		{Thread: "t_8", Seq: 0, Kind: "title", Snippet: "Heron survey", Title: "Heron survey", Archived: true},
	}
	connected(h, thread1)
	h.key("ctrl+t")
	h.wantScreen("/ search")
	h.key("/")
	h.typeText("heron")
	h.wantScreen("Search: heron")
	h.key("enter")
	if h.be.searched == nil || h.be.searched[0] != "heron" {
		t.Fatalf("searched %v; want heron", h.be.searched)
	}
	h.wantScreen("2 threads found for \"heron\"", "1. Birds · agent: the heron waits by the weir", "2. Heron survey · title: Heron survey (archived)")
	h.key("2")
	got := h.be.sentOf("open_thread")
	if len(got) != 1 || got[0]["thread_id"] != "t_8" {
		t.Fatalf("sent %v; want open_thread of t_8", got)
	}
	// A rename elsewhere reaches the header.
	h.frames(`{"type":"thread","thread":{"id":"t_8","agent":"echo","cwd":"/w","title":"Heron survey","state":"unloaded","archived":true}}`,
		`{"type":"replay_done","last_seq":0}`,
		`{"type":"thread_info","thread":"t_8","seq":1,"title":"Kingfisher notes","archived":true}`)
	h.wantScreen("Kingfisher notes")
}

// A search at a cluster's hub that could not ask every machine says which
// were not searched and why, next to what it found.
func TestThreadPickerSaysWhichMachinesWereNotSearched(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	h.be.hits = []chat.SearchHit{{Thread: "t_9", Seq: 3, Kind: "user", Snippet: "heron?", Title: "Birds"}}
	h.be.unsearched = []client.Unsearched{{Node: "laptop", Reason: "offline"}, {Node: "vm", Reason: "no answer within 5s"}}
	connected(h, thread1)
	h.key("ctrl+t")
	h.key("/")
	h.typeText("heron")
	h.key("enter")
	h.wantScreen("1. Birds · user: heron?", `1 threads found for "heron"`, "not searched: laptop (offline), vm (no answer within 5s)")
}

// A machine's reason is its words, not the terminal's: its control
// sequences (a title change, a screen clear) are not written to the screen.
func TestThreadPickerPrintsAnUnsearchedReasonWithoutItsControlSequences(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	h.be.unsearched = []client.Unsearched{{Node: "laptop", Reason: "dow\x1b]0;owned\x07n\x1b[2J\r"}}
	connected(h, thread1)
	h.key("ctrl+t")
	h.key("/")
	h.typeText("heron")
	h.key("enter")
	h.wantScreen("not searched: laptop (down)")
	if v := h.m.View().Content; strings.Contains(v, "\x1b]0;") || strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\x07") || strings.Contains(v, "\r") {
		t.Errorf("the view carries the machine's control sequences: %q", v)
	}
}

func TestInitialChoice(t *testing.T) {
	t.Parallel()
	noThread := []string{
		`{"type":"config","chat":"c","channel":"tui","agents":[{"id":"echo"},{"id":"gem"}],"default_agent":"echo"}`,
		`{"type":"turn_status","active":false}`,
		`{"type":"replay_done","last_seq":0}`,
	}
	now := time.Now()
	threads := []chat.Thread{
		{ID: "t_old", Agent: "echo", Cwd: "/w", SessionID: "s_old", UpdatedAt: now.Add(-time.Hour)},
		{ID: "t_new", Agent: "echo", Cwd: "/w", SessionID: "s_new", UpdatedAt: now},
		{ID: "t_gem", Agent: "gem", Cwd: "/g", SessionID: "s_gem", UpdatedAt: now.Add(-2 * time.Hour)},
	}
	cases := []struct {
		name   string
		opt    Options
		frames []string
		thread string // opened; "" for none
	}{
		{"default agent's newest thread", Options{}, noThread, "t_new"},
		{"--agent", Options{Agent: "gem"}, noThread, "t_gem"},
		{"--thread", Options{Thread: "t_old"}, noThread, "t_old"},
		{"the route's own thread", Options{}, thread1, ""},
		{"--new", Options{New: true, Cwd: "/w/sub"}, thread1, ""},
		{"--new --worktree", Options{New: true, Cwd: "/w/sub", Worktree: true}, thread1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opt.NoColor = true
			h := newHarness(t, c.opt)
			h.be.threads = threads
			connected(h, c.frames)
			got := h.be.sentOf("open_thread")
			if c.thread == "" {
				if len(got) != 0 {
					t.Fatalf("sent %v; want no thread opened", got)
				}
			} else if len(got) != 1 || got[0]["thread_id"] != c.thread {
				t.Fatalf("sent %v; want open_thread of %s", got, c.thread)
			}
			if c.opt.New {
				h.wantScreen("new thread")
				h.typeText("x")
				h.key("enter")
				m := h.be.sentOf("message")
				want := "map[new:map[agent:echo cwd:/w/sub]]"
				if c.opt.Worktree {
					want = "map[new:map[agent:echo cwd:/w/sub worktree:true]]"
				}
				if len(m) != 1 || fmt.Sprint(m[0]["intent"]) != want {
					t.Fatalf("sent %v; want the new intent", m)
				}
			}
		})
	}
}

func TestLayoutFitsAndResizes(t *testing.T) {
	t.Parallel()
	perm := recorded(t, "permission")
	for _, size := range [][2]int{{80, 24}, {120, 40}, {40, 12}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			h := newHarness(t, Options{NoColor: true})
			connected(h, perm[0]) // a card on top of a transcript
			check := func(what string) {
				t.Helper()
				h.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				lines := strings.Split(h.screen(), "\n")
				if len(lines) != size[1] {
					t.Errorf("%s: %d lines, want %d:\n%s", what, len(lines), size[1], h.screen())
				}
				for i, l := range lines {
					if w := ansi.StringWidth(l); w > size[0] {
						t.Errorf("%s: line %d is %d wide, want ≤ %d: %q", what, i, w, size[0], l)
					}
				}
			}
			check("with the card")
			h.frames(perm[1]...)
			check("after the card")
			h.send(tea.WindowSizeMsg{Width: 200, Height: 60})
			check("resized back")
		})
	}
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.frames(`{"type":"agent_chunk","thread":"t_1","seq":1,"text":"# Title\n\nSome **bold** and `+"`code`"+`.\n\n- one\n"}`,
		`{"type":"agent_chunk","thread":"t_1","seq":2,"text":"- two\n"}`)
	h.wantScreen("Title", "Some bold and", "• one", "• two")
	h.wantNotScreen("**bold**", "- two")
}

var colorSGR = regexp.MustCompile(`\x1b\[[0-9;]*?(?:^|;|\[)(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9;]*)?m`)

func TestNoColor(t *testing.T) {
	t.Parallel()
	segs := recorded(t, "answer")
	for _, noColor := range []bool{true, false} {
		h := newHarness(t, Options{NoColor: noColor})
		connected(h, segs...)
		h.key("esc") // a flash line too
		raw := h.m.View().Content
		if got := colorSGR.MatchString(raw); got == noColor {
			t.Errorf("NoColor %v: color codes present = %v; want %v\n%q", noColor, got, !noColor, raw)
		}
	}
}

func TestScrollback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	for i := 1; i <= 40; i++ {
		h.frames(fmt.Sprintf(`{"type":"user_message","thread":"t_1","seq":%d,"message_id":"m%d","text":"message number %d","from":{"channel":"web","chat":"d"}}`, i, i, i))
	}
	h.wantScreen("message number 40")
	h.wantNotScreen("message number 1\n")
	h.key("pgup", "pgup")
	h.wantNotScreen("message number 40")
	h.wantScreen("scrolled up")
	above := func() string { // the screen above the help row, which counts the scroll
		s := h.screen()
		return s[:strings.LastIndex(s, "\n")]
	}
	before := above()
	h.frames(`{"type":"agent_chunk","thread":"t_1","seq":41,"text":"new output"}`)
	if got := above(); got != before {
		t.Errorf("the view moved while scrolled up: got\n%s\nwant\n%s", got, before)
	}
	for range 20 {
		h.key("pgup")
	}
	h.wantScreen("message number 1\n")
	h.key("pgdown")
	h.wantNotScreen("message number 1\n")
	h.key("ctrl+end")
	h.wantScreen("new output")
	h.wantNotScreen("scrolled up")
}

// sharedFrames reads a session recorded for the dashboard's fold
// (ui/testdata/frames): both folds are tested on the same frames.
func sharedFrames(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ui", "testdata", "frames", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// The TUI folds a real session as the dashboard does (ui/src/fold.ts): an
// AskUserQuestion is its question card, not a tool too; a mode change is said
// in the conversation; a plan is one entry per turn, updated within it.
func TestFoldAgreesWithDashboard(t *testing.T) {
	t.Parallel()
	kinds := func(h *harness, kind string) []fold.Item {
		var out []fold.Item
		for _, it := range h.m.conv.View().Items {
			if it.Kind == kind {
				out = append(out, it)
			}
		}
		return out
	}
	t.Run("claude stream", func(t *testing.T) {
		h := newHarness(t, Options{NoColor: true})
		connected(h, sharedFrames(t, "claude-stream.jsonl"))
		var tools []string
		for _, it := range kinds(h, fold.KindTool) {
			tools = append(tools, it.Title)
		}
		if len(tools) != 4 || slices.Contains(tools, "AskUserQuestion") {
			t.Errorf("got tools %q, want Write, Read, Edit and Bash: the question is its card", tools)
		}
		var modes []string
		for _, it := range kinds(h, fold.KindNotice) {
			if strings.HasPrefix(it.Text, "Mode changed") {
				modes = append(modes, it.Text)
			}
		}
		if !slices.Equal(modes, []string{"Mode changed to Accept edits."}) {
			t.Errorf("got mode notes %q, want the one change Allow always made", modes)
		}
	})
	t.Run("claude acp", func(t *testing.T) {
		h := newHarness(t, Options{NoColor: true})
		connected(h, sharedFrames(t, "claude-acp.jsonl"))
		var order []string
		for _, it := range h.m.conv.View().Items {
			if it.Kind == fold.KindPlan || it.Kind == fold.KindUser {
				order = append(order, it.Kind)
			}
		}
		if want := []string{"user", "plan", "user", "plan", "user"}; !slices.Equal(order, want) {
			t.Fatalf("got %q, want a plan after each of the two planning turns", order)
		}
		plans := kinds(h, fold.KindPlan)
		if got := plans[0].Entries[0]; got.Status != "in_progress" {
			t.Errorf("got the first turn's plan %+v, want its second update (in progress)", plans[0].Entries)
		}
		if got := plans[1].Entries[1]; got.Status != "in_progress" || got.Content != "Change the greeting now" {
			t.Errorf("got the second turn's plan %+v", plans[1].Entries)
		}
	})
}

// A message sent while an answer streams waits after it: the answer is not
// cut in two around it (the dashboard's rule too; recorded from the real
// Claude Code: m_next sent during m_slow's answer).
func TestQueuedMessageStaysAfterTheAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, sharedFrames(t, "claude-stream.jsonl"))
	var order []string
	v := h.m.conv.View()
	for _, it := range slices.Concat(v.Items, v.Queued) {
		switch it.Kind {
		case fold.KindUser:
			order = append(order, "user "+it.MessageID)
		case fold.KindAgent:
			order = append(order, "agent "+it.Text)
		}
	}
	want := []string{"user m_slow", "agent one two three four five six seven eight", "user m_next", "agent Noted."}
	if len(order) < 4 || !slices.Equal(order[len(order)-4:], want) {
		t.Errorf("got the end of the transcript %q, want %q", order, want)
	}
}

// A terminal agent's provisional text (agent_draft) is shown apart from the
// answer, dim and italic, each draft replacing the last; the final words
// replace it, and a draft that a later event overtook is never shown.
func TestProvisionalTextIsApartAndReplaced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	connected(h, thread1)
	h.frames(`{"type":"turn_status","thread":"t_1","seq":1,"active":true,"message_id":"m1"}`,
		`{"type":"agent_draft","thread":"t_1","text":"The first","after_seq":1}`)
	h.wantScreen("agent · drawing (provisional)", "The first")
	if !strings.Contains(h.m.View().Content, "\x1b[3;90mThe first") {
		t.Errorf("the provisional text is not italic and dim:\n%q", h.m.View().Content)
	}
	h.frames(`{"type":"agent_draft","thread":"t_1","text":"The first line, drawn further","after_seq":1}`)
	h.wantScreen("The first line, drawn further")
	h.frames(`{"type":"agent_chunk","thread":"t_1","seq":2,"text":"The first line, written whole."}`)
	h.wantScreen("The first line, written whole.")
	h.wantNotScreen("provisional", "drawn further")
	// Overtaken: it was drawn after seq 1, and seq 2 is shown.
	h.frames(`{"type":"agent_draft","thread":"t_1","text":"stale words","after_seq":1}`)
	h.wantNotScreen("stale words")
	h.frames(`{"type":"agent_draft","thread":"t_1","text":"Second block","after_seq":2}`,
		`{"type":"prompt_done","thread":"t_1","seq":3,"stop_reason":"end_turn","message_id":"m1"}`)
	h.wantNotScreen("Second block", "provisional")
}

// A draft that only grew comes as what it adds (parley chat asks for appends):
// it is added to the draft it names; one that names a draft not shown (one
// was missed) shows nothing rather than a guess, until the next whole draft.
func TestProvisionalTextTakesAppends(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	connected(h, thread1)
	h.frames(`{"type":"turn_status","thread":"t_1","seq":1,"active":true,"message_id":"m1"}`,
		`{"type":"agent_draft","thread":"t_1","text":"The first","after_seq":1,"id":1}`,
		`{"type":"agent_draft","thread":"t_1","text":" line, drawn further","after_seq":1,"id":2,"extends":1}`)
	h.wantScreen("agent · drawing (provisional)", "The first line, drawn further")
	h.frames(`{"type":"agent_draft","thread":"t_1","text":" and more","after_seq":1,"id":4,"extends":3}`)
	h.wantNotScreen("provisional", "The first line", "and more")
	h.frames(`{"type":"agent_draft","thread":"t_1","text":" again","after_seq":1,"id":5,"extends":4}`)
	h.wantNotScreen("provisional", "again")
	h.frames(`{"type":"agent_draft","thread":"t_1","text":"Whole again","after_seq":1,"id":6}`,
		`{"type":"agent_draft","thread":"t_1","text":", growing","after_seq":1,"id":7,"extends":6}`)
	h.wantScreen("Whole again, growing")
}

// At a cluster's hub, a thread on a machine that lists no agent (revoked, or
// never joined) says so and how to join it again, and does not blame its
// agent nor offer a move.
func TestAThreadOnAMachineNotJoinedSaysHowToJoinIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 24})
	h.frames(`{"type":"config","chat":"c1","channel":"tui","node":"hub","agents":[{"id":"claude","name":"Claude Code","transport":"stream","status":"ready","node":"hub"}]}`,
		`{"type":"thread","thread":{"id":"t_1@b","agent":"claude","cwd":"/w","state":"idle","node":"b","last_seq":0}}`,
		`{"type":"replay_done","last_seq":0}`)
	h.wantScreen("machine b is not joined to this hub", "parley join-token --name b", "parley join <token>` on b")
	h.wantNotScreen("is not configured")
}

// /handback typed alone asks parley to hand the session back (never reaching
// the agent), and the handed_back event shows the command that resumes it.
func TestHandBackShowsTheCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{NoColor: true})
	connected(h, thread1)
	h.typeText("/handback")
	h.key("enter")
	if got := h.be.sentOf("hand_back"); len(got) != 1 {
		t.Fatalf("sent %v; want one hand_back", got)
	}
	if got := h.be.sentOf("message"); len(got) != 0 {
		t.Fatalf("sent %v; /handback is parley's, not the agent's", got)
	}
	h.frames(`{"type":"session","thread":"t_1","seq":1,"state":"exited"}`,
		`{"type":"session","thread":"t_1","seq":2,"state":"handed_back","session_id":"5f2c","command":"cd /w && claude --resume 5f2c"}`)
	h.wantScreen("cd /w && claude --resume 5f2c")
}
