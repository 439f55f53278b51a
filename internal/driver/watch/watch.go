// Package watch is the driver of a thread that watches an agent session
// running in a person's plain terminal (not tmux): parley cannot type into
// that terminal, so the thread follows the session's transcript, read-only,
// until the process exits; then the thread can continue the session itself.
// Only Claude Code's sessions can be watched (their transcript is the one
// the tmux driver already follows, package transcript).
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

// OptPID is the Spec.Options key with the watched process's pid (set by
// parley when a person chooses to watch, never by a config).
const OptPID = "pid"

// OptFrom is the Spec.Options key with the byte of the transcript to follow
// from: where the thread's last whole record read ended (ReadTo), when it
// was watched before parley restarted. Without it the transcript is
// followed from its end.
const OptFrom = "from"

// ReadTo is what Start's sink hears after the updates of each read: the
// byte after the last whole record read. A thread keeps it as OptFrom.
type ReadTo = transcript.ReadTo

// ErrReadOnly is every send's and answer's refusal: the reason a person sees.
var ErrReadOnly = errors.New("this session runs in a terminal parley cannot type into: it is only watched here; " +
	"answer there, or end it there and continue it here")

// Driver watches sessions. The zero value is ready.
type Driver struct {
	// Every bounds how soon the process's exit is seen (default 1s): a
	// plain terminal's process says nothing when it goes.
	Every time.Duration
}

var _ driver.Driver = (*Driver)(nil)

// Start follows spec.ResumeID's transcript from Options[OptFrom], or from
// its end (the earlier turns were imported when the thread took the
// session), and the process in Options[OptPID] until it exits.
func (d *Driver) Start(ctx context.Context, spec driver.Spec, sink driver.Sink) (driver.Session, error) {
	pid, err := strconv.Atoi(spec.Options[OptPID])
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("watch: no process to watch (pid %q)", spec.Options[OptPID])
	}
	if !claudecode.Alive(pid, "") {
		return nil, fmt.Errorf("watch: process %d: %w: it exited; continue the session here", pid, driver.ErrNotRunning)
	}
	path, err := Transcript(spec)
	if err != nil {
		return nil, err
	}
	from, err := startAt(path, spec.Options[OptFrom])
	if err != nil {
		return nil, err
	}
	logger := spec.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir, err := claudecode.ConfigDir(spec.Env)
	if err != nil {
		return nil, err
	}
	s := &session{pid: pid, stop: make(chan struct{}), done: make(chan struct{}),
		record: filepath.Join(dir, "sessions", strconv.Itoa(pid)+".json"), from: chat.RouteKey{Channel: chat.ElsewhereTerminal, Chat: strconv.Itoa(pid)}}
	emit := func(p chat.Payload) {
		if p, ok := shown(p, s.from); ok {
			sink.Event(p)
		}
	}
	if s.f, err = transcript.FollowPositions(path, from, emit, logger.With("watch", pid)); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	every := d.Every
	if every <= 0 {
		every = time.Second
	}
	go s.watch(every, sink)
	return s, nil
}

// Gap is what spec.ResumeID's transcript holds after Options[OptFrom], as
// Start would show it, ending with the ReadTo of its end: what a session
// watched or adopted before parley stopped wrote meanwhile. Without
// OptFrom, nothing: where the thread stopped is not known.
func Gap(spec driver.Spec) ([]chat.Payload, error) {
	if spec.Options[OptFrom] == "" {
		return nil, nil
	}
	path, err := Transcript(spec)
	if err != nil {
		return nil, err
	}
	from, err := startAt(path, spec.Options[OptFrom])
	if err != nil {
		return nil, err
	}
	var out []chat.Payload
	terminal := chat.RouteKey{Channel: chat.ElsewhereTerminal, Chat: spec.Options[OptPID]}
	// A follower reads what is there before it returns: closed at once.
	f, err := transcript.FollowPositions(path, from, func(p chat.Payload) {
		if p, ok := shown(p, terminal); ok {
			out = append(out, p)
		}
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	_ = f.Close()
	return out, nil
}

// startAt is the byte of path to follow from: from (OptFrom), or the end.
// A transcript shorter than from was rewritten: where the thread stopped is
// lost, and it is followed from its end rather than shown twice.
func startAt(path, from string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("watch: %w", err)
	}
	if from == "" {
		return fi.Size(), nil
	}
	at, err := strconv.ParseInt(from, 10, 64)
	if err != nil || at < 0 {
		return 0, fmt.Errorf("watch: %q is not a place in a transcript", from)
	}
	return min(at, fi.Size()), nil
}

// shown is a transcript update as the thread shows it: the person's prompts
// from the terminal they typed them in, no turn ends (no turn of parley's
// runs here).
func shown(p chat.Payload, terminal chat.RouteKey) (chat.Payload, bool) {
	switch p := p.(type) {
	case transcript.TurnEnd:
		return nil, false
	case chat.UserMessage:
		p.From = terminal
		return p, true
	}
	return p, true
}

// Transcript is the file of Claude Code session spec.ResumeID run in
// spec.Cwd, under the config folder spec.Env gives it.
func Transcript(spec driver.Spec) (string, error) {
	if !claudecode.ValidSessionID(spec.ResumeID) {
		return "", fmt.Errorf("watch: %q is not a Claude Code session id", spec.ResumeID)
	}
	dir, err := claudecode.ConfigDir(spec.Env)
	if err != nil {
		return "", err
	}
	cwds := []string{spec.Cwd}
	if real, err := filepath.EvalSymlinks(spec.Cwd); err == nil && real != spec.Cwd {
		cwds = append(cwds, real) // Claude Code may name the folder after either
	}
	for _, cwd := range cwds {
		p := filepath.Join(transcript.ProjectDir(dir, cwd), spec.ResumeID+".jsonl")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("watch: Claude Code has no transcript of session %s in %s: %w", spec.ResumeID, spec.Cwd, driver.ErrHistoryLost)
}

type session struct {
	pid    int
	record string        // the process's own record of its state (sessions/<pid>.json)
	from   chat.RouteKey // the route the terminal's prompts come from
	card   string        // the open card of a permission prompt shown in the terminal, or ""
	// unseen counts the looks at a prompt whose tool call the transcript
	// does not hold yet (Claude Code writes it in batches): the card waits
	// for it a few looks, then opens without it.
	unseen    int
	f         *transcript.Follower
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// watch says Exited once the process is gone, after reading what it wrote last.
func (s *session) watch(every time.Duration, sink driver.Sink) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if !claudecode.Alive(s.pid, "") {
			s.f.Sync()
			sink.Exited(nil)
			return
		}
		s.prompting(sink)
	}
}

// prompting shows a permission prompt the terminal shows now as a card
// answered there only, and closes it once the prompt is gone. Claude Code's
// TUI says it waits for one in its record of the running session
// (status "waiting", waitingFor "permission prompt"); the transcript says
// which tool call it is about: the oldest without a result.
func (s *session) prompting(sink driver.Sink) {
	var rec struct {
		Status          string `json:"status"`
		WaitingFor      string `json:"waitingFor"`
		StatusUpdatedAt int64  `json:"statusUpdatedAt"`
	}
	b, err := os.ReadFile(s.record)
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return // no record now (it exits, or is being rewritten): the next tick looks again
	}
	asking := rec.Status == "waiting" && rec.WaitingFor == "permission prompt"
	id := "terminal-" + strconv.FormatInt(rec.StatusUpdatedAt, 10)
	if s.card != "" && s.card != id {
		sink.CardWithdrawn(s.card) // answered in the terminal (or another prompt took its place)
		s.card = ""
	}
	if !asking || s.card != "" {
		s.unseen = 0
		return
	}
	s.f.Sync() // the tool call it asks about may be newer than the last read
	req := chat.PermissionRequest{RequestID: id, Elsewhere: chat.ElsewhereTerminal,
		Tool: chat.PermissionTool{Title: "a permission the agent asks in the terminal"}}
	if tc, name, ok := s.f.Unanswered(); ok {
		req.Tool = chat.PermissionTool{Name: name, Title: tc.Title, Input: tc.Input, ToolCallID: tc.ToolCallID}
	} else if s.unseen++; s.unseen < unseenLooks {
		return
	}
	s.card, s.unseen = id, 0
	sink.Event(req)
}

// unseenLooks is how many looks a prompt's card waits for its tool call to
// reach the transcript.
const unseenLooks = 5

func (s *session) Prompt(context.Context, driver.Prompt) error { return ErrReadOnly }
func (s *session) Cancel(context.Context) error                { return ErrReadOnly }
func (s *session) AnswerPermission(context.Context, string, driver.PermissionAnswer) error {
	return ErrReadOnly
}
func (s *session) AnswerQuestion(context.Context, string, driver.QuestionAnswer) error {
	return ErrReadOnly
}
func (s *session) SetMode(context.Context, string) error { return ErrReadOnly }
func (s *session) SetConfigOption(context.Context, string, string) error {
	return ErrReadOnly
}

// Close stops watching; the process goes on.
func (s *session) Close(context.Context) error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		_ = s.f.Close()
	})
	return nil
}
