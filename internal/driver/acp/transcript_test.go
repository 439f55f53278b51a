package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// Transcripts in testdata/gemini-0.61.0 were recorded from the real Gemini CLI
// 0.61.0 by the tests in gemini_test.go (go test -run TestGemini -update).
// testdata/synthetic/*.jsonl are hand-written, for update kinds Gemini CLI
// does not send (plan, diffs, config options, usage, …).

// rpcLine is one JSON-RPC message of a transcript.
type rpcLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// readTranscript returns the agent-to-client messages of a transcript.
func readTranscript(t testing.TB, path string) []rpcLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rpcLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "< ")
		if !ok {
			continue
		}
		var l rpcLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		out = append(out, l)
	}
	return out
}

// mapTranscript plays a transcript's agent messages through the mapping the
// session uses and returns the payloads as golden lines.
func mapTranscript(t testing.TB, lines []rpcLine) []byte {
	t.Helper()
	m := newMapper()
	var buf bytes.Buffer
	emit := func(kind string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%s %s\n", kind, b)
	}
	cards := 0
	for _, l := range lines {
		switch {
		case l.Method == sdk.ClientMethodSessionUpdate:
			var n sdk.SessionNotification
			if err := json.Unmarshal(l.Params, &n); err != nil {
				t.Fatalf("session/update: %v", err)
			}
			for _, p := range m.update(n.Update) {
				emit(p.EventType(), p)
			}
		case l.Method == sdk.ClientMethodSessionRequestPermission:
			var p sdk.RequestPermissionRequest
			if err := json.Unmarshal(l.Params, &p); err != nil {
				t.Fatalf("request_permission: %v", err)
			}
			cards++
			for _, pl := range m.permission(fmt.Sprintf("perm-%d", cards), p) {
				emit(pl.EventType(), pl)
			}
		case l.Method == "" && len(l.Result) > 0:
			var r sdk.PromptResponse
			if json.Unmarshal(l.Result, &r) != nil || r.StopReason == "" {
				// Not a prompt's response: session/new and the like carry modes.
				var ns sdk.NewSessionResponse
				if json.Unmarshal(l.Result, &ns) == nil && ns.Modes != nil {
					m.setModes(ns.Modes)
					m.setOptions(ns.ConfigOptions)
					if _, ok := m.option(modelOption); !ok {
						m.setModels(ns.Models)
					}
					emit("mode", m.mode())
				}
				continue
			}
			if u, ok := usageOf(r); ok {
				emit(u.EventType(), u)
			}
			for _, p := range m.closeTools() {
				emit(p.EventType(), p)
			}
			emit("turn_ended", stopReason(r.StopReason))
		}
	}
	return buf.Bytes()
}

func transcriptFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"testdata/gemini-0.61.0", "testdata/synthetic"} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	return files
}

func TestMappingGolden(t *testing.T) {
	t.Parallel()
	for _, f := range transcriptFiles(t) {
		name := strings.TrimSuffix(f, ".jsonl")
		t.Run(name, func(t *testing.T) {
			got := mapTranscript(t, readTranscript(t, f))
			golden := name + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("mapping of %s differs from %s:\ngot:\n%s\nwant:\n%s", f, golden, got, want)
			}
		})
	}
}

// TestMappingFacts pins what a person relies on in the recorded transcripts,
// independent of the golden files' exact bytes.
func TestMappingFacts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string // substrings of the mapped output, in order
	}{
		{"testdata/gemini-0.61.0/plain_turn.jsonl", []string{`agent_chunk {"text":"Hello fr"}`, `usage {"input_tokens":10,"output_tokens":5}`, "turn_ended \"end_turn\""}},
		{"testdata/gemini-0.61.0/shell_allow.jsonl", []string{`tool_call {"tool_call_id":"run_shell_command`, `"status":"pending"`, `permission_request {"request_id":"perm-1"`, `"id":"proceed_once","label":"Allow","kind":"allow_once"`, `"status":"completed"`, "turn_ended \"end_turn\""}},
		{"testdata/gemini-0.61.0/shell_reject.jsonl", []string{`permission_request`, `"status":"failed","output":"the turn ended before the tool finished"`, "turn_ended \"end_turn\""}},
		{"testdata/gemini-0.61.0/set_mode.jsonl", []string{`mode {"current":"default"`, `mode {"current":"yolo"`}},
		{"testdata/gemini-0.61.0/stop_slow_stream.jsonl", []string{`agent_chunk`, "turn_ended \"cancelled\""}},
		// Gemini's replace and write_file: the diff is on the card and on the tool call.
		{"testdata/gemini-0.61.0/files_inside.jsonl", []string{`tool_call {"tool_call_id":"replace`, `"kind":"edit"`,
			`permission_request`, `"diffs":[{"path":"/work/notes.txt","old_text":"alpha line\nbeta line\n","new_text":"alpha line\ngamma line\n"}]`,
			`"status":"completed"`, `tool_call {"tool_call_id":"write_file`, `"diffs":[{"path":"/work/made.txt","new_text":"made through parley\n"}]`, `"status":"completed"`}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			got := string(mapTranscript(t, readTranscript(t, tt.file)))
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("mapped output lacks %q (in order); got:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(got, "[MODE_UPDATE]") {
				t.Errorf("Gemini's [MODE_UPDATE] marker reached the screen as text:\n%s", got)
			}
		})
	}
}

// FuzzMapUpdate feeds session/update params to the mapping: it must never
// panic and what it returns must marshal. Seeds: testdata/fuzz/FuzzMapUpdate
// (written from the transcripts with -update) and the transcripts themselves.
func FuzzMapUpdate(f *testing.F) {
	for _, file := range transcriptFiles(f) {
		for _, l := range readTranscript(f, file) {
			if l.Method == sdk.ClientMethodSessionUpdate || l.Method == sdk.ClientMethodSessionRequestPermission {
				f.Add(l.Method, []byte(l.Params))
			}
		}
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		m := newMapper()
		var ps []chat.Payload
		if method == sdk.ClientMethodSessionRequestPermission {
			var p sdk.RequestPermissionRequest
			if json.Unmarshal(params, &p) != nil {
				return
			}
			ps = m.permission("perm-1", p)
		} else {
			var n sdk.SessionNotification
			if json.Unmarshal(params, &n) != nil {
				return
			}
			ps = m.update(n.Update)
		}
		ps = append(ps, m.closeTools()...)
		for _, p := range ps {
			if _, err := json.Marshal(p); err != nil {
				t.Fatalf("payload %T does not marshal: %v", p, err)
			}
		}
	})
}
