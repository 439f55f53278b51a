package trigger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is the triggers over a real router, SQLite and the scripted agent,
// served by an httptest server.
type rig struct {
	t      *testing.T
	dir    string
	st     *sqlite.Store
	trig   *Triggers
	srv    *httptest.Server
	id     string
	secret string
}

func newRig(t *testing.T, template string) *rig {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := router.New(st, fanout.New(nil), router.Options{
		Agents:       []config.Agent{{ID: "echo", Transport: "scripted", Command: "scripted", Roots: []string{dir}}},
		DefaultAgent: "echo",
		Drivers:      map[string]driver.Driver{"scripted": &scripted.Driver{}},
	})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	trig := New(Options{Store: st, Send: rt, MaxMessage: 64 << 10})
	mux := http.NewServeMux()
	plain := func(p string, h http.Handler) { mux.Handle(p, h) }
	trig.Handle(plain, plain)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		rt.Close(context.Background())
		st.Close()
	})
	g := &rig{t: t, dir: dir, st: st, trig: trig, srv: srv}
	tr, secret, err := trig.Add(context.Background(), Spec{Agent: "echo", Cwd: dir, Template: template, Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	g.id, g.secret = tr.ID, secret
	return g
}

// post posts body to the trigger's URL with the headers; it answers the
// status and the error message, if any.
func (g *rig) post(body []byte, headers map[string]string) (int, string) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL+Path(g.id), bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error.Message
}

// messages are the texts the router stored from the trigger's route.
func (g *rig) messages() []chat.UserMessage {
	g.t.Helper()
	ctx := context.Background()
	ths, err := g.st.Threads(ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []chat.UserMessage
	for _, th := range ths {
		evs, _ := g.st.Events(ctx, th.ID, 0, 1000)
		for _, ev := range evs {
			if ev.Type == chat.TypeUserMessage {
				var m chat.UserMessage
				json.Unmarshal(ev.Payload, &m)
				out = append(out, m)
			}
		}
	}
	return out
}

func TestWebhookSignature(t *testing.T) {
	g := newRig(t, "CI failed on {{.branch}}: {{.url}}")
	body := []byte(`{"branch":"main","url":"https://ci.example/1"}`)
	for _, c := range []struct {
		name, sig string
		status    int
		want      string
	}{
		{"missing", "", 401, "missing X-Hub-Signature-256"},
		{"other secret", Sign("not the secret", body), 401, "does not match"},
		{"of another body", Sign(g.secret, []byte(`{"branch":"dev","url":"x"}`)), 401, "does not match"},
		{"sha1", "sha1=" + strings.Repeat("0", 40), 401, "must be sha256="},
		{"not hex", "sha256=zz", 401, "must be sha256="},
		{"short", Sign(g.secret, body)[:20], 401, "must be sha256="},
		{"upper-case prefix", "SHA256=" + strings.TrimPrefix(Sign(g.secret, body), "sha256="), 401, "must be sha256="},
	} {
		status, msg := g.post(body, map[string]string{SignatureHeader: c.sig, "X-GitHub-Delivery": "d-" + c.name})
		if status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, status, msg, c.status, c.want)
		}
	}
	if ms := g.messages(); len(ms) != 0 {
		t.Fatalf("refused webhooks stored messages: %+v", ms)
	}
	status, msg := g.post(body, map[string]string{SignatureHeader: Sign(g.secret, body)})
	if status != http.StatusAccepted {
		t.Fatalf("signed: %d %s", status, msg)
	}
	ms := g.messages()
	if len(ms) != 1 || ms[0].Text != "CI failed on main: https://ci.example/1" ||
		*ms[0].Origin != (chat.Origin{Kind: chat.OriginTrigger, ID: g.id, Name: "ci"}) {
		t.Fatalf("signed webhook stored %+v", ms)
	}
}

func TestWebhookDeliveryIDMakesARetryANoOp(t *testing.T) {
	g := newRig(t, "build {{.n}}")
	for i, h := range []string{"X-GitHub-Delivery", "X-Request-Id"} {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		hs := map[string]string{SignatureHeader: Sign(g.secret, body), h: fmt.Sprintf("delivery-%d", i)}
		for range 3 {
			if status, msg := g.post(body, hs); status != http.StatusAccepted {
				t.Fatalf("%s: %d %s", h, status, msg)
			}
		}
	}
	// Without a delivery id each post is a run of its own.
	body := []byte(`{"n":"x"}`)
	g.post(body, map[string]string{SignatureHeader: Sign(g.secret, body)})
	g.post(body, map[string]string{SignatureHeader: Sign(g.secret, body)})
	var texts []string
	for _, m := range g.messages() {
		texts = append(texts, m.Text)
	}
	if strings.Join(texts, ",") != "build 0,build 1,build x,build x" {
		t.Fatalf("messages %q: want each delivery once, and both posts without an id", texts)
	}
	status, msg := g.post(body, map[string]string{SignatureHeader: Sign(g.secret, body), "X-Request-Id": "has space"})
	if status != http.StatusBadRequest || !strings.Contains(msg, "X-Request-Id") {
		t.Errorf("a bad delivery id: %d %q", status, msg)
	}
}

func TestWebhookTemplateErrors(t *testing.T) {
	g := newRig(t, "PR {{.pull_request.title}} by {{.sender.login}}")
	for _, c := range []struct{ body, want string }{
		{`{"pull_request":{"title":"fix"}}`, `no entry for key "sender"`},
		{`{"pull_request":"fix","sender":{"login":"a"}}`, "can't evaluate field title"},
		{`[1,2]`, "not a JSON object"},
		{`{"pull_request":`, "not JSON"},
		{`{} {}`, "more than one JSON value"},
	} {
		status, msg := g.post([]byte(c.body), map[string]string{SignatureHeader: Sign(g.secret, []byte(c.body))})
		if status != http.StatusBadRequest || !strings.Contains(msg, c.want) || strings.Contains(msg, "<no value>") {
			t.Errorf("%s: %d %q, want 400 saying %q", c.body, status, msg, c.want)
		}
	}
	if ms := g.messages(); len(ms) != 0 {
		t.Fatalf("bodies that did not fill the template stored %+v", ms)
	}
	body := []byte(`{"pull_request":{"title":"fix","number":12},"sender":{"login":null}}`)
	if status, msg := g.post(body, map[string]string{SignatureHeader: Sign(g.secret, body)}); status != http.StatusAccepted {
		t.Fatalf("%d %s", status, msg)
	}
	if ms := g.messages(); len(ms) != 1 || ms[0].Text != "PR fix by " {
		t.Errorf("a null fills as nothing: %+v", ms)
	}
}

func TestTemplatesOnlyReadFields(t *testing.T) {
	for _, src := range []string{
		`{{printf "%s" .a}}`, `{{.a | html}}`, `{{call .f}}`, `{{if .a}}x{{end}}`, `{{range .a}}x{{end}}`,
		`{{$x := .a}}`, `{{.}}`, `{{template "t"}}`, `{{len .a}}`, `{{define "t"}}x{{end}}`, "", "  ",
	} {
		if _, err := parseTemplate(src); err == nil {
			t.Errorf("%q parsed: a template may only read fields", src)
		}
	}
	for _, src := range []string{"plain text", "{{.a}} and {{.b.c.d}}", "{{ .a }}"} {
		if _, err := parseTemplate(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	g := newRig(t, "x {{.a}}")
	if _, _, err := g.trig.Add(context.Background(), Spec{Agent: "echo", Cwd: g.dir, Template: "{{call .f}}"}); err == nil ||
		!strings.Contains(err.Error(), "only a field") {
		t.Errorf("add with a function: %v", err)
	}
}

func TestWebhookSize(t *testing.T) {
	g := newRig(t, "x {{.a}}")
	big := []byte(`{"a":"` + strings.Repeat("x", MaxBody) + `"}`)
	status, msg := g.post(big, map[string]string{SignatureHeader: Sign(g.secret, big)})
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "larger than") {
		t.Errorf("a body over 1 MiB: %d %q", status, msg)
	}
	// A body within the bound whose text is over the message limit.
	long := []byte(`{"a":"` + strings.Repeat("x", 100<<10) + `"}`)
	status, msg = g.post(long, map[string]string{SignatureHeader: Sign(g.secret, long)})
	if status != http.StatusBadRequest || !strings.Contains(msg, "longer than") {
		t.Errorf("a filled template over the message limit: %d %q", status, msg)
	}
	if ms := g.messages(); len(ms) != 0 {
		t.Fatalf("stored %d messages", len(ms))
	}
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL+Path("trg-none"), strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown trigger: %d", resp.StatusCode)
	}
}
