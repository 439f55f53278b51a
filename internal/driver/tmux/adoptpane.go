// Adopting one pane by its id: a Claude Code TUI a person started by hand in
// any tmux pane, found running (package sessions), driven without a config
// edit and never ended by parley.

package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

// OptPane is the Spec.Options key naming the pane to adopt by its id (%N,
// on the server OptSocket names). Set by parley when a person adopts a
// running session, never by a config: a pane id is no name to keep.
const OptPane = "pane"

// OptAgentPID, with OptPane, is the adopted agent's process: while it runs
// the pane holds the agent, whatever runs in the pane's foreground (a
// person may have started it from a script, under a shell that waits).
const OptAgentPID = "agent_pid"

// OptTUI, with OptPane, names the TUI the pane shows when it is not Claude
// Code's: "gemini" (Gemini CLI, read by package pane's GeminiCLI dialect).
const OptTUI = "tui"

// OptFrom, with OptPane, is the byte of the session's transcript to follow
// from (transcript.ReadTo, kept by the thread): where it stopped reading
// before parley restarted. Without it the transcript is followed from its end.
const OptFrom = "from"

// dialectOf is the screen dialect OptTUI names.
func dialectOf(tui string) (pane.Dialect, error) {
	switch tui {
	case "", "claude":
		return pane.ClaudeCode, nil
	case "gemini":
		return pane.GeminiCLI, nil
	}
	return 0, fmt.Errorf("tmux: adopt: no reader for the TUI %q (claude, gemini)", tui)
}

// adoptedAgentExited says an adopted pane's agent (its pid known) is gone:
// its exit redraws the pane, so the watch loop asks at each change.
func (s *session) adoptedAgentExited() bool {
	return s.agentPID > 0 && !claudecode.Alive(s.agentPID, "")
}

// agentGone says the pane no longer holds the agent: it is dead, or shows
// a shell; for an adopted pane whose agent's pid is known, that process is gone.
func (s *session) agentGone(info ctl.PaneInfo) bool {
	if info.Dead {
		return true
	}
	if s.agentPID > 0 {
		return !claudecode.Alive(s.agentPID, "")
	}
	return shells[info.CurrentCommand]
}

// startOnPane adopts pane paneID: every read and key goes to that pane id,
// the control client follows its session by the session's id ($N, never a
// name a person typed), nothing is started and nothing is killed.
func (s *session) startOnPane(ctx context.Context, spec driver.Spec, paneID string) (driver.Session, error) {
	if !ctl.ValidPaneID(paneID) {
		return nil, fmt.Errorf("tmux: adopt: %q is not a pane id (%%N)", paneID)
	}
	var err error
	if s.dialect, err = dialectOf(spec.Options[OptTUI]); err != nil {
		return nil, err
	}
	info, err := s.c.Pane(ctx, paneID)
	if err != nil {
		return nil, fmt.Errorf("tmux: adopt pane %s: %w", paneID, s.goneErr(err))
	}
	if info.Dead {
		return nil, fmt.Errorf("tmux: adopt pane %s: %w", paneID, ErrDeadPane)
	}
	sid, err := s.c.Run(ctx, "display-message", "-p", "-t", paneID, "#{session_id}")
	if err != nil {
		return nil, fmt.Errorf("tmux: adopt pane %s: %w", paneID, s.goneErr(err))
	}
	if s.d.StateDir == "" {
		return nil, errors.New("tmux: driver has no state directory")
	}
	s.name, s.pane, s.target = paneID, paneID, strings.TrimSpace(sid)
	s.spec, s.adopted = spec, true
	if pid, err := strconv.Atoi(spec.Options[OptAgentPID]); err == nil && pid > 0 {
		s.agentPID = pid
	}
	s.dir = filepath.Join(s.d.StateDir, "pane-"+s.c.Socket()+"-"+paneID[1:])
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("tmux: state dir: %w", err)
	}
	// No hooks: the agent was started by a person, without parley's settings.
	spool := filepath.Join(s.dir, "hooks.jsonl")
	if err := os.Remove(spool); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tmux: old hook spool: %w", err)
	}
	s.spool = hook.OpenSpool(spool)
	if s.ctl, err = s.c.AttachID(ctx, s.target); err != nil {
		return nil, s.goneErr(err)
	}
	if err := s.waitReady(ctx, s.step, true); err != nil {
		s.shutdown(ctx)
		return nil, err
	}
	// The session's earlier turns are the thread's already (imported when
	// it was continued): its transcript (Gemini's chat) is followed from its
	// end, so what is said next, here or typed in the pane, reaches the thread.
	p, ok := s.sessionTranscript(ctx, spec)
	if s.dialect == pane.GeminiCLI {
		p, ok = s.geminiChat(spec)
	}
	if ok {
		if fi, err := os.Stat(p); err == nil {
			from := fi.Size()
			if at, err := strconv.ParseInt(spec.Options[OptFrom], 10, 64); err == nil && at > 0 {
				from = min(at, from) // shorter: rewritten, its place lost; followed from the end
			}
			s.placesOf = p // its place is reported, for a restart to go on from
			s.follow(p, from, time.Time{})
		}
	}
	go s.run()
	return s, nil
}

// sessionTranscript is the transcript of session spec.ResumeID, looked for
// under the agent's config folder and the pane's own.
func (s *session) sessionTranscript(ctx context.Context, spec driver.Spec) (string, bool) {
	if !claudecode.ValidSessionID(spec.ResumeID) {
		return "", false
	}
	var dirs []string
	if d, err := claudecode.ConfigDir(spec.Env); err == nil {
		dirs = append(dirs, d)
	}
	if d := s.claudeDir(ctx); d != "" {
		dirs = append(dirs, d)
	}
	cwds := []string{spec.Cwd}
	if real, err := filepath.EvalSymlinks(spec.Cwd); err == nil && real != spec.Cwd {
		cwds = append(cwds, real)
	}
	for _, d := range dirs {
		for _, cwd := range cwds {
			p := filepath.Join(transcript.ProjectDir(d, cwd), spec.ResumeID+".jsonl")
			if _, err := os.Stat(p); err == nil {
				return p, true
			}
		}
	}
	return "", false
}

// ResumeCommand implements driver.HandBacker for an adopted pane: the
// person's terminal goes back to that pane (attach-session to a pane id
// opens its session with that window and pane selected). Parley's own tmux
// sessions have none: handing one back ends it.
func (d *Driver) ResumeCommand(spec driver.Spec) string {
	p := spec.Options[OptPane]
	if !ctl.ValidPaneID(p) {
		return ""
	}
	words := []string{"tmux"}
	if sock := spec.Options[OptSocket]; sock != "" && sock != "default" {
		words = append(words, "-L", sock)
	}
	return driver.ShellLine(append(words, "attach", "-t", p)...)
}

var _ driver.HandBacker = (*Driver)(nil)
