package acpagent

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/router"
)

// A card becomes one client request at a time per request id. Its answer is a
// control on the route, so it resolves the card for every surface; a card
// resolved anywhere else cancels the pending request ($/cancel_request).

// startAsk registers a pending client request for a card; false when one is
// already pending (an open card restated after a reconnect).
func (s *session) startAsk(ctx context.Context, requestID string) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.asking[requestID]; ok {
		return nil, false
	}
	cctx, cancel := context.WithCancel(ctx)
	s.asking[requestID] = cancel
	return cctx, true
}

func (s *session) endAsk(requestID string) {
	s.mu.Lock()
	if cancel := s.asking[requestID]; cancel != nil {
		cancel()
		delete(s.asking, requestID)
	}
	s.mu.Unlock()
}

func (a *agent) askPermission(ctx context.Context, s *session, p chat.PermissionRequest) {
	cctx, ok := s.startAsk(ctx, p.RequestID)
	if !ok {
		return
	}
	title := p.Tool.Title
	if title == "" {
		title = p.Tool.Name
	}
	tc := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(firstNonEmpty(p.Tool.ToolCallID, p.RequestID)), Title: acp.Ptr(title),
		Status: acp.Ptr(acp.ToolCallStatusPending)}
	if len(p.Tool.Input) > 0 {
		tc.RawInput = p.Tool.Input
	}
	opts := make([]acp.PermissionOption, 0, len(p.Options))
	for _, o := range p.Options {
		opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId(o.ID), Name: o.Label, Kind: acp.PermissionOptionKind(o.Kind)})
	}
	req := acp.RequestPermissionRequest{SessionId: acp.SessionId(s.id), ToolCall: tc, Options: opts,
		Meta: map[string]any{MetaRequestID: p.RequestID, "parley/tool": p.Tool.Name}}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer s.endAsk(p.RequestID)
		resp, err := a.conn.RequestPermission(cctx, req)
		if err != nil {
			a.log.Debug("acp: request_permission ended", "request", p.RequestID, "err", err)
			return
		}
		if resp.Outcome.Selected == nil {
			// The client withdrew its dialog (its turn was cancelled, it is
			// closing): the card stays open for every other surface. A stop
			// cancels a turn's cards by itself.
			a.log.Debug("acp: client cancelled its permission request", "request", p.RequestID)
			return
		}
		pr := &router.PermissionAnswer{RequestID: p.RequestID, OptionID: string(resp.Outcome.Selected.OptionId)}
		a.answer(ctx, s, router.Control{From: s.route, Permission: pr})
	}()
}

// askQuestion asks a question card as a form elicitation when the client takes
// forms, otherwise as one permission request per question whose options are the
// answers.
func (a *agent) askQuestion(ctx context.Context, s *session, q chat.Question) {
	cctx, ok := s.startAsk(ctx, q.RequestID)
	if !ok {
		return
	}
	caps := a.clientCaps()
	forms := caps.Elicitation != nil && caps.Elicitation.Form != nil
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer s.endAsk(q.RequestID)
		var answers chat.Answers
		var err error
		if forms {
			answers, err = a.elicit(cctx, s, q)
		} else {
			answers, err = a.questionByPermission(cctx, s, q)
		}
		if err != nil {
			a.log.Debug("acp: question ended", "request", q.RequestID, "err", err)
			return
		}
		a.answer(ctx, s, router.Control{From: s.route, Answer: &router.QuestionAnswer{RequestID: q.RequestID, Answers: answers}})
	}()
}

var errDeclined = errors.New("the client declined")

func (a *agent) elicit(ctx context.Context, s *session, q chat.Question) (chat.Answers, error) {
	props := map[string]any{}
	var required []string
	for i, item := range q.Questions {
		labels := make([]any, 0, len(item.Options))
		for _, o := range item.Options {
			labels = append(labels, o.Label)
		}
		prop := map[string]any{"type": "string", "title": item.Question}
		if item.Header != "" {
			prop["description"] = item.Header
		}
		if len(labels) > 0 {
			if item.MultiSelect {
				prop = map[string]any{"type": "array", "title": item.Question, "items": map[string]any{"type": "string", "enum": labels}}
			} else {
				prop["enum"] = labels
			}
		}
		name := "q" + strconv.Itoa(i)
		props[name] = prop
		required = append(required, name)
	}
	msg := "Question"
	if len(q.Questions) == 1 {
		msg = q.Questions[0].Question
	}
	req := acp.NewUnstableCreateElicitationRequestForm(acp.UnstableElicitationSchema{Type: "object", Properties: props, Required: required})
	req.Form.Message = msg
	req.Form.Meta = map[string]any{"sessionId": s.id, MetaRequestID: q.RequestID}
	resp, err := a.conn.UnstableCreateElicitation(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Accept == nil {
		return nil, errDeclined
	}
	answers := chat.Answers{}
	for i, item := range q.Questions {
		v, ok := resp.Accept.Content["q"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		switch v := v.(type) {
		case []any:
			labels := make([]string, 0, len(v))
			for _, e := range v {
				labels = append(labels, fmt.Sprint(e))
			}
			answers[item.Question] = chat.Answer{Labels: labels}
		default:
			answers[item.Question] = chat.Answer{Text: fmt.Sprint(v)}
		}
	}
	return answers, nil
}

func (a *agent) questionByPermission(ctx context.Context, s *session, q chat.Question) (chat.Answers, error) {
	answers := chat.Answers{}
	for i, item := range q.Questions {
		opts := make([]acp.PermissionOption, 0, len(item.Options))
		for j, o := range item.Options {
			opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId(strconv.Itoa(j)), Name: o.Label, Kind: acp.PermissionOptionKindAllowOnce})
		}
		req := acp.RequestPermissionRequest{SessionId: acp.SessionId(s.id),
			ToolCall: acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(q.RequestID + "#" + strconv.Itoa(i)), Title: acp.Ptr(item.Question),
				Kind: acp.Ptr(acp.ToolKindOther), Status: acp.Ptr(acp.ToolCallStatusPending)},
			Options: opts, Meta: map[string]any{MetaRequestID: q.RequestID, "parley/question": true}}
		resp, err := a.conn.RequestPermission(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp.Outcome.Selected == nil {
			return nil, errDeclined
		}
		j, err := strconv.Atoi(string(resp.Outcome.Selected.OptionId))
		if err != nil || j < 0 || j >= len(item.Options) {
			return nil, fmt.Errorf("option %q is not one offered", resp.Outcome.Selected.OptionId)
		}
		answers[item.Question] = chat.Answer{Text: item.Options[j].Label}
	}
	return answers, nil
}

func (a *agent) answer(ctx context.Context, s *session, c router.Control) {
	if err := a.d.Router.Control(ctx, c); err != nil {
		if errors.Is(err, chat.ErrCardClosed) {
			a.log.Debug("acp: card already closed", "session", s.id)
			return
		}
		a.log.Warn("acp: answer card", "session", s.id, "err", err)
		a.ext(ctx, s.id, chat.TypeError, mustJSON(chat.Error{Code: chat.CodeCardClosed, Message: err.Error()}))
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
