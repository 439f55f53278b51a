package acp

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver"
)

// Gemini CLI (0.61.0) names a chat file after the minute its recording began
// (UTC, session-YYYY-MM-DDTHH-MM-<id8>.jsonl) and, on session/load, starts a
// recording under the loaded session's id before it reads the session: in a
// later minute that is a new stub file beside the transcript, but in the
// transcript's own minute it appends to the transcript a header and a
// "$set messages" of its context message only. That line replaces the whole
// conversation as Gemini reads the file, so the load then finds nothing to
// resume ("No previous sessions found for this project.") and the session is
// lost to Gemini from then on. Loading after that minute is always safe.

// geminiLoadWait is how long to wait, at now, before Gemini CLI may load
// session id whose chats are under dir (~/.gemini): until the minute after
// the newest minute any of its chat files is named for, or 0.
func geminiLoadWait(dir, id string, now time.Time) time.Duration {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return 0
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	var newest time.Time
	for _, p := range files {
		stamp := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "session-"), "-"+id[:8]+".jsonl")
		if t, err := time.Parse("2006-01-02T15-04", stamp); err == nil && t.After(newest) {
			newest = t
		}
	}
	if safe := newest.Add(time.Minute); now.Before(safe) {
		return safe.Sub(now)
	}
	return 0
}

// awaitGeminiLoad waits, when it must, before Gemini CLI loads
// spec.ResumeID (geminiLoadWait): at most a minute, and only for a session
// written in the current minute.
func awaitGeminiLoad(ctx context.Context, spec driver.Spec, logger *slog.Logger) error {
	wait := geminiLoadWait(geminiHome(spec), spec.ResumeID, time.Now().UTC())
	if wait <= 0 {
		return nil
	}
	logger.Info("Gemini session written this minute: waiting before loading it, or Gemini would overwrite it", "session", spec.ResumeID, "wait", wait)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("acp: waiting to load Gemini session %s: %w", spec.ResumeID, ctx.Err())
	}
}
