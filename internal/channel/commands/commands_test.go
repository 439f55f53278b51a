package commands

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		ok      bool
		name    string
		arg     string
		wantErr error
	}{
		{in: "hello", ok: false},
		{in: "  not /a command", ok: false},
		{in: "//escaped slash", ok: false},
		{in: "/new", ok: true, name: New},
		{in: "/new /srv/app", ok: true, name: New, arg: "/srv/app"},
		{in: "  /new   /srv/my app  ", ok: true, name: New, arg: "/srv/my app"},
		{in: "/agent", ok: true, name: Agent},
		{in: "/agent gemini", ok: true, name: Agent, arg: "gemini"},
		{in: "/threads", ok: true, name: Threads},
		{in: "/threads 2", ok: true, name: Threads, arg: "2", wantErr: ErrUsage},
		{in: "/switch 2", ok: true, name: Switch, arg: "2"},
		{in: "/switch t_abc", ok: true, name: Switch, arg: "t_abc"},
		{in: "/switch", ok: true, name: Switch, wantErr: ErrUsage},
		{in: "/resume 5f2c", ok: true, name: Resume, arg: "5f2c"},
		{in: "/resume", ok: true, name: Resume, wantErr: ErrUsage},
		{in: "/stop", ok: true, name: Stop},
		{in: "/handback", ok: true, name: HandBack},
		{in: "/handback now", ok: true, name: HandBack, arg: "now", wantErr: ErrUsage},
		{in: "/STOP", ok: true, name: Stop},
		{in: "/stop@parley_bot", ok: true, name: Stop},
		{in: "/mode", ok: true, name: Mode},
		{in: "/mode plan", ok: true, name: Mode, arg: "plan"},
		{in: "/status", ok: true, name: Status},
		{in: "/help", ok: true, name: Help},
		{in: "/agent-cmd compact", ok: true, name: AgentCmd, arg: "compact"},
		{in: "/agent-cmd /compact now", ok: true, name: AgentCmd, arg: "/compact now"},
		{in: "/agent-cmd", ok: true, name: AgentCmd, wantErr: ErrUsage},
		{in: "/compact", ok: true, name: "compact", wantErr: ErrUnknown},
		{in: "/", ok: true, name: "", wantErr: ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, ok, err := Parse(tt.in)
			if ok != tt.ok {
				t.Fatalf("ok: got %v, want %v", ok, tt.ok)
			}
			if c.Name != tt.name || c.Arg != tt.arg {
				t.Errorf("command: got %q %q, want %q %q", c.Name, c.Arg, tt.name, tt.arg)
			}
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("err: got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestUnknownSaysSo(t *testing.T) {
	t.Parallel()
	_, _, err := Parse("/frobnicate now")
	if err == nil || !strings.Contains(err.Error(), "unknown command /frobnicate") {
		t.Errorf("got %v, want \"unknown command /frobnicate …\"", err)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	h := HelpText()
	for _, n := range order {
		if !strings.Contains(h, "/"+n) {
			t.Errorf("help: %q is missing from\n%s", n, h)
		}
	}
}

type fakeRouter struct {
	Router
	thread chat.ThreadID
	sent   []router.SendRequest
}

func (f *fakeRouter) ThreadOf(context.Context, chat.RouteKey) (chat.ThreadID, error) {
	return f.thread, nil
}

func (f *fakeRouter) Send(_ context.Context, req router.SendRequest) (chat.Delivery, chat.ThreadID, error) {
	f.sent = append(f.sent, req)
	return chat.Delivery{}, "t", nil
}

func (f *fakeRouter) DefaultAgent() string { return "claude" }

type fakeStore struct {
	Store
	th chat.Thread
}

func (f fakeStore) Thread(context.Context, chat.ThreadID) (chat.Thread, error) { return f.th, nil }

func TestAgentCmdGoesToTheChatsAgent(t *testing.T) {
	t.Parallel()
	route := chat.RouteKey{Channel: "irc", Chat: "#a"}
	ctx := context.Background()
	// A chat without a thread yet: its first thread is the plugin's agent's.
	fr := &fakeRouter{}
	r := Runner{Router: fr, Store: fakeStore{}, Agent: "gemini"}
	if got := r.Run(ctx, route, Command{Name: AgentCmd, Arg: "compact"}); got != "Sent /compact to the agent." {
		t.Errorf("reply: got %q", got)
	}
	if len(fr.sent) != 1 || fr.sent[0].Message.Text != "/compact" || fr.sent[0].Message.Agent != "gemini" || fr.sent[0].From != route {
		t.Errorf("sent: got %+v, want /compact for gemini from %v", fr.sent, route)
	}
	// A chat on a thread: the thread's own agent (never a new thread).
	fr = &fakeRouter{thread: "t1"}
	r = Runner{Router: fr, Store: fakeStore{th: chat.Thread{ID: "t1", Agent: "claude"}}, Agent: "gemini"}
	r.Run(ctx, route, Command{Name: AgentCmd, Arg: "/review a.go"})
	if len(fr.sent) != 1 || fr.sent[0].Message.Text != "/review a.go" || fr.sent[0].Message.Agent != "claude" {
		t.Errorf("sent: got %+v, want /review a.go for the thread's claude", fr.sent)
	}
}

type machinesRouter struct {
	fakeRouter
	started []string // agent, cwd of each NewThread
}

func (m *machinesRouter) Agents() []chat.AgentInfo {
	return []chat.AgentInfo{{ID: "claude", Name: "Claude Code", Status: "ready", Node: "hub"},
		{ID: "claude", Name: "Claude Code", Status: "offline", Node: "b"}}
}

func (m *machinesRouter) NewThread(_ context.Context, _ chat.RouteKey, agent, cwd string) (chat.ThreadID, error) {
	m.started = append(m.started, agent+" "+cwd)
	if strings.Contains(agent, "@b") {
		return "", nil // another machine's: the next message starts it
	}
	return "t2", nil
}

// At a cluster's hub /agent lists every machine's agents as id@machine, the
// current thread's marked on its machine; /agent claude@b says the next
// message starts the thread there; /new on b's thread starts the next one on
// b, in the same folder.
func TestAgentListsEveryMachinesAgentsAndStartsOnOne(t *testing.T) {
	t.Parallel()
	route := chat.RouteKey{Channel: "telegram", Chat: "42"}
	ctx := context.Background()
	mr := &machinesRouter{fakeRouter: fakeRouter{thread: "t1@b"}}
	r := Runner{Router: mr, Store: fakeStore{th: chat.Thread{ID: "t1@b", Agent: "claude", Cwd: "/b/work", Node: "b"}}}
	if got, want := r.Run(ctx, route, Command{Name: Agent}), "Agents:\n  claude@hub (Claude Code, ready)\n* claude@b (Claude Code, offline)"; got != want {
		t.Errorf("/agent: got %q, want %q", got, want)
	}
	if got := r.Run(ctx, route, Command{Name: Agent, Arg: "claude@b"}); got != "The next message starts a new thread with claude on machine b" {
		t.Errorf("/agent claude@b: got %q", got)
	}
	if got := r.Run(ctx, route, Command{Name: New}); got != "The next message starts a new thread with claude on machine b" {
		t.Errorf("/new on b's thread: got %q", got)
	}
	if got := r.Run(ctx, route, Command{Name: Agent, Arg: "claude@hub"}); got != "New thread t2 with claude@hub" {
		t.Errorf("/agent claude@hub: got %q", got)
	}
	if want := []string{"claude@b ", "claude@b /b/work", "claude@hub "}; strings.Join(mr.started, "|") != strings.Join(want, "|") {
		t.Errorf("threads asked for: %q, want %q", mr.started, want)
	}
}

// handBackRouter hands the thread back as the router does: the thread's
// state handed_back and a session event with the command.
type handBackRouter struct {
	fakeRouter
	st       *handBackStore
	turnRuns bool
	controls []router.Control
}

func (h *handBackRouter) Control(_ context.Context, c router.Control) error {
	h.controls = append(h.controls, c)
	if !h.turnRuns {
		h.st.th.State = chat.ThreadHandedBack
		ev, _ := chat.NewEvent(h.st.th.ID, chat.SessionInfo{State: "handed_back", SessionID: "s1", Command: "cd /w && claude --resume s1"}, time.Now())
		h.st.evs = append(h.st.evs, ev)
	}
	return nil
}

type handBackStore struct {
	Store
	th  chat.Thread
	evs []chat.Event
}

func (s *handBackStore) Thread(context.Context, chat.ThreadID) (chat.Thread, error) { return s.th, nil }
func (s *handBackStore) Tail(context.Context, chat.ThreadID, int) ([]chat.Event, error) {
	return s.evs, nil
}

// /handback asks the router to hand the thread back and answers with the
// command a person types in a terminal; with a turn in flight it says the
// hand back waits for it.
func TestHandBackAnswersWithTheCommand(t *testing.T) {
	t.Parallel()
	route := chat.RouteKey{Channel: "telegram", Chat: "42"}
	ctx := context.Background()
	st := &handBackStore{th: chat.Thread{ID: "t1", Agent: "claude", Cwd: "/w", State: chat.ThreadIdle}}
	hr := &handBackRouter{fakeRouter: fakeRouter{thread: "t1"}, st: st, turnRuns: true}
	r := Runner{Router: hr, Store: st}
	c, ok, err := Parse("/handback")
	if !ok || err != nil || c.Name != HandBack {
		t.Fatalf("parse /handback: %+v %v %v", c, ok, err)
	}
	if got := r.Run(ctx, route, c); !strings.Contains(got, "once the turn in flight ends") {
		t.Errorf("with a turn running: got %q", got)
	}
	hr.turnRuns = false
	if got, want := r.Run(ctx, route, c), "Handed back. To continue in a terminal:\ncd /w && claude --resume s1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(hr.controls) != 2 || !hr.controls[0].HandBack || hr.controls[0].From != route {
		t.Errorf("controls: got %+v, want two hand backs from %v", hr.controls, route)
	}
	// A chat with no thread has nothing to hand back.
	r = Runner{Router: &fakeRouter{}, Store: &handBackStore{}}
	if got := r.Run(ctx, route, c); !strings.HasPrefix(got, "No thread yet") {
		t.Errorf("no thread: got %q", got)
	}
}
