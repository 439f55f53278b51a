//go:build e2e

package agents_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/chatsock"
	"github.com/parleyhq/parley/internal/testkit/openaiapi"
)

// outsideSink is the driver.Sink of a Codex session the test runs itself,
// as an editor would, outside parley.
type outsideSink struct {
	mu    sync.Mutex
	id    string
	ended chan struct{}
}

func (s *outsideSink) Event(chat.Payload)     {}
func (s *outsideSink) Received()              {}
func (s *outsideSink) CardWithdrawn(string)   {}
func (s *outsideSink) Waiting(string, string) {}
func (s *outsideSink) Exited(error)           {}
func (s *outsideSink) TurnEnded(string)       { s.ended <- struct{}{} }
func (s *outsideSink) SessionID(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id = id
}

// A Codex session another process runs now is refused by the socket's
// resume_session with the reason (two processes on one rollout fork it);
// once that process is gone, the same resume_session continues it in parley:
// its turns imported, and the model's next request holds them.
func TestCodexResumeSessionThroughTheSocket(t *testing.T) {
	srv := openaiapi.Start(t,
		openaiapi.Rule{Contains: "what was the word", Reply: openaiapi.Reply{Text: "The word was teapot."}},
		openaiapi.Rule{Contains: "remember the word teapot", Reply: openaiapi.Reply{Text: "Remembered teapot."}},
	)
	home, work := dirs(t)
	bin := testkit.AgentBin(t, "PARLEY_TEST_CODEX_ACP", "codex-acp")
	envList := openaiapi.CodexEnv(t, srv, home)
	opts := map[string]string{acp.OptAuthMethod: "openai-api-key"}

	// The person's own Codex, outside parley, still running its session.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sink := &outsideSink{ended: make(chan struct{}, 4)}
	outside, err := acp.New(nil).Start(ctx, driver.Spec{AgentID: "codex", Command: bin, Env: envList, Cwd: work, Options: opts}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close(context.Background())
	if err := outside.Prompt(ctx, driver.Prompt{MessageID: "o1", Text: "remember the word teapot"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.ended:
	case <-ctx.Done():
		t.Fatal("the outside codex did not end its turn")
	}
	sink.mu.Lock()
	id := sink.id
	sink.mu.Unlock()
	if id == "" {
		t.Fatal("the outside codex named no session")
	}

	env := map[string]string{}
	for _, kv := range envList {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	r := start(t, agent{cfg: config.Agent{ID: "codex", Transport: config.TransportACP, Command: bin, Env: env, Options: opts},
		home: home, proc: "codex"}, work)
	s := r.dial("phone")
	resume := func() int {
		at := s.Len()
		s.Send(map[string]any{"type": "resume_session", "agent": "codex", "session_id": id, "cwd": work, "ref": "r"})
		return s.WaitFor(at, wait, func(e client.Event) bool {
			return (e.Type == chat.TypeError || e.Type == chat.TypeDone) && chatsock.FieldOf(e, "ref") == "r"
		}, "resume_session's answer")
	}

	// Refused while the outside process runs it, saying which.
	e := s.Get(resume())
	if e.Type != chat.TypeError || chatsock.FieldOf(e, "code") != chat.CodeSessionRunning ||
		!strings.Contains(fmt.Sprint(chatsock.FieldOf(e, "message")), "not started by parley") {
		t.Fatalf("resume of a running Codex session: %s", e.Raw)
	}

	// The person ends it there: continued here, with its memory.
	if err := outside.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	at := s.Len()
	if e := s.Get(resume()); e.Type != chat.TypeDone {
		t.Fatalf("resume once the outside codex ended: %s", e.Raw)
	}
	s.WaitFor(at, wait, chatsock.Field(chat.TypeSessionInfo, "state", "continued"), "continued")
	var got []string
	for _, ev := range s.Snapshot()[at:] {
		if v, _ := chatsock.FieldOf(ev, "imported").(bool); !v {
			continue
		}
		switch ev.Type {
		case chat.TypeUserMessage:
			got = append(got, "user: "+fmt.Sprint(chatsock.FieldOf(ev, "text")))
		case chat.TypeAgentChunk:
			got = append(got, "agent: "+fmt.Sprint(chatsock.FieldOf(ev, "text")))
		}
	}
	if want := []string{"user: remember the word teapot", "agent: Remembered teapot."}; !slices.Equal(got, want) {
		t.Fatalf("imported: %q, want %q\n%s", got, want, chatsock.Summary(s.Snapshot()))
	}
	at = s.Len()
	s.Send(chatsock.Msg("m1", "what was the word?"))
	s.WaitFor(at, wait, chatsock.PromptDone("m1", chat.StopEndTurn), "the continued session's turn")
	asked := false
	for _, q := range srv.Requests() {
		if raw := string(q.Raw); strings.Contains(raw, "what was the word?") {
			asked = true
			if !strings.Contains(raw, "remember the word teapot") || !strings.Contains(raw, "Remembered teapot.") {
				t.Errorf("the model's request after continuing lacks the earlier turn: %.2000s", raw)
			}
		}
	}
	if !asked {
		t.Fatal("the continued session's prompt never reached the model")
	}
}
