//go:build e2e

// Package agents_test drives the real ACP agents parley supports beyond
// Claude Code and Gemini CLI (Qwen Code, Claude through its ACP adapter,
// OpenCode, Copilot CLI) behind a real daemon, through the chat socket, each
// against a scripted model API on loopback, each with its own HOME. Every
// agent goes through the same conversation (conversation below), so what a
// person sees is the same whatever the agent.
package agents_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/daemon"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
)

// wait bounds one step against a real agent on a shared 2-core machine
// (OpenCode takes over 30 s to start there).
const wait = 150 * time.Second

// The scripted conversation: every agent's stand-in answers these texts.
const (
	sayHello  = "hello"
	answer    = "Scripted answer, in several pieces."
	makeFile  = "make the file"
	madeFile  = "made-by-agent"
	toolDone  = "The command ran."
	askMe     = "ask me"
	askAgain  = "ask me again"
	question  = "Which colour?"
	slowly    = "slowly"
	recall    = "what did I say first"
	recalled  = "You said hello."
	ownWords  = "Teal, please"
	shellLine = "touch " + madeFile
)

// agent is one agent under test, set up by its test.
type agent struct {
	cfg  config.Agent
	home string // the agent's own HOME: it finds the agent's processes
	proc string // a word of the agent's command line ("": every process with its HOME)

	// output returns what each call of the named tool gave back to the model.
	output func(tool string) []string
	// userTexts returns the person's texts the model saw in the newest
	// request whose last user text contains text.
	userTexts func(text string) []string
	shell     string // the shell tool's name (what the model calls)
	ask       string // the question tool's name; "" when the agent cannot ask
	// unknown is a request of the agent's own parley must answer "method
	// not found" (the turn going on); "" when it sends none.
	unknown string
	usage   bool   // the agent reports usage: a turn shows a usage event
	cost    bool   // …with its cost
	option  string // a config option the agent reports: shown as a selector
	// slowStart: the agent takes seconds to start; a second message is sent
	// while it does.
	slowStart bool
	// passwordServer: the agent serves an API of its own on loopback, behind
	// the password parley gives it (OpenCode; docs/agents.md).
	passwordServer bool
}

type rig struct {
	t    *testing.T
	d    *daemon.Daemon
	a    agent
	work string
	tap  *tap
}

// tap collects the JSON-RPC lines between parley and the agent.
type tap struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (t *tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part += string(p)
	for {
		i := strings.IndexByte(t.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		t.lines = append(t.lines, t.part[:i])
		t.part = t.part[i+1:]
	}
}

// answeredNotFound reports whether the agent sent a request of method and
// parley answered it "method not found".
func (t *tap) answeredNotFound(method string) (asked, notFound bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := map[string]bool{}
	for _, l := range t.lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		dir, body, _ := strings.Cut(l, " ")
		if json.Unmarshal([]byte(body), &m) != nil {
			continue
		}
		switch {
		case dir == "<" && m.Method == method:
			asked, ids[string(m.ID)] = true, true
		case dir == ">" && ids[string(m.ID)] && m.Error != nil && m.Error.Code == -32601:
			notFound = true
		}
	}
	return asked, notFound
}

// dirs makes the test's HOME and working directory.
func dirs(t *testing.T) (home, work string) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, work = filepath.Join(root, "home"), filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return home, work
}

func start(t *testing.T, a agent, work string) *rig {
	t.Helper()
	cfg := config.Default(filepath.Join(filepath.Dir(work), "data"), work)
	cfg.Addr = "127.0.0.1:0"
	cfg.Agents = []config.Agent{a.cfg}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tp := &tap{}
	d, err := daemon.Start(context.Background(), cfg, daemon.Options{Drivers: map[string]driver.Driver{config.TransportACP: acp.New(nil, acp.WithTap(tp))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return &rig{t: t, d: d, a: a, work: work, tap: tp}
}

func (r *rig) dial(chatID string) *chatsock.Conn {
	s := chatsock.Dial(r.t, "http://"+r.d.Addr(), r.d.Token(), client.Options{Chat: chatID, Since: -1})
	s.WaitFor(0, wait, chatsock.Type(chat.TypeReplayDone), "replay_done")
	return s
}

// startReason is the receipt's reason while the agent starts.
const startReason = "waits for the agent to start"

// queuedFor matches a queued receipt of id with that reason.
func queuedFor(id, reason string) func(client.Event) bool {
	return func(e client.Event) bool {
		return chatsock.Delivery(id, chat.DeliveryQueued)(e) && chatsock.FieldOf(e, "detail") == reason
	}
}

func (r *rig) pids() []int { return testkit.PIDsWithEnv("HOME="+r.a.home, r.a.proc) }

// noOwnListeners fails the test when the agent's processes (and theirs)
// listen on anything beyond what docs/agents.md names: nothing, or for a
// passwordServer agent its API on loopback.
func (r *rig) noOwnListeners(t *testing.T) {
	t.Helper()
	var pids []int
	for _, p := range r.pids() {
		pids = append(pids, testkit.TreePIDs(p)...)
	}
	if len(pids) == 0 {
		t.Fatal("no process of the agent's found to check its listeners")
	}
	for _, l := range testkit.Listeners(t, pids) {
		if !r.a.passwordServer || l.Proto != "tcp" || !l.Addr.Addr().IsLoopback() {
			t.Errorf("the agent listens on %s: not what docs/agents.md says it does", l)
		}
	}
}

// conversation is what every agent goes through, in one thread: a turn
// delivered exactly; a shell command behind a permission card allowed from
// the socket, which really runs; a question answered with a label, then one
// answered in the person's own words; a stop during a slow answer and the
// next turn; then the agent's process killed and the next message resumed in
// a new process with the earlier conversation.
func conversation(t *testing.T, r *rig) {
	s := r.dial("c")
	timed := func(what string, f func()) {
		start := time.Now()
		f()
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}

	end := 0
	timed("start and a plain turn", func() {
		s.Send(chatsock.Msg("m1", sayHello))
		// The start shows at once, and the message waits for it, queued with
		// that reason.
		st := s.WaitFor(0, wait, chatsock.Field(chat.TypeSessionInfo, "state", "starting"), "starting shown")
		if r.a.slowStart {
			s.Send(chatsock.Msg("m0", sayHello))
		}
		s.WaitFor(0, wait, queuedFor("m1", startReason), "the message queued until the agent starts")
		started := s.WaitFor(st, wait, chatsock.Field(chat.TypeSessionInfo, "state", "started"), "started")
		t0, _ := time.Parse(time.RFC3339Nano, s.Get(st).TS)
		t1, _ := time.Parse(time.RFC3339Nano, s.Get(started).TS)
		t.Logf("the agent started in %v", t1.Sub(t0).Round(time.Millisecond))
		at := s.WaitFor(0, wait, chatsock.Delivery("m1", chat.DeliverySubmitted), "submitted")
		end = s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "end_turn")
		if got := chatsock.Chunks(s.Snapshot()[at:end]); got != answer {
			t.Fatalf("streamed text %q, want %q\n%s", got, answer, chatsock.Summary(s.Snapshot()))
		}
		r.noOwnListeners(t)
		if r.a.option != "" {
			s.WaitFor(0, wait, func(e client.Event) bool {
				var m chat.Mode
				if e.Type != chat.TypeMode || e.Decode(&m) != nil {
					return false
				}
				return slices.ContainsFunc(m.ConfigOptions, func(o chat.ConfigOption) bool { return o.ID == r.a.option && len(o.Values) > 0 })
			}, "the agent's config option "+r.a.option+" as a selector")
		}
		if r.a.usage {
			s.WaitFor(at, wait, chatsock.Type(chat.TypeUsage), "a usage event")
			// The turn's last usage event is what a client shows: it has all.
			var last chat.Usage
			for _, ev := range s.Snapshot()[at:end] {
				if ev.Type == chat.TypeUsage {
					last = chat.Usage{}
					if err := ev.Decode(&last); err != nil {
						t.Fatal(err)
					}
				}
			}
			if last.InputTokens == 0 || (r.a.cost && last.CostUSD == 0) {
				t.Errorf("the turn's last usage event %+v: want its tokens (and cost: %v)", last, r.a.cost)
			}
		}
		if r.a.slowStart {
			// Sent while the agent started: queued with the reason if the
			// start was still on, delivered in its turn, never failed.
			q := s.WaitFor(0, wait, chatsock.Delivery("m0", chat.DeliveryQueued), "the second message queued")
			if q < started && !queuedFor("m0", startReason)(s.Get(q)) {
				t.Errorf("a message sent during the start: %s, want the reason %q", s.Get(q).Raw, startReason)
			}
			if q > started {
				t.Logf("the second message came after the start; its reason was not checked")
			}
			end = s.WaitFor(end, wait, chatsock.PromptDone("m0", chat.StopEndTurn), "the message sent during the start answered")
		}
	})

	timed("shell behind a permission card", func() {
		s.Send(chatsock.Msg("m2", makeFile))
		i := s.WaitFor(end, wait, chatsock.Type(chat.TypePermissionRequest), "permission card")
		var card chat.PermissionRequest
		if err := s.Get(i).Decode(&card); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(card.Tool.Input)+card.Tool.Title, shellLine) {
			t.Errorf("the card does not show the command %q: %s", shellLine, s.Get(i).Raw)
		}
		allow := ""
		for _, o := range card.Options {
			if o.Kind == chat.OptionAllowOnce {
				allow = o.ID
			}
		}
		if allow == "" {
			t.Fatalf("no allow-once option on %s", s.Get(i).Raw)
		}
		if _, err := os.Stat(filepath.Join(r.work, madeFile)); err == nil {
			t.Fatal("the command ran before the card was answered")
		}
		s.Send(map[string]any{"type": "permission_response", "request_id": card.RequestID, "option_id": allow})
		end = s.WaitFor(i, wait, chatsock.PromptDone("m2", chat.StopEndTurn), "tool turn done")
		if _, err := os.Stat(filepath.Join(r.work, madeFile)); err != nil {
			t.Fatalf("the command did not run: %v", err)
		}
		if outs := r.a.output(r.a.shell); len(outs) == 0 {
			t.Fatal("the command's result never reached the model")
		}
		if got := chatsock.Chunks(s.Snapshot()[i:end]); !strings.Contains(got, toolDone) {
			t.Errorf("after the tool: text %q, want %q", got, toolDone)
		}
		// An agent's own request in the turn (Qwen Code asks for messages
		// queued mid-turn) is answered "method not found" and the turn goes on.
		if r.a.unknown != "" {
			if asked, nf := r.tap.answeredNotFound(r.a.unknown); !asked || !nf {
				t.Errorf("the agent's own request %s: sent %v, answered method-not-found %v", r.a.unknown, asked, nf)
			}
		}
	})

	if r.a.ask != "" {
		for n, c := range []struct{ id, text, answer string }{{"m3", askMe, "Blue"}, {"m4", askAgain, ownWords}} {
			timed("question answered with "+c.answer, func() {
				s.Send(chatsock.Msg(c.id, c.text))
				i := s.WaitFor(end, wait, chatsock.Type(chat.TypeQuestion), "question card")
				var q chat.Question
				if err := s.Get(i).Decode(&q); err != nil {
					t.Fatal(err)
				}
				if len(q.Questions) != 1 || q.Questions[0].Question != question || len(q.Questions[0].Options) != 2 || q.Questions[0].Options[0].Label != "Blue" {
					t.Fatalf("question card %s: want %q with the options Blue and Red", s.Get(i).Raw, question)
				}
				s.Send(map[string]any{"type": "question_answer", "request_id": q.RequestID, "answers": map[string]any{question: c.answer}})
				end = s.WaitFor(i, wait, chatsock.PromptDone(c.id, chat.StopEndTurn), "question turn done")
				outs := r.a.output(r.a.ask)
				if len(outs) != n+1 || !strings.Contains(outs[n], c.answer) {
					t.Fatalf("what the model got back from the question: %q, want %q in answer %d", outs, c.answer, n+1)
				}
			})
		}
	}

	timed("stop during a slow answer, then the next turn", func() {
		s.Send(chatsock.Msg("m5", slowly))
		j := s.WaitFor(end, wait, chatsock.Type(chat.TypeAgentChunk), "streaming")
		s.Send(map[string]any{"type": "stop"})
		s.WaitFor(j, wait, chatsock.PromptDone("m5", chat.StopCancelled), "cancelled")
		s.Send(chatsock.Msg("m6", sayHello))
		end = s.WaitFor(j, wait, chatsock.PromptDone("m6", chat.StopEndTurn), "the next message works")
	})

	timed("kill, then resume", func() {
		killed := r.pids()
		if len(killed) == 0 {
			t.Fatal("no agent process found")
		}
		for _, pid := range killed {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		// The daemon shows the exit; the next message starts the agent again,
		// resuming its session.
		end = s.WaitFor(end, wait, func(e client.Event) bool {
			return e.Type == chat.TypeSessionInfo && chatsock.FieldOf(e, "state") == "exited"
		}, "the exit shown")
		s.Send(chatsock.Msg("m7", recall))
		s.WaitFor(end, wait, chatsock.PromptDone("m7", chat.StopEndTurn), "the turn after the kill")
		if got := chatsock.Chunks(s.Snapshot()[end:]); !strings.Contains(got, recalled) {
			t.Errorf("after the kill: text %q, want %q", got, recalled)
		}
		texts := r.a.userTexts(recall)
		if len(texts) < 2 || !strings.Contains(texts[0], sayHello) {
			t.Errorf("the resumed session's request: user texts %q, want the first turn (%q) first", texts, sayHello)
		}
		for _, ev := range s.Snapshot() {
			if ev.Type == chat.TypeError && chatsock.FieldOf(ev, "code") == chat.CodeNoHistory {
				t.Fatalf("the resume lost the history: %s", ev.Raw)
			}
		}
	})
}
