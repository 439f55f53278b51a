package acp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// listPages bounds how many pages of session/list one listing reads.
const listPages = 50

// AllSessions starts the agent in spec.Cwd, initializes it and, when it says
// it can (sessionCapabilities.list), asks session/list for every session (no
// cwd filter), then ends it. An agent that cannot list answers
// driver.ErrUnsupported. It is not driver.SessionLister on purpose: that one
// is asked as the new-thread form changes, and this starts a process each time
// (package sessions keeps its answer).
func (d *Driver) AllSessions(ctx context.Context, spec driver.Spec) ([]driver.NativeSession, error) {
	if spec.Command == "" {
		return nil, errors.New("acp: no command configured")
	}
	logger := spec.Logger
	if logger == nil {
		logger = d.logger
	}
	j, err := newJail(spec.Cwd)
	if err != nil {
		return nil, err
	}
	// Started with the settings a session's Gemini has (its session
	// clean-up off): a listing must not delete a session either.
	if spec, err = withGeminiSettings(spec); err != nil {
		return nil, err
	}
	s := &Session{
		logger: logger.With("driver", "acp", "agent", spec.AgentID, "listing", true), sink: discard{}, spec: spec, jail: j, m: newMapper(),
		perms: map[string]*pendingCard{}, questions: map[string]*pendingCard{},
		exited: make(chan struct{}), drained: make(chan struct{}), replayTick: make(chan struct{}, 1),
	}
	if err := s.spawn(d.tap); err != nil {
		return nil, err
	}
	defer s.shutdown()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := s.initialize(ctx); err != nil {
		return nil, err
	}
	if s.caps.SessionCapabilities.List == nil {
		return nil, fmt.Errorf("acp: %s does not list its sessions: %w", spec.AgentID, driver.ErrUnsupported)
	}
	var out []driver.NativeSession
	var cursor *string
	for range listPages {
		resp, err := s.conn.ListSessions(ctx, sdk.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("acp: session/list: %w", err)
		}
		for _, si := range resp.Sessions {
			n := driver.NativeSession{ID: string(si.SessionId), Cwd: si.Cwd}
			if si.Title != nil {
				n.Title = *si.Title
			}
			if si.UpdatedAt != nil {
				n.UpdatedAt, _ = time.Parse(time.RFC3339Nano, *si.UpdatedAt)
			}
			out = append(out, n)
		}
		if resp.NextCursor == nil || *resp.NextCursor == "" {
			break
		}
		cursor = resp.NextCursor
	}
	return out, nil
}

// discard is the sink of a listing's agent: it opens no session, so
// nothing it says is shown.
type discard struct{}

func (discard) Event(chat.Payload)     {}
func (discard) Received()              {}
func (discard) SessionID(string)       {}
func (discard) TurnEnded(string)       {}
func (discard) CardWithdrawn(string)   {}
func (discard) Waiting(string, string) {}
func (discard) Exited(error)           {}
