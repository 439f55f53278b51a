package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
)

// ProjectDir is where Claude Code keeps the transcripts of sessions run in
// cwd: <config dir>/projects/<cwd with every non-alphanumeric character
// replaced by "-">.
func ProjectDir(configDir, cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return filepath.Join(configDir, "projects", string(b))
}

// configDir is Claude Code's config folder for spec's environment.
func configDir(spec driver.Spec) (string, error) {
	d, err := claudecode.ConfigDir(spec.Env)
	if err != nil {
		return "", fmt.Errorf("stream: %w", err)
	}
	return d, nil
}

// projectDirs are the folders that may hold transcripts of sessions run in
// spec.Cwd: Claude Code may name it after the path as given or resolved.
func projectDirs(spec driver.Spec) []string {
	dir, err := configDir(spec)
	if err != nil {
		return nil
	}
	dirs := []string{ProjectDir(dir, spec.Cwd)}
	if real, err := filepath.EvalSymlinks(spec.Cwd); err == nil && real != spec.Cwd {
		dirs = append(dirs, ProjectDir(dir, real))
	}
	return dirs
}

// transcriptHas reports whether session id's transcript holds the person's
// message p, recorded no earlier than it was written to stdin.
func (s *session) transcriptHas(id string, p *sent) bool {
	return transcriptHolds(s.projects, id, p.text, p.at)
}

// CheckDelivery implements driver.DeliveryChecker: a message parley was
// delivering when it stopped reached Claude Code when the session's transcript
// holds it (a resumed session has it). Its absence proves nothing: Claude Code
// may have asked the model and died before it kept the message, or (left
// running by a parley killed under it) not have written it yet.
func (d *Driver) CheckDelivery(ctx context.Context, spec driver.Spec, m driver.Sent) (driver.Verdict, string) {
	if spec.ResumeID == "" {
		return driver.VerdictUnknown, "Claude Code had not named its session yet, so no transcript can say"
	}
	if transcriptHolds(projectDirs(spec), spec.ResumeID, m.Text, m.At) {
		return driver.Delivered, "Claude Code's transcript holds it"
	}
	return driver.VerdictUnknown, "Claude Code's transcript of session " + spec.ResumeID + " does not hold it, but Claude Code may have taken it and not kept it"
}

// transcriptHolds reports whether session id's transcript, in one of dirs,
// holds a person's message with text, recorded no earlier than since.
func transcriptHolds(dirs []string, id, text string, since time.Time) bool {
	if id == "" {
		return false
	}
	since = since.Truncate(time.Millisecond)
	want := strings.TrimSpace(text)
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, id+".jsonl"))
		if err != nil {
			continue
		}
		found := false
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
		for sc.Scan() && !found {
			var e struct {
				Type      string    `json:"type"`
				Timestamp time.Time `json:"timestamp"`
				Message   *message  `json:"message"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "user" || e.Message == nil || e.Timestamp.Before(since) {
				continue
			}
			var text string
			if json.Unmarshal(e.Message.Content, &text) == nil {
				found = strings.TrimSpace(text) == want
				continue
			}
			for _, b := range e.Message.Blocks() {
				found = found || b.Type == "text" && strings.TrimSpace(b.Text) == want
			}
		}
		f.Close()
		if found {
			return true
		}
	}
	return false
}

// titleScanLines bounds how far into a transcript the title is looked for.
const titleScanLines = 200

// ListSessions lists Claude Code's own sessions for spec.Cwd, newest first.
func (d *Driver) ListSessions(ctx context.Context, spec driver.Spec) ([]driver.NativeSession, error) {
	dir, err := configDir(spec)
	if err != nil {
		return nil, err
	}
	proj := ProjectDir(dir, spec.Cwd)
	if _, err := os.Stat(proj); err != nil {
		// Claude Code may have named the folder after the resolved path.
		if real, rerr := filepath.EvalSymlinks(spec.Cwd); rerr == nil {
			proj = ProjectDir(dir, real)
		}
	}
	entries, err := os.ReadDir(proj)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream: list sessions: %w", err)
	}
	var out []driver.NativeSession
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("stream: list sessions: %w", err)
		}
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		title, err := transcriptTitle(filepath.Join(proj, e.Name()))
		if err != nil {
			d.log.Debug("claude transcript unreadable", "path", filepath.Join(proj, e.Name()), "err", err)
			continue
		}
		out = append(out, driver.NativeSession{ID: id, Cwd: spec.Cwd, Title: title, UpdatedAt: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UpdatedAt.After(out[j].UpdatedAt) })
	return out, nil
}

// transcriptTitle is a transcript's summary line, else its first prompt.
func transcriptTitle(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	first := ""
	for n := 0; sc.Scan() && n < titleScanLines; n++ {
		var e struct {
			Type    string `json:"type"`
			Summary string `json:"summary"`
			Message *struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Type == "summary" && e.Summary != "" {
			return e.Summary, nil
		}
		if first != "" || e.Type != "user" || e.Message == nil {
			continue
		}
		var s string
		if json.Unmarshal(e.Message.Content, &s) == nil && s != "" && !strings.HasPrefix(s, "<") {
			first = s
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return shorten(first, 80), nil
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
