// Package scripted is an in-process agent for the core's tests and benchmarks: the
// prompt's text is its script. It implements driver.Driver, and only tests can
// build a router with it: no configuration names it.
//
// Script lines (anything else is echoed back as "echo: <text>"):
//
//	say <text>                 one agent_chunk
//	draft <text>               provisional text (agent_draft), as a terminal agent's pane shows it
//	pause <duration>           nothing for that long (e.g. 1s)
//	stream <n> <interval> [size]  n chunks "c1 ", "c2 ", … at an interval (e.g. 10ms),
//	                           padded with dots to about size bytes when given
//	permission <tool> [<cmd>]  a permission card; the answer is said back. With cmd,
//	                           the card carries it as title and input, as Claude Code's Bash does
//	permission-plain <tool>    the same, but a rejection with words is refused
//	                           (driver.ErrNoWords), as an ACP agent's is
//	question <q>|<a>,<b>       a question card with options a, b; the answer
//	                           "unanswerable" is refused, and the question still waits
//	crash                      the process "dies" mid-turn
//	hang                       never ends the turn, ignoring stop
//	end <reason>               ends the turn with that stop reason (default end_turn)
//	flaky                      the first delivery of each message id fails; a retry succeeds
//	unverified                 the delivery ends unproven either way (driver.ErrUnverified)
//	waiting <reason>           (first line) Prompt says the text waits a second, then delivers it
//	forge                      the agent reports a delivery state itself (a lane must not show it)
//	model <id>                 the agent reports its model in force (a mode event's model option)
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Driver starts scripted sessions and remembers what every session received.
type Driver struct {
	// LogFile, when set, gets one line per prompt received ("<thread> <message id>"),
	// so a test can count deliveries across daemon restarts.
	LogFile string
	// StartDelay is how long Start takes: an agent slow to start.
	StartDelay time.Duration
	// ModeDelay is how long SetMode takes for a mode: an agent that answers
	// at once and applies the mode a moment later (Claude Code).
	ModeDelay map[string]time.Duration

	mu       sync.Mutex
	failed   map[string]bool // message ids whose "flaky" delivery already failed once
	starts   int
	checked  []driver.Sent // what CheckDelivery was asked, in order
	resumes  []string
	models   []string // each start's Spec.Model
	prompts  []Received
	sessions []*Session
}

// Received is one prompt a session got.
type Received struct {
	Thread    chat.ThreadID
	MessageID string
	Text      string
	// Images are the MIME types of the prompt's images, then its files'.
	Images []string
}

var (
	_ driver.Driver          = (*Driver)(nil)
	_ driver.DeliveryChecker = (*Driver)(nil)
)

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, spec driver.Spec, sink driver.Sink) (driver.Session, error) {
	if d.StartDelay > 0 {
		t := time.NewTimer(d.StartDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	d.starts++
	d.models = append(d.models, spec.Model)
	if spec.ResumeID != "" {
		d.resumes = append(d.resumes, spec.ResumeID)
	}
	d.mu.Unlock()
	s := &Session{d: d, spec: spec, sink: sink, answers: map[string]chan string{}}
	id := spec.ResumeID
	if id == "" {
		id = chat.NewID("s")
	}
	sink.SessionID(id)
	d.mu.Lock()
	d.sessions = append(d.sessions, s)
	d.mu.Unlock()
	return s, nil
}

// CheckDelivery implements driver.DeliveryChecker from LogFile, the scripted
// agent's own record, which outlives a daemon: a prompt is there once the
// agent took it, and never otherwise. Without a LogFile it cannot say.
func (d *Driver) CheckDelivery(_ context.Context, spec driver.Spec, m driver.Sent) (driver.Verdict, string) {
	d.mu.Lock()
	d.checked = append(d.checked, m)
	d.mu.Unlock()
	if d.LogFile == "" {
		return driver.VerdictUnknown, "the scripted agent keeps no log"
	}
	b, err := os.ReadFile(d.LogFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return driver.VerdictUnknown, err.Error()
	}
	want := fmt.Sprintf("%s %s", spec.ThreadID, m.MessageID)
	for _, line := range strings.Split(string(b), "\n") {
		if line == want {
			return driver.Delivered, "the scripted agent's log holds it"
		}
	}
	return driver.NotDelivered, "the scripted agent's log does not hold it"
}

// Checked lists the messages CheckDelivery was asked about, in order.
func (d *Driver) Checked() []driver.Sent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.checked)
}

// Starts counts sessions started (new or resumed).
func (d *Driver) Starts() int { d.mu.Lock(); defer d.mu.Unlock(); return d.starts }

// Models is the model each start was asked for ("": none), in order.
func (d *Driver) Models() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.models...)
}

// Resumes lists the session ids resumed.
func (d *Driver) Resumes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.resumes...)
}

// Prompts lists every prompt received, in order.
func (d *Driver) Prompts() []Received {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Received(nil), d.prompts...)
}

// Closed counts sessions closed.
func (d *Driver) Closed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, s := range d.sessions {
		s.mu.Lock()
		if s.closed {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// Session is one scripted agent process.
type Session struct {
	d    *Driver
	spec driver.Spec
	sink driver.Sink

	mu      sync.Mutex
	cancel  context.CancelFunc // the running turn's
	answers map[string]chan string
	plain   map[string]bool // permission-plain cards: no words with a rejection
	closed  bool
	mode    string
}

func (s *Session) Prompt(ctx context.Context, p driver.Prompt) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return driver.ErrNotRunning
	}
	s.mu.Unlock()
	if strings.TrimSpace(p.Text) == "flaky" {
		s.d.mu.Lock()
		first := !s.d.failed[p.MessageID]
		if s.d.failed == nil {
			s.d.failed = map[string]bool{}
		}
		s.d.failed[p.MessageID] = true
		s.d.mu.Unlock()
		if first {
			return errors.New("the scripted agent refused this delivery once")
		}
	}
	if strings.TrimSpace(p.Text) == "unverified" {
		return fmt.Errorf("%w: the scripted agent stopped drawing after Enter", driver.ErrUnverified)
	}
	s.mu.Lock()
	tctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.mu.Unlock()
	if reason, ok := strings.CutPrefix(p.Text, "waiting "); ok {
		reason, _, _ = strings.Cut(reason, "\n")
		s.sink.Waiting(p.MessageID, reason)
		// The wait lasts a second (as the tmux driver waits for a turn to
		// end): the lane shows it while it lasts.
		t := time.NewTimer(time.Second)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if strings.TrimSpace(p.Text) == "forge" {
		s.sink.Event(chat.Delivery{MessageID: p.MessageID, State: chat.DeliveryFailed, Detail: "forged"})
	}
	s.d.mu.Lock()
	var images []string
	for _, im := range append(append([]driver.Image(nil), p.Images...), p.FileImages...) {
		images = append(images, im.MIMEType)
	}
	s.d.prompts = append(s.d.prompts, Received{Thread: s.spec.ThreadID, MessageID: p.MessageID, Text: p.Text, Images: images})
	s.d.mu.Unlock()
	if s.d.LogFile != "" {
		f, err := os.OpenFile(s.d.LogFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s\n", s.spec.ThreadID, p.MessageID)
			f.Sync()
			f.Close()
		}
	}
	s.sink.Received()
	go s.run(tctx, p.Text)
	return nil
}

func (s *Session) run(ctx context.Context, text string) {
	reason := chat.StopEndTurn
	lines := strings.Split(text, "\n")
	scripted := false
	for _, line := range lines {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "say":
			scripted = true
			s.sink.Event(chat.AgentChunk{Text: arg})
		case "model":
			scripted = true
			s.mu.Lock()
			mode := s.mode
			s.mu.Unlock()
			s.sink.Event(chat.Mode{Current: mode, ConfigOptions: []chat.ConfigOption{{ID: chat.ModelOption, Name: "Model", Current: arg}}})
		case "draft":
			scripted = true
			s.sink.Event(chat.AgentDraft{Text: arg})
		case "pause":
			scripted = true
			d, _ := time.ParseDuration(arg)
			select {
			case <-ctx.Done():
				s.sink.TurnEnded(chat.StopCancelled)
				return
			case <-time.After(d):
			}
		case "stream":
			scripted = true
			f := strings.Fields(arg)
			n, _ := strconv.Atoi(first(f, 0))
			iv, _ := time.ParseDuration(first(f, 1))
			size, _ := strconv.Atoi(first(f, 2))
			pad := strings.Repeat(".", max(size-8, 0))
			for i := 1; i <= n; i++ {
				if i > 1 && iv > 0 {
					select {
					case <-ctx.Done():
						s.sink.TurnEnded(chat.StopCancelled)
						return
					case <-time.After(iv):
					}
				}
				if ctx.Err() != nil {
					s.sink.TurnEnded(chat.StopCancelled)
					return
				}
				s.sink.Event(chat.AgentChunk{Text: "c" + strconv.Itoa(i) + pad + " "})
			}
		case "permission", "permission-plain":
			scripted = true
			id := chat.NewID("p")
			ch := s.wait(id)
			if cmd == "permission-plain" {
				s.mu.Lock()
				if s.plain == nil {
					s.plain = map[string]bool{}
				}
				s.plain[id] = true
				s.mu.Unlock()
			}
			tool := chat.PermissionTool{Name: arg, Title: "Run " + arg}
			if name, command, ok := strings.Cut(arg, " "); ok {
				in, _ := json.Marshal(map[string]string{"command": command})
				tool = chat.PermissionTool{Name: name, Title: command, Input: in}
			}
			s.sink.Event(chat.PermissionRequest{RequestID: id, Tool: tool,
				Options: []chat.PermissionOption{
					{ID: "allow", Label: "Allow", Kind: chat.OptionAllowOnce},
					{ID: "reject", Label: "Reject", Kind: chat.OptionRejectOnce},
				}})
			select {
			case a := <-ch:
				s.sink.Event(chat.AgentChunk{Text: "permission: " + a})
			case <-ctx.Done():
				s.sink.CardWithdrawn(id)
				s.sink.TurnEnded(chat.StopCancelled)
				return
			}
		case "question":
			scripted = true
			q, opts, _ := strings.Cut(arg, "|")
			id := chat.NewID("q")
			ch := s.wait(id)
			var os []chat.QuestionOption
			for _, o := range strings.Split(opts, ",") {
				os = append(os, chat.QuestionOption{Label: o})
			}
			s.sink.Event(chat.Question{RequestID: id, Questions: []chat.QuestionItem{{Question: q, Options: os}}})
			select {
			case a := <-ch:
				s.sink.Event(chat.AgentChunk{Text: "answer: " + a})
			case <-ctx.Done():
				s.sink.CardWithdrawn(id)
				s.sink.TurnEnded(chat.StopCancelled)
				return
			}
		case "crash":
			s.mu.Lock()
			s.closed = true
			s.mu.Unlock()
			s.sink.Event(chat.Error{Code: chat.CodeAgent, Message: "scripted crash"})
			s.sink.TurnEnded(chat.StopError)
			s.sink.Exited(errors.New("scripted crash"))
			return
		case "hang":
			return
		case "end":
			scripted = true
			if arg != "" {
				reason = arg
			}
		}
	}
	if !scripted {
		s.sink.Event(chat.AgentChunk{Text: "echo: " + text})
	}
	if ctx.Err() != nil {
		reason = chat.StopCancelled
	}
	s.sink.TurnEnded(reason)
}

func first(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

func (s *Session) wait(id string) chan string {
	ch := make(chan string, 1)
	s.mu.Lock()
	s.answers[id] = ch
	s.mu.Unlock()
	return ch
}

func (s *Session) answer(id, a string) error {
	s.mu.Lock()
	ch := s.answers[id]
	delete(s.answers, id)
	s.mu.Unlock()
	if ch == nil {
		return driver.ErrUnknownCard
	}
	ch <- a
	return nil
}

func (s *Session) Cancel(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
	}
	return nil
}

func (s *Session) AnswerPermission(_ context.Context, id string, a driver.PermissionAnswer) error {
	s.mu.Lock()
	plain := s.plain[id]
	s.mu.Unlock()
	if plain && a.OptionID == "reject" && a.Message != "" {
		return fmt.Errorf("scripted: %w", driver.ErrNoWords)
	}
	v := a.OptionID
	if a.Cancelled {
		v = "cancelled"
	}
	if a.Message != "" {
		v += " (" + a.Message + ")"
	}
	return s.answer(id, v)
}

func (s *Session) AnswerQuestion(_ context.Context, id string, a driver.QuestionAnswer) error {
	if a.Cancelled {
		return s.answer(id, "dismissed")
	}
	parts := []string{}
	for q, v := range a.Answers {
		var shown any = v.Text
		if v.Labels != nil {
			shown = v.Labels
		}
		if v.Text == "unanswerable" {
			// An answer this agent cannot take: refused, and the agent still
			// waits (as a driver whose translation fails).
			return fmt.Errorf("the scripted agent cannot take %q: %w", v.Text, chat.ErrBadInput)
		}
		parts = append(parts, fmt.Sprintf("%s=%v", q, shown))
	}
	return s.answer(id, strings.Join(parts, ";"))
}

func (s *Session) SetMode(ctx context.Context, id string) error {
	if d := s.d.ModeDelay[id]; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.mode = id
	s.mu.Unlock()
	s.sink.Event(chat.Mode{Current: id, Available: []chat.ModeOption{{ID: "default", Name: "Default"}, {ID: "plan", Name: "Plan"}}})
	return nil
}

func (s *Session) SetConfigOption(context.Context, string, string) error {
	return driver.ErrUnsupported
}

func (s *Session) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	return nil
}
