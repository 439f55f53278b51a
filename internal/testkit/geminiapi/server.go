package geminiapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/testkit/standin"
)

// Request kinds, as the stand-in classified them.
const (
	KindScenario    = "scenario"     // a model turn the scenario answered
	KindSchema      = "schema"       // a request with a response schema (router, next speaker, …)
	KindCountTokens = "count_tokens" // :countTokens
	KindOther       = "other"        // GETs and anything else
)

// Request is one recorded HTTP request and how it was answered.
type Request struct {
	Method string
	Path   string
	Kind   string
	Body   []byte
	// Parsed fields of a generateContent body.
	Model    string
	Stream   bool
	Contents []Content
	Schema   json.RawMessage // generationConfig's response schema, if any
	// Rule is the index of the scenario rule that answered, or -1.
	Rule int
	At   time.Time
}

// Content is one entry of a request's contents array.
type Content struct {
	Role  string     `json:"role"`
	Parts []WirePart `json:"parts"`
}

// WirePart is one part of a content as the Gemini API carries it.
type WirePart struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is a model's request to call a tool.
type FunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// FunctionResponse is the tool's result the agent sends back.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response,omitempty"`
}

// LastUserText is the last text part of the request's last user content.
func (r Request) LastUserText() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		for j := len(c.Parts) - 1; j >= 0; j-- {
			if p := c.Parts[j]; p.FunctionResponse == nil && p.Text != "" {
				return p.Text
			}
		}
		return ""
	}
	return ""
}

// UserTexts are the text parts of every user content, oldest first: what a
// resumed session carried of the earlier turns.
func (r Request) UserTexts() []string {
	var out []string
	for _, c := range r.Contents {
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			if p.Text != "" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// FunctionResponses are the function responses of the request's last content.
func (r Request) FunctionResponses() []FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

// Server is the stand-in. Create it with Start or NewServer; it is safe for
// concurrent use. Its URL is the base URL for GOOGLE_GEMINI_BASE_URL.
type Server struct {
	standin.Server[Request, Scenario]
}

// TB is the part of testing.TB the stand-in needs.
type TB = standin.TB

// Start starts a stand-in for sc on 127.0.0.1 and closes it when the test ends.
func Start(t TB, sc Scenario) *Server {
	t.Helper()
	s, err := NewServer("127.0.0.1:0", sc)
	if err != nil {
		t.Fatalf("geminiapi: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a stand-in listening on addr (e.g. "127.0.0.1:0").
func NewServer(addr string, sc Scenario) (*Server, error) {
	s := &Server{}
	if err := s.Init(addr, sc, func(sc Scenario) int { return len(sc.Rules) }, http.HandlerFunc(s.serve)); err != nil {
		return nil, fmt.Errorf("geminiapi: listen: %w", err)
	}
	return s, nil
}

// ScenarioRequests returns the recorded model turns (not schema or side calls).
func (s *Server) ScenarioRequests() []Request {
	return s.RequestsWhere(func(r Request) bool { return r.Kind == KindScenario })
}

// FunctionResponse returns the first recorded response to a function call of
// that name, and whether there was one.
func (s *Server) FunctionResponse(name string) (FunctionResponse, bool) {
	for _, r := range s.ScenarioRequests() {
		for _, fr := range r.FunctionResponses() {
			if fr.Name == name {
				return fr, true
			}
		}
	}
	return FunctionResponse{}, false
}

type generateBody struct {
	Contents         []Content `json:"contents"`
	GenerationConfig struct {
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Method: r.Method, Path: r.URL.Path, Body: body, Rule: -1, At: time.Now(), Kind: KindOther}
	// Paths look like /v1beta/models/<model>:<method>.
	model, method, _ := strings.Cut(r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], ":")
	rec.Model = model
	if r.Method != http.MethodPost {
		s.Record(rec)
		standin.WriteJSON(w, http.StatusOK, map[string]any{})
		return
	}
	switch method {
	case "countTokens":
		rec.Kind = KindCountTokens
		s.Record(rec)
		standin.WriteJSON(w, http.StatusOK, map[string]any{"totalTokens": 10})
		return
	case "generateContent", "streamGenerateContent":
	default:
		s.Record(rec)
		standin.WriteJSON(w, http.StatusOK, map[string]any{})
		return
	}
	var gb generateBody
	if err := json.Unmarshal(body, &gb); err != nil {
		s.Record(rec)
		writeError(w, http.StatusBadRequest, "geminiapi: bad body: "+err.Error())
		return
	}
	rec.Contents = gb.Contents
	rec.Stream = method == "streamGenerateContent"
	rec.Schema = gb.GenerationConfig.ResponseJSONSchema
	if len(rec.Schema) == 0 {
		rec.Schema = gb.GenerationConfig.ResponseSchema
	}
	var reply Reply
	if len(rec.Schema) > 0 && string(rec.Schema) != "null" {
		rec.Kind = KindSchema
		reply = s.schemaReply(rec.Schema)
	} else {
		rec.Kind = KindScenario
		reply = s.pick(&rec)
	}
	s.Record(rec)
	s.play(w, r, reply, rec.Stream)
}

// pick finds the reply for a model turn and counts the rule's use.
func (s *Server) pick(rec *Request) Reply {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	frs := rec.FunctionResponses()
	text := rec.LastUserText()
	for i, rule := range s.Sc.Rules {
		m := rule.Match
		ok := false
		switch {
		case m.FunctionResponse != "":
			for _, fr := range frs {
				ok = ok || fr.Name == m.FunctionResponse
			}
		case len(frs) > 0:
			// A function response is answered only by a rule naming it.
		case m.Exact != "":
			ok = text == m.Exact
		case m.Prefix != "":
			ok = strings.HasPrefix(text, m.Prefix)
		case m.Contains != "":
			ok = strings.Contains(text, m.Contains)
		default:
			ok = true
		}
		if ok && s.Uses.Take(i, rule.Times) {
			rec.Rule = i
			return rule.Reply
		}
	}
	if s.Sc.Default != nil {
		return *s.Sc.Default
	}
	if len(frs) > 0 {
		return Text("(stand-in: no rule for the result of "+frs[0].Name+")", 1, 0)
	}
	return Text("(stand-in: no rule for "+fmt.Sprintf("%q", text)+")", 1, 0)
}

// schemaReply answers a schema-constrained request with JSON that fits it.
func (s *Server) schemaReply(schema json.RawMessage) Reply {
	s.Mu.Lock()
	over := map[string]any{"complexity_score": 10, "next_speaker": "user"}
	for k, v := range s.Sc.Schema {
		over[k] = v
	}
	s.Mu.Unlock()
	var sch map[string]any
	_ = json.Unmarshal(schema, &sch)
	b, _ := json.Marshal(fitSchema(sch, "", over))
	return Reply{Parts: []Part{{Type: PartText, Text: string(b)}}}
}

// fitSchema builds a value that satisfies a JSON (or Gemini OpenAPI) schema.
func fitSchema(sch map[string]any, name string, over map[string]any) any {
	if v, ok := over[name]; ok && name != "" {
		return v
	}
	if enum, ok := sch["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := sch["type"].(string)
	if list, ok := sch["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch strings.ToLower(typ) {
	case "object", "":
		props, _ := sch["properties"].(map[string]any)
		out := map[string]any{}
		for k, p := range props {
			ps, _ := p.(map[string]any)
			out[k] = fitSchema(ps, k, over)
		}
		return out
	case "array":
		items, _ := sch["items"].(map[string]any)
		return []any{fitSchema(items, "", over)}
	case "integer", "number":
		if m, ok := sch["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	default:
		return "stand-in " + name
	}
}

// chunk is one streamed GenerateContentResponse.
type chunk struct {
	parts  []map[string]any
	finish string
}

// chunks splits a reply into the stream it is played as; delays[i] is the
// pause before chunk i.
func chunks(r Reply) ([]chunk, []time.Duration) {
	var out []chunk
	var delays []time.Duration
	for _, p := range r.Parts {
		switch p.Type {
		case PartFunctionCall:
			args := p.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			out = append(out, chunk{parts: []map[string]any{{"functionCall": map[string]any{"name": p.Name, "args": args}}}})
			delays = append(delays, time.Duration(p.Delay))
		default:
			for _, piece := range standin.Split(p.Text, p.Chunks) {
				part := map[string]any{"text": piece}
				if p.Type == PartThought {
					part["thought"] = true
				}
				out = append(out, chunk{parts: []map[string]any{part}})
				delays = append(delays, time.Duration(p.Delay))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, chunk{parts: []map[string]any{{"text": ""}}})
		delays = append(delays, 0)
	}
	fr := r.FinishReason
	if fr == "" {
		fr = "STOP"
	}
	out[len(out)-1].finish = fr
	return out, delays
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, reply Reply, stream bool) {
	if e := reply.Error; e != nil && e.CutAfter == 0 {
		st := e.Status
		if st == 0 {
			st = http.StatusInternalServerError
		}
		writeError(w, st, e.Message)
		return
	}
	cs, delays := chunks(reply)
	usage := map[string]any{
		"promptTokenCount":     cmp.Or(reply.PromptTokens, 10),
		"candidatesTokenCount": cmp.Or(reply.CandidatesTokens, 5),
	}
	usage["totalTokenCount"] = usage["promptTokenCount"].(int) + usage["candidatesTokenCount"].(int)
	if !stream {
		// One response with every part merged.
		var parts []map[string]any
		for i, c := range cs {
			if !standin.Wait(r.Context(), delays[i]) {
				return
			}
			parts = append(parts, c.parts...)
		}
		standin.WriteJSON(w, http.StatusOK, response(parts, cs[len(cs)-1].finish, usage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, c := range cs {
		if !standin.Wait(r.Context(), delays[i]) {
			return
		}
		if e := reply.Error; e != nil && i >= e.CutAfter {
			// A cut stream: the connection drops mid-reply.
			panic(http.ErrAbortHandler)
		}
		var u map[string]any
		if c.finish != "" {
			u = usage
		}
		b, _ := json.Marshal(response(c.parts, c.finish, u))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func response(parts []map[string]any, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": "stand-in"}
	if usage != nil {
		out["usageMetadata"] = usage
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	standin.WriteJSON(w, status, map[string]any{"error": map[string]any{
		"code": status, "message": msg, "status": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")),
	}})
}
