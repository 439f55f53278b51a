package tmux

import (
	"context"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

// Provisional text. Claude Code writes an answer's words to its transcript
// only once a whole block of them is done (seconds, for a long one), but
// draws them in the pane as they stream. While a turn runs, the words the pane
// shows below the turn's prompt that the transcript has not given yet go out
// as chat.AgentDraft: never stored, each one replacing the last, ended by the
// final words (agent_chunk) the transcript gives. See docs/protocol.md,
// "Provisional text".

// draftEvery bounds how often provisional text is read and sent (≤ 10/s).
const draftEvery = 100 * time.Millisecond

// draftEveryDeep bounds it (≤ 2/s) once the answer's prompt scrolled off the
// screen: each read then captures and parses up to draftHistory lines, and
// the draft (all of a long answer) is sent again: whole to a client that did
// not ask for appends, as what it added to one that did (docs/protocol.md).
const draftEveryDeep = 500 * time.Millisecond

// draftHistory is how far above the visible screen a long answer's prompt is
// looked for once it has scrolled off.
const draftHistory = 2000

// promptDrawn is how long after its hook a prompt surely shows in the pane:
// one found in none of the history's lines after that never will be.
const promptDrawn = 5 * time.Second

// drafts is the provisional text's state, guarded by session.draftMu.
type drafts struct {
	finals []string  // pane.Words of each of the turn's final texts, in order
	last   string    // the draft last sent ("" none, or superseded)
	at     time.Time // when the pane was last read for it
	due    bool      // a change came sooner than every() after that
	deep   bool      // the last read needed the history (see draftEveryDeep)
	since  time.Time // when the turn's prompt was submitted (its hook read)
	// lost: the turn's prompt was in none of the history's lines (a long
	// paste Claude Code folds, say): the history is not read for it again.
	lost bool
}

// every is the least time between two reads of the turn's provisional text.
func (d *drafts) every() time.Duration {
	if d.deep {
		return draftEveryDeep
	}
	return draftEvery
}

// newTurnDrafts starts a turn's provisional text afresh (its prompt was submitted).
func (s *session) newTurnDrafts() {
	s.draftMu.Lock()
	s.drafts = drafts{since: time.Now()}
	s.draftMu.Unlock()
}

// final hands on one of the transcript's updates; its final words are
// remembered, so the pane's drawing of them is never sent as a draft again.
func (s *session) final(p chat.Payload) {
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	switch p := p.(type) {
	case chat.AgentChunk:
		s.drafts.finals = append(s.drafts.finals, pane.Words(p.Text))
		s.drafts.last = "" // the lane and every client drop the draft at the final words
	case chat.ThoughtChunk, chat.ToolCall:
		s.drafts.last = ""
	}
	s.sink.Event(p)
}

// draftWait says how long until a change that came too soon may be read.
func (s *session) draftWait() time.Duration {
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	if !s.drafts.due {
		return 0
	}
	return max(time.Millisecond, s.drafts.every()-time.Since(s.drafts.at))
}

// draft sends the provisional text the pane showed at captured (scr), if it
// changed. Only while a turn of a session with hooks runs (the hook gives the
// turn's prompt, the anchor of its answer) and no menu is up. The pane is
// read with no lock held; what of it is sent is decided under draftMu with
// the final words known then: a screen older than them shows no more than
// they cover, so nothing final is sent again.
func (s *session) draft(ctx context.Context, scr *pane.Screen, captured time.Time, menu bool) {
	s.mu.Lock()
	on := s.useHooks && s.turn && !s.closed && !s.replaying && !menu
	prompt := s.turnPrompt
	s.mu.Unlock()
	s.draftMu.Lock()
	switch {
	case !on:
		s.drafts.due = false
		s.draftMu.Unlock()
		return
	case time.Since(s.drafts.at) < s.drafts.every():
		s.drafts.due = true
		s.draftMu.Unlock()
		return
	}
	s.drafts.at, s.drafts.due = time.Now(), false
	lost := s.drafts.lost
	s.draftMu.Unlock()

	blocks, finished, ok := scr.Answer(prompt)
	deep := !ok && !lost
	s.draftMu.Lock()
	s.drafts.deep = deep
	s.draftMu.Unlock()
	if deep {
		// A long answer pushed its prompt off the screen: read further up.
		out, err := s.query(ctx, ctl.CaptureArgs(s.pane, -draftHistory)...)
		if err != nil {
			return
		}
		if blocks, finished, ok = pane.Read(out).Answer(prompt); !ok && captured.Sub(s.turnSince()) > promptDrawn {
			s.draftMu.Lock()
			s.drafts.lost = true
			s.draftMu.Unlock()
		}
	}
	if !ok || finished {
		// Not placeable (show nothing rather than guess), or a turn that is
		// over: its final words come from the transcript.
		return
	}

	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	s.mu.Lock()
	still := s.turn && !s.closed && s.turnPrompt == prompt
	s.mu.Unlock()
	if !still || captured.Before(s.drafts.since) {
		return // the turn ended, or the screen is older than it
	}
	text := s.drafts.text(blocks)
	if text == s.drafts.last {
		return
	}
	s.drafts.last = text
	s.sink.Event(chat.AgentDraft{Text: text})
}

// turnSince is when the running turn's prompt was submitted.
func (s *session) turnSince() time.Time {
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	return s.drafts.since
}

// text is what of the drawn blocks is not final yet: the blocks after as many
// as the transcript has given, less any whose words are in the final ones (a
// block the pane drew twice, a tool line taken for words).
func (d *drafts) text(blocks []string) string {
	if len(d.finals) >= len(blocks) {
		return ""
	}
	said := strings.Join(d.finals, "")
	var out []string
	for _, b := range blocks[len(d.finals):] {
		if w := pane.Words(b); w == "" || strings.Contains(said, w) {
			continue
		}
		out = append(out, b)
	}
	return strings.Join(out, "\n\n")
}
