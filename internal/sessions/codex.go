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

	"github.com/parleyhq/parley/internal/sessions/live"
)

// Codex is Codex's sessions: one rollout file per session at
// <Dir>/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl. Codex writes
// no record of which run now: its process's open rollout says (Running).
type Codex struct {
	// Dir is Codex's home ($CODEX_HOME, else ~/.codex).
	Dir string
}

func (c Codex) Agent() string { return "codex" }

func (c Codex) Files(ctx context.Context, visit func(string, int64, time.Time)) error {
	root := filepath.Join(c.Dir, "sessions")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			return nil // a folder gone meanwhile: the rest still lists
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.Count(strings.TrimPrefix(path, root), string(filepath.Separator)) > 3 {
				return filepath.SkipDir // only YYYY/MM/DD
			}
			return nil
		}
		if !strings.HasPrefix(d.Name(), "rollout-") || !strings.HasSuffix(d.Name(), ".jsonl") {
			return nil
		}
		if info, err := d.Info(); err == nil {
			visit(path, info.Size(), info.ModTime())
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// codexRecord is what the listing needs of a rollout line.
type codexRecord struct {
	Timestamp time.Time `json:"timestamp"`
	Type      string    `json:"type"`
	Payload   struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Cwd     string `json:"cwd"`
		Message string `json:"message"`
	} `json:"payload"`
}

// Read reads a rollout: the id and cwd from its session_meta (the id also
// ends the file's name), a turn per user_message event, the first as title.
func (c Codex) Read(path string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	id := ""
	if name := strings.TrimSuffix(filepath.Base(path), ".jsonl"); len(name) >= 36 {
		id = name[len(name)-36:] // rollout-<time>-<uuid>
	}
	return readCodex(id, f)
}

func readCodex(id string, in io.Reader) (Session, error) {
	s := Session{ID: id}
	err := lines(in, func(line []byte) bool {
		var r codexRecord
		if json.Unmarshal(line, &r) != nil {
			return true
		}
		if r.Timestamp.After(s.UpdatedAt) {
			s.UpdatedAt = r.Timestamp
		}
		switch {
		case r.Type == "session_meta":
			if r.Payload.ID != "" {
				s.ID = r.Payload.ID
			}
			if r.Payload.Cwd != "" {
				s.Cwd = r.Payload.Cwd
			}
		case r.Type == "turn_context" && s.Cwd == "":
			s.Cwd = r.Payload.Cwd
		case r.Type == "event_msg" && r.Payload.Type == "user_message":
			s.Turns++
			if s.Title == "" {
				s.Title = shorten(r.Payload.Message, titleRunes)
			}
		}
		return true
	})
	if err != nil {
		return Session{}, err
	}
	return s, nil
}

// Running implements Runner: Codex writes no record of which sessions run,
// but its process holds the session's rollout open while it runs.
func (c Codex) Running(ctx context.Context) (map[string]Live, error) {
	out := map[string]Live{}
	for id, pid := range live.Codex(ctx, c.Dir) {
		out[id] = Live{PID: pid, Where: where(ctx, pid)}
	}
	return out, nil
}

var _ Runner = Codex{}
