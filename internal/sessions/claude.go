package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver/claudecode"
)

// Claude is Claude Code's sessions: one transcript per session at
// <Dir>/projects/<cwd, non-alphanumerics as "-">/<session id>.jsonl, and a
// registry of running ones at <Dir>/sessions/<pid>.json.
type Claude struct {
	// Dir is Claude Code's config folder (~/.claude, or CLAUDE_CONFIG_DIR).
	Dir string
	// Panes finds the tmux pane a process runs in (nil: tmux.Panes).
	Panes func(ctx context.Context) (PaneFinder, error)
}

func (c Claude) Agent() string { return "claude" }

func (c Claude) Files(ctx context.Context, visit func(string, int64, time.Time)) error {
	projects, err := os.ReadDir(filepath.Join(c.Dir, "projects"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := filepath.Join(c.Dir, "projects", p.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // removed meanwhile, or unreadable: the rest still lists
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
				continue
			}
			if info, err := e.Info(); err == nil {
				visit(filepath.Join(dir, e.Name()), info.Size(), info.ModTime())
			}
		}
	}
	return nil
}

// claudeRecord is what the listing needs of a transcript line.
type claudeRecord struct {
	Type        string    `json:"type"`
	Cwd         string    `json:"cwd"`
	Timestamp   time.Time `json:"timestamp"`
	IsMeta      bool      `json:"isMeta"`
	IsSidechain bool      `json:"isSidechain"`
	Message     *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	CustomTitle string `json:"customTitle"`
	AITitle     string `json:"aiTitle"`
	Summary     string `json:"summary"`
	LastPrompt  string `json:"lastPrompt"`
}

// Read reads a transcript: its id is the file's name; the cwd is the first
// record's that says one; a turn is a person's prompt (not a tool result,
// not a command's output); the title is the person's own (custom-title),
// else Claude's (ai-title, summary), else the first prompt.
func (c Claude) Read(path string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	return readClaude(strings.TrimSuffix(filepath.Base(path), ".jsonl"), f)
}

func readClaude(id string, in io.Reader) (Session, error) {
	s := Session{ID: id}
	var custom, ai, first, last string
	err := lines(in, func(line []byte) bool {
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil {
			return true
		}
		if s.Cwd == "" && r.Cwd != "" {
			s.Cwd = r.Cwd
		}
		if r.Timestamp.After(s.UpdatedAt) {
			s.UpdatedAt = r.Timestamp
		}
		switch r.Type {
		case "custom-title":
			custom = r.CustomTitle
		case "ai-title":
			ai = r.AITitle
		case "summary":
			if ai == "" {
				ai = r.Summary
			}
		case "last-prompt":
			last = r.LastPrompt
		case "user":
			if r.IsMeta || r.IsSidechain || r.Message == nil {
				break
			}
			if p, ok := claudePrompt(r.Message.Content); ok {
				s.Turns++
				if first == "" {
					first = p
				}
			}
		}
		return true
	})
	if err != nil {
		return Session{}, err
	}
	for _, t := range []string{custom, ai, first, last} {
		if t = shorten(t, titleRunes); t != "" {
			s.Title = t
			break
		}
	}
	return s, nil
}

// claudePrompt is the person's text of a user record's content, and whether
// it is a prompt at all: a string, or blocks with text or an image and no
// tool result. Text Claude Code adds itself starts with "<"
// (<system-reminder>, <command-name>, <local-command-stdout>).
func claudePrompt(content json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		s = strings.TrimSpace(s)
		return s, s != "" && !strings.HasPrefix(s, "<")
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return "", false
	}
	text, prompt := "", false
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			return "", false
		case "image", "document":
			prompt = true
		case "text":
			t := strings.TrimSpace(b.Text)
			if t != "" && !strings.HasPrefix(t, "<") {
				prompt = true
				if text == "" {
					text = t
				}
			}
		}
	}
	return text, prompt
}

// claudeLive is a running Claude Code's registry entry.
type claudeLive struct {
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	ProcStart string `json:"procStart"`
}

// Running reads <Dir>/sessions/<pid>.json: an entry counts while its pid
// lives and started when the entry says (a reused pid is another program;
// a killed Claude Code leaves its entry behind).
func (c Claude) Running(ctx context.Context) (map[string]Live, error) {
	entries, err := os.ReadDir(filepath.Join(c.Dir, "sessions"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Live{}
	var panes PaneFinder
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(c.Dir, "sessions", e.Name()))
		if err != nil {
			continue
		}
		var l claudeLive
		if json.Unmarshal(b, &l) != nil || l.PID <= 0 || l.SessionID == "" {
			continue
		}
		if !claudecode.Alive(l.PID, l.ProcStart) {
			continue
		}
		if panes == nil {
			find := c.Panes
			if find == nil {
				find = TmuxPanes
			}
			if panes, err = find(ctx); err != nil {
				panes = PaneFinder{}
			}
		}
		out[l.SessionID] = Live{PID: l.PID, Where: panes.Where(l.PID)}
	}
	return out, nil
}
