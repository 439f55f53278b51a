package hook

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// The event is on disk even when nobody listens: a daemon that is down loses nothing.
func TestRunSpoolsWithoutDaemon(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	spool := filepath.Join(dir, "hooks.jsonl")
	e := env(map[string]string{EnvSpool: spool, EnvSocket: filepath.Join(dir, "nobody.sock")})
	events := []string{
		`{"hook_event_name":"SessionStart","session_id":"s1","transcript_path":"/t/s1.jsonl","source":"startup"}`,
		"{\n \"hook_event_name\": \"Stop\",\n \"session_id\": \"s1\"\n}",
	}
	for _, ev := range events {
		if err := Run(context.Background(), strings.NewReader(ev), e); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	got, err := OpenSpool(spool).Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "SessionStart" || got[0].TranscriptPath != "/t/s1.jsonl" || got[1].Name != "Stop" {
		t.Fatalf("spool: got %+v, want SessionStart then Stop", got)
	}
}

func TestRunRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		stdin string
	}{
		{name: "no spool set", env: map[string]string{}, stdin: `{}`},
		{name: "not JSON", env: map[string]string{EnvSpool: filepath.Join(t.TempDir(), "s")}, stdin: `{"hook_event_name":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Run(context.Background(), strings.NewReader(tt.stdin), env(tt.env)); err == nil {
				t.Error("got nil, want an error")
			}
		})
	}
}

func TestRunPokesListener(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	l, err := Listen(filepath.Join(dir, "h.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	spool := filepath.Join(dir, "hooks.jsonl")
	if err := Run(context.Background(), strings.NewReader(`{"hook_event_name":"Notification"}`),
		env(map[string]string{EnvSpool: spool, EnvSocket: filepath.Join(dir, "h.sock")})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Pokes():
	case <-time.After(5 * time.Second):
		t.Fatal("no poke within 5s")
	}
	// The poke came after the write: the event is readable now.
	got, err := OpenSpool(spool).Read()
	if err != nil || len(got) != 1 || got[0].Name != "Notification" {
		t.Fatalf("spool after the poke: got %+v, %v", got, err)
	}
}

// A line still being written is kept for the next Read, not lost or misread.
func TestSpoolPartialLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "s")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := OpenSpool(p)
	steps := []struct {
		write string
		want  []string
	}{
		{write: `{"hook_event_name":"A"}` + "\n" + `{"hook_event_na`, want: []string{"A"}},
		{write: `me":"B"}` + "\n", want: []string{"B"}},
		{write: "garbage\n" + `{"hook_event_name":"C"}` + "\n", want: []string{"C"}},
		{write: "", want: nil},
	}
	for i, st := range steps {
		if _, err := f.WriteString(st.write); err != nil {
			t.Fatal(err)
		}
		evs, err := s.Read()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.Name)
		}
		if strings.Join(got, ",") != strings.Join(st.want, ",") {
			t.Errorf("step %d: got %v, want %v", i, got, st.want)
		}
	}
}

// The command line survives a shell: quotes in paths stay quoted.
func TestCommandQuoting(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "it's out")
	cmdline := Command(map[string]string{"OUT": out}, []string{"sh", "-c", `printf '%s' "$OUT" > "$OUT"`})
	if err := exec.Command("sh", "-c", cmdline).Run(); err != nil {
		t.Fatalf("sh -c %q: %v", cmdline, err)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != out {
		t.Fatalf("got %q %v, want %q", b, err, out)
	}
}

func TestWriteSettings(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "settings.json")
	if err := WriteSettings(p, "'/bin/parley' 'hook'"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Notification", "Stop"} {
		m := got.Hooks[ev]
		if len(m) != 1 || m[0].Matcher != "*" || len(m[0].Hooks) != 1 || m[0].Hooks[0].Command != "'/bin/parley' 'hook'" || m[0].Hooks[0].Type != "command" {
			t.Errorf("%s: got %+v", ev, m)
		}
	}
}
