package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
)

// API calls the REST side of the same daemon (docs/protocol.md, "REST").
type API struct {
	Server string // http://host:port
	Token  string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
}

// Threads lists every thread, as GET /api/threads answers.
func (a API) Threads(ctx context.Context) ([]chat.Thread, error) {
	var body struct {
		Threads []chat.Thread `json:"threads"`
	}
	if err := a.get(ctx, "/api/threads", &body); err != nil {
		return nil, err
	}
	return body.Threads, nil
}

// ArchivedThreads lists the archived threads (Threads lists the others).
func (a API) ArchivedThreads(ctx context.Context) ([]chat.Thread, error) {
	var body struct {
		Threads []chat.Thread `json:"threads"`
	}
	if err := a.get(ctx, "/api/threads?archived=1", &body); err != nil {
		return nil, err
	}
	return body.Threads, nil
}

// Unsearched is a machine a search at a cluster's hub did not cover, and why.
type Unsearched struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// SearchAll finds threads by title and message text, best match first, and
// says, at a cluster's hub, which machines it did not cover (offline, no
// answer in time).
func (a API) SearchAll(ctx context.Context, q string) ([]chat.SearchHit, []Unsearched, error) {
	var body struct {
		Hits       []chat.SearchHit `json:"hits"`
		Unsearched []Unsearched     `json:"unsearched"`
	}
	if err := a.get(ctx, "/api/search?q="+url.QueryEscape(q), &body); err != nil {
		return nil, nil, err
	}
	return body.Hits, body.Unsearched, nil
}

// EditThread renames a thread (title not nil) or (un)archives it (archived
// not nil), and returns it as it is now.
func (a API) EditThread(ctx context.Context, id chat.ThreadID, title *string, archived *bool) (chat.Thread, error) {
	in := map[string]any{}
	if title != nil {
		in["title"] = *title
	}
	if archived != nil {
		in["archived"] = *archived
	}
	var body struct {
		Thread chat.Thread `json:"thread"`
	}
	err := a.Call(ctx, http.MethodPatch, "/api/threads/"+url.PathEscape(string(id)), in, &body)
	return body.Thread, err
}

// DeleteThread deletes a thread; note says what became of the agent's own
// session.
func (a API) DeleteThread(ctx context.Context, id chat.ThreadID) (note string, err error) {
	var body struct {
		Note string `json:"note"`
	}
	err = a.Call(ctx, http.MethodDelete, "/api/threads/"+url.PathEscape(string(id)), nil, &body)
	return body.Note, err
}

// Thread returns one thread.
func (a API) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	var body struct {
		Thread chat.Thread `json:"thread"`
	}
	if err := a.get(ctx, "/api/threads/"+url.PathEscape(string(id)), &body); err != nil {
		return chat.Thread{}, err
	}
	return body.Thread, nil
}

// Usage is a thread's usage totals, as GET /api/threads/{id} answers.
func (a API) Usage(ctx context.Context, id chat.ThreadID) (chat.UsageTotals, error) {
	var body struct {
		Usage chat.UsageTotals `json:"usage"`
	}
	if err := a.get(ctx, "/api/threads/"+url.PathEscape(string(id)), &body); err != nil {
		return chat.UsageTotals{}, err
	}
	return body.Usage, nil
}

// RouteThread is the thread a route shows ("" when none), as GET /api/route
// answers; asking attaches nothing.
func (a API) RouteThread(ctx context.Context, key chat.RouteKey) (chat.ThreadID, error) {
	var body struct {
		Thread chat.ThreadID `json:"thread"`
	}
	q := url.Values{"channel": {key.Channel}, "chat": {key.Chat}}
	if err := a.get(ctx, "/api/route?"+q.Encode(), &body); err != nil {
		return "", err
	}
	return body.Thread, nil
}

// Agents lists the configured agents and the default one.
func (a API) Agents(ctx context.Context) ([]chat.AgentInfo, string, error) {
	var body struct {
		Agents       []chat.AgentInfo `json:"agents"`
		DefaultAgent string           `json:"default_agent"`
	}
	if err := a.get(ctx, "/api/agents", &body); err != nil {
		return nil, "", err
	}
	return body.Agents, body.DefaultAgent, nil
}

// APIError is a refusal from the REST API, with the HTTP status.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

func (a API) get(ctx context.Context, path string, v any) error {
	return a.Call(ctx, http.MethodGet, path, nil, v)
}

// Call makes one REST call: in (when not nil) goes as the JSON body, the JSON
// answer lands in out; a refusal is an *APIError.
func (a API) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.Server, "/")+path, body)
	if err != nil {
		return fmt.Errorf("client: %s: %w", path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("client: %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &APIError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		}
		return fmt.Errorf("client: %s: %w", path, e)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: %s: answer is not the JSON expected: %w", path, err)
	}
	return nil
}
