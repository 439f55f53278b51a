package tmux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux/ctl"
	"github.com/parleyhq/parley/internal/driver/tmux/hook"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
	"github.com/parleyhq/parley/internal/driver/tmux/transcript"
)

// run follows the pane and the hooks until Close or until the session ends.
func (s *session) run() {
	defer close(s.done)
	var pokes <-chan struct{}
	if s.hooks != nil {
		pokes = s.hooks.Pokes()
	}
	redraft := time.NewTimer(time.Hour)
	redraft.Stop()
	defer redraft.Stop()
	for {
		changed := s.ctl.Changed()
		s.scan()
		if d := s.draftWait(); d > 0 {
			redraft.Reset(d) // a change came too soon after the last draft: look again then
		}
		select {
		case <-s.stop:
			return
		case <-redraft.C:
		case <-changed:
		case <-pokes:
			s.readSpool()
		case <-s.ctl.Done():
			s.ended()
			return
		}
	}
}

func (s *session) ended() {
	s.mu.Lock()
	closed := s.closed
	s.card = nil // the lane closes every card at the exit
	s.mu.Unlock()
	if closed {
		return
	}
	// The pane closes when the agent exits: nothing tells a crash from a quit.
	s.sink.Exited(nil)
}

// menuKey identifies a menu across redraws (the cursor and typed text move).
func menuKey(m pane.Menu) string {
	kind := m.Kind
	if kind == pane.MenuReview {
		kind = pane.MenuQuestion
	}
	return kind + "\x00" + m.Title + "\x00" + m.Question + "\x00" + strconv.Itoa(len(m.Options))
}

// paneMenuID is what a menu's content contributes to its card id.
func paneMenuID(m pane.Menu) string {
	return menuKey(m) + "\x00" + strings.Join(m.Detail, "\n")
}

// sawMenu (s.mu held) notes what the pane shows: each time a menu leaves the
// screen, or another takes its place, the appearance count rises, so a menu
// drawn again later (the same Bash command asked twice) is a new card. A menu
// redrawn in place (its cursor moved) keeps its count.
func (s *session) sawMenu(m pane.Menu, live bool) {
	key := ""
	if live {
		key = paneMenuID(m)
	}
	if s.onScreen != "" && s.onScreen != key {
		s.appearance++
	}
	s.onScreen = key
}

// menuLeft is called after an answer: if the answered menu is no longer on
// the pane, it has left the screen (the scanner, kept out while the answer
// pressed keys, may never see the pane without it before the next one).
func (s *session) menuLeft(ctx context.Context, answered pane.Menu) {
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return
	}
	m, live, _ := scr.Menu()
	if live && paneMenuID(m) == paneMenuID(answered) {
		return // still drawn: the scanner sees it go
	}
	s.mu.Lock()
	if s.onScreen == paneMenuID(answered) {
		s.sawMenu(pane.Menu{}, false)
	}
	s.mu.Unlock()
}

// scan turns the live menu on the pane into a card, and withdraws a card
// whose menu is gone. The pane decides; memory only remembers ids.
func (s *session) scan() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	captured := time.Now()
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return
	}
	m, live, _ := scr.Menu()
	s.draft(ctx, scr, captured, live)
	if live && m.Kind == pane.MenuReview {
		return // the last page of a question being answered
	}
	s.mu.Lock()
	card := s.card
	answering := s.answering
	if !answering {
		s.sawMenu(m, live)
	}
	s.mu.Unlock()
	if answering || (card != nil && live && menuKey(card.menu) == menuKey(m)) {
		return // an answer owns the menu until it is done
	}
	if card != nil {
		s.mu.Lock()
		s.card = nil
		wasAnswered := s.answered[card.id]
		s.answered[card.id] = true
		s.mu.Unlock()
		if !wasAnswered {
			s.sink.CardWithdrawn(card.id)
		}
	}
	if !live {
		return
	}
	s.readSpool() // a PreToolUse hook ran before the menu drew: its tool_use_id names the card
	c := s.newCard(m)
	s.mu.Lock()
	if s.answered[c.id] || s.closed {
		s.mu.Unlock()
		return
	}
	s.card = c
	s.mu.Unlock()
	if c.kind == chat.CardPermission {
		s.sink.Event(permissionRequest(c))
	} else {
		s.sink.Event(c.question)
	}
}

func (s *session) newCard(m pane.Menu) *openCard {
	c := &openCard{menu: m}
	tool := claudecode.AskUserQuestion
	if m.Kind == pane.MenuPermission {
		c.kind = chat.CardPermission
		tool, _, _ = strings.Cut(m.Title, " ")
	} else {
		c.kind = chat.CardQuestion
	}
	s.mu.Lock()
	ev, ok := s.preTool[tool]
	f := s.follower
	s.mu.Unlock()
	if ok && ev.ToolUseID != "" && (f == nil || !f.Answered(ev.ToolUseID)) {
		c.toolUseID = ev.ToolUseID
		c.id = ev.ToolUseID
		c.input = ev.ToolInput
	} else {
		// Without a tool-use id the pane is all there is: the menu's content
		// and which appearance of it this is. The same command asked again is
		// a new card, not the answered one.
		s.mu.Lock()
		n := s.appearance
		s.mu.Unlock()
		sum := sha256.Sum256([]byte(paneMenuID(m) + "\x00" + strconv.FormatUint(n, 10)))
		c.id = "pane-" + hex.EncodeToString(sum[:8])
	}
	if c.kind == chat.CardQuestion {
		c.question = chat.Question{RequestID: c.id}
		if ok && len(ev.ToolInput) > 0 {
			c.question.Questions = claudecode.Questions(ev.ToolInput)
		}
		if len(c.question.Questions) == 0 {
			item := chat.QuestionItem{Question: m.Question, Header: m.Title, MultiSelect: m.MultiSelect}
			for _, o := range m.Choices() {
				item.Options = append(item.Options, chat.QuestionOption{Label: o.Label, Description: o.Description})
			}
			c.question.Questions = []chat.QuestionItem{item}
		}
	}
	return c
}

func permissionRequest(c *openCard) chat.PermissionRequest {
	m := c.menu
	tool, _, _ := strings.Cut(m.Title, " ")
	title := strings.Join(append([]string{m.Title}, m.Detail...), ": ")
	pr := chat.PermissionRequest{RequestID: c.id, Tool: chat.PermissionTool{Name: tool, Title: title, Input: c.input, ToolCallID: c.toolUseID}}
	for _, o := range m.Options {
		pr.Options = append(pr.Options, chat.PermissionOption{ID: strconv.Itoa(o.Number), Label: o.Label, Kind: optionKind(o.Label)})
	}
	return pr
}

func optionKind(label string) string {
	l := strings.ToLower(label)
	switch {
	case strings.HasPrefix(l, "yes") && (strings.Contains(l, "always") || strings.Contains(l, "don't ask") || strings.Contains(l, "allow all")):
		return chat.OptionAllowAlways
	case strings.HasPrefix(l, "yes"):
		return chat.OptionAllowOnce
	}
	return chat.OptionRejectOnce
}

// readSpool reads the hook events added since last time.
func (s *session) readSpool() {
	evs, err := s.spool.Read()
	if err != nil {
		s.log.Debug("hook spool", "err", err)
		return
	}
	for _, e := range evs {
		s.hookEvent(e)
	}
}

func (s *session) hookEvent(e hook.Event) {
	s.mu.Lock()
	s.hooksWork = true
	s.lastHook = time.Now()
	s.heard()
	s.mu.Unlock()
	switch e.Name {
	case "SessionStart":
		if e.SessionID != "" {
			s.mu.Lock()
			s.sessionID = e.SessionID
			s.mu.Unlock()
			s.sink.SessionID(e.SessionID)
		}
		if e.TranscriptPath != "" {
			var skip int64
			if e.Source == "resume" || s.adopted {
				skip = transcript.SkipAll
			}
			s.follow(e.TranscriptPath, skip, time.Time{})
		}
	case "UserPromptSubmit":
		s.newTurnDrafts()
		s.mu.Lock()
		s.turn, s.stopSeen, s.endSeen = true, false, false
		s.turnPrompt, s.turnAt = e.Prompt, -1
		if !s.replaying {
			s.turnAt = s.promptsGone + len(s.prompts)
			if len(s.prompts) == maxPrompts {
				// Only a send in flight looks back, and never this far.
				s.prompts = append(s.prompts[:0], s.prompts[maxPrompts/2:]...)
				s.promptsGone += maxPrompts / 2
			}
			s.prompts = append(s.prompts, e.Prompt)
			s.heard()
		}
		s.mu.Unlock()
	case "PreToolUse":
		s.mu.Lock()
		s.preTool[e.ToolName] = e
		s.mu.Unlock()
	case "Stop":
		if s.replaying {
			s.mu.Lock()
			s.turn = false
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.stopSeen = true
		if s.turn && !s.endSeen && s.stopTimer == nil {
			// The hook can fire before Claude Code writes the turn's words to the
			// transcript: wait for its end of turn, a little.
			s.stopTimer = time.AfterFunc(stopWait, s.endTurnFromStop)
		}
		s.mu.Unlock()
		s.maybeEndTurn()
	}
}

// heard (s.mu held) wakes whoever waits on the hooks: a prompt, a turn's end.
func (s *session) heard() {
	close(s.promptSeen)
	s.promptSeen = make(chan struct{})
}

// maxPrompts bounds the hooks' prompts kept for sends to look back on.
const maxPrompts = 64

// promptMark returns where the hooks' prompts stand now, and whether a send
// can be proven by them (the hooks have been heard from).
func (s *session) promptMark() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.promptsGone + len(s.prompts), s.useHooks && s.hooksWork
}

// promptSince reports whether a prompt holding text was submitted after mark
// (by the hook; a prompt glued to other typing holds it too).
func (s *session) promptSince(mark int, text string) bool {
	want := pane.Normalize(text)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prompts[min(max(0, mark-s.promptsGone), len(s.prompts)):] {
		if strings.Contains(pane.Normalize(p), want) {
			return true
		}
	}
	return false
}

// stopWait bounds how long the Stop hook waits for the transcript to catch up.
const stopWait = 3 * time.Second

func (s *session) endTurnFromStop() {
	s.mu.Lock()
	f := s.follower
	s.endSeen = true // the transcript said nothing in time: end the turn anyway
	s.mu.Unlock()
	if f != nil {
		f.Sync()
	}
	s.maybeEndTurn()
}

// maybeEndTurn ends the turn once the Stop hook and the transcript agree.
func (s *session) maybeEndTurn() {
	s.draftMu.Lock() // no draft of the turn after its end
	defer s.draftMu.Unlock()
	s.mu.Lock()
	end := s.turn && s.stopSeen && s.endSeen
	report := end && s.ownsTurn()
	if end {
		s.turn = false
		s.heard()
		if s.stopTimer != nil {
			s.stopTimer.Stop()
			s.stopTimer = nil
		}
	}
	s.mu.Unlock()
	if report {
		s.sink.TurnEnded(chat.StopEndTurn)
	}
}

// ownsTurn (s.mu held) reports whether the hooks' running turn may be the
// lane's: any turn when no send is in flight, but while one is, only the
// turn of a prompt holding its text. A turn typed at the terminal (or left
// over from before) that ends while a send waits to type is not the send's:
// reported, it would end the send's turn the moment it is submitted, and
// the next message (or a kill) would follow while the agent has not yet
// sent this one to its model.
//
// A prompt submitted before the send began is never the send's, whatever its
// text: a stopped "yes, do it the other way" ending while "yes" waits.
func (s *session) ownsTurn() bool {
	if s.sending == "" {
		return true
	}
	return s.turnAt >= s.sendFrom && strings.Contains(pane.Normalize(s.turnPrompt), pane.Normalize(s.sending))
}

// beginSend marks a send of text in flight ("" ends it): from now on, a
// turn is the send's only if its prompt comes after this and holds the text.
func (s *session) beginSend(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sending, s.sendFrom = text, s.promptsGone+len(s.prompts)
}

func (s *session) follow(path string, skip int64, since time.Time) {
	s.mu.Lock()
	if s.transcript == path || s.closed {
		s.mu.Unlock()
		return
	}
	old := s.follower
	s.follower = nil
	s.transcript = path
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	f, err := transcript.Follow(path, skip, since, s.transcriptEvent, s.log)
	if err != nil {
		s.log.Warn("cannot follow the transcript", "err", err)
		return
	}
	s.mu.Lock()
	s.follower = f
	s.mu.Unlock()
}

// transcriptEvent passes the transcript's updates on. Its turn ends count
// only without hooks: with them, the Stop hook ends the turn.
func (s *session) transcriptEvent(p chat.Payload) {
	if _, ok := p.(transcript.TurnEnd); !ok {
		s.final(p)
		return
	}
	if s.useHooks {
		s.mu.Lock()
		s.endSeen = true
		s.mu.Unlock()
		s.maybeEndTurn()
		return
	}
	s.draftMu.Lock()
	defer s.draftMu.Unlock()
	s.mu.Lock()
	turn := s.turn
	s.turn = false
	s.mu.Unlock()
	if turn {
		s.sink.TurnEnded(chat.StopEndTurn)
	}
}

// afterSubmit, for a session without hooks (one adopted from a person), marks
// the turn begun and looks for the transcript that holds the prompt just sent.
func (s *session) afterSubmit(text string, sent time.Time) {
	if s.useHooks {
		return
	}
	s.mu.Lock()
	s.turn = true
	found := s.follower != nil || s.closed
	if !found {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if found {
		return
	}
	go func() {
		defer s.wg.Done()
		s.findTranscript(text, sent)
	}()
}

// findTranscript finds the adopted agent's transcript by the prompt it holds
// (FindByPrompt), watching its folder, for up to two minutes (a loaded
// machine can take long to start writing it).
func (s *session) findTranscript(text string, sent time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cwd, err := s.query(ctx, "display-message", "-p", "-t", s.pane, "#{pane_current_path}")
	if err != nil {
		return
	}
	dir := transcript.ProjectDir(s.claudeDir(ctx), strings.TrimSpace(cwd))
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	_ = w.Add(dir) // a folder that does not exist yet is found by the ticker
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if path, at, ok := transcript.FindByPrompt(dir, text, sent); ok {
			s.log.Info("following the adopted session's transcript", "path", path, "after", time.Since(sent).Round(time.Millisecond))
			s.follow(path, 0, at)
			return
		}
		select {
		case <-w.Events:
		case <-tick.C:
		case <-s.stop:
			return
		case <-ctx.Done():
			s.log.Info("no transcript holds the prompt; replies will not be followed", "dir", dir)
			return
		}
	}
}

// claudeDir is the adopted agent's Claude Code config folder: its session's
// CLAUDE_CONFIG_DIR or HOME (as tmux has them), else this user's.
func (s *session) claudeDir(ctx context.Context) string {
	get := func(args ...string) string {
		out, err := s.query(ctx, args...)
		if err != nil {
			return ""
		}
		k, v, ok := strings.Cut(strings.TrimSpace(out), "=")
		if !ok || strings.HasPrefix(k, "-") {
			return ""
		}
		return v
	}
	for _, scope := range [][]string{{"-t", ctl.SessionTarget(s.name)}, {"-g"}} {
		if d := get(append(append([]string{"show-environment"}, scope...), "CLAUDE_CONFIG_DIR")...); d != "" {
			return d
		}
		if h := get(append(append([]string{"show-environment"}, scope...), "HOME")...); h != "" {
			return filepath.Join(h, ".claude")
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// takeCard checks that id is the open card of kind and that its menu is live
// on the pane now, and marks it answered before any key is pressed (so the
// scanner does not withdraw it as the menu goes).
func (s *session) takeCard(ctx context.Context, id, kind string) (*openCard, pane.Menu, error) {
	s.mu.Lock()
	c := s.card
	s.mu.Unlock()
	if c == nil || c.id != id || c.kind != kind {
		return nil, pane.Menu{}, fmt.Errorf("tmux: card %s: %w", id, driver.ErrUnknownCard)
	}
	scr, err := s.captureVisible(ctx)
	if err != nil {
		return nil, pane.Menu{}, err
	}
	m, live, why := scr.Menu()
	if !live || menuKey(m) != menuKey(c.menu) {
		return nil, pane.Menu{}, fmt.Errorf("tmux: card %s is not on the pane (%s): %w", id, why, driver.ErrUnknownCard)
	}
	s.mu.Lock()
	s.answered[id] = true
	s.answering = true
	s.mu.Unlock()
	return c, m, nil
}

func (s *session) release(id string) {
	s.mu.Lock()
	if s.card != nil && s.card.id == id {
		s.card = nil
	}
	s.answering = false
	s.mu.Unlock()
}

// AnswerPermission presses the digit of the chosen option.
func (s *session) AnswerPermission(ctx context.Context, requestID string, a driver.PermissionAnswer) error {
	s.kbd.Lock()
	defer s.kbd.Unlock()
	c, m, err := s.takeCard(ctx, requestID, chat.CardPermission)
	if err != nil {
		return err
	}
	press := s.pressOption
	if a.Message != "" {
		press = func(ctx context.Context, c *openCard, m pane.Menu, id string) error {
			return s.amendOption(ctx, c, m, id, a.Message)
		}
	}
	if err := press(ctx, c, m, a.OptionID); err != nil {
		s.unanswer(requestID)
		return err
	}
	s.menuLeft(ctx, c.menu)
	s.release(requestID)
	return nil
}

func (s *session) pressOption(ctx context.Context, c *openCard, m pane.Menu, optionID string) error {
	n, err := strconv.Atoi(optionID)
	if err != nil || n < 1 || n > len(m.Options) {
		return fmt.Errorf("tmux: option %q is not on the menu: %w", optionID, chat.ErrBadInput)
	}
	if err := s.c.SendKeys(ctx, s.pane, strconv.Itoa(n)); err != nil {
		return s.goneErr(err)
	}
	return s.waitMenuLeft(ctx, c.menu)
}

func (s *session) unanswer(id string) {
	s.mu.Lock()
	delete(s.answered, id)
	s.answering = false
	s.mu.Unlock()
}

// amendOption answers with the person's words: the cursor to the option, Tab
// ("Tab to amend": "No, and tell Claude what to do differently"), the text,
// Enter. Claude Code hands the words to the model with the rejection.
func (s *session) amendOption(ctx context.Context, c *openCard, m pane.Menu, optionID, message string) error {
	n, err := strconv.Atoi(optionID)
	if err != nil || n < 1 || n > len(m.Options) {
		return fmt.Errorf("tmux: option %q is not on the menu: %w", optionID, chat.ErrBadInput)
	}
	if optionKind(m.Options[n-1].Label) != chat.OptionRejectOnce {
		// Only a rejection takes words; an allow with a message is just an allow.
		return s.pressOption(ctx, c, m, optionID)
	}
	key, times := "Down", n-m.Cursor
	if times < 0 {
		key, times = "Up", -times
	}
	if err := s.c.SendKeysN(ctx, s.pane, key, times); err != nil {
		return s.goneErr(err)
	}
	onOption := func(scr *pane.Screen) (pane.Menu, bool) {
		mm, live, _ := scr.Menu()
		return mm, live && mm.Kind == pane.MenuPermission && mm.Cursor == n
	}
	if _, ok, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool { _, ok := onOption(scr); return ok }); err != nil || !ok {
		return errOr(err, fmt.Errorf("%w: the menu's cursor did not reach option %d", ErrKeyboard, n))
	}
	if err := s.c.SendKeys(ctx, s.pane, "Tab"); err != nil {
		return s.goneErr(err)
	}
	if _, ok, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		mm, ok := onOption(scr)
		return ok && strings.Contains(mm.Options[n-1].Label, "tell Claude")
	}); err != nil || !ok {
		return errOr(err, fmt.Errorf("%w: the menu did not open the option for words", ErrKeyboard))
	}
	if err := s.c.SendLiteral(ctx, s.pane, message); err != nil {
		return s.goneErr(err)
	}
	want := pane.Normalize(message)
	if _, ok, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		mm, ok := onOption(scr)
		return ok && strings.HasSuffix(pane.Normalize(mm.Options[n-1].Label), want)
	}); err != nil || !ok {
		return errOr(err, fmt.Errorf("%w: the words did not appear in the menu", ErrKeyboard))
	}
	if err := s.c.SendKeys(ctx, s.pane, "Enter"); err != nil {
		return s.goneErr(err)
	}
	_, ok, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		mm, live, _ := scr.Menu()
		return !live || menuKey(mm) != menuKey(c.menu)
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the menu did not take the answer", ErrKeyboard)
	}
	return nil
}

func errOr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// waitMenuLeft waits until the pane no longer shows that menu unchanged.
func (s *session) waitMenuLeft(ctx context.Context, prev pane.Menu) error {
	_, ok, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		m, live, _ := scr.Menu()
		return !live || menuKey(m) != menuKey(prev) || m.Cursor != prev.Cursor || !sameChecks(m, prev)
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the menu did not take the answer", ErrKeyboard)
	}
	return nil
}

func sameChecks(a, b pane.Menu) bool {
	if len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if a.Options[i].Checked != b.Options[i].Checked || a.Options[i].Label != b.Options[i].Label {
			return false
		}
	}
	return true
}

// AnswerQuestion answers the picker page by page: a label's digit, the
// "Type something." option and the person's words, digits to toggle a
// multi-select and then its review page's "Submit answers".
func (s *session) AnswerQuestion(ctx context.Context, requestID string, a driver.QuestionAnswer) error {
	s.kbd.Lock()
	defer s.kbd.Unlock()
	c, _, err := s.takeCard(ctx, requestID, chat.CardQuestion)
	if err != nil {
		return err
	}
	if err := s.answerPicker(ctx, c.question.Questions, a); err != nil {
		s.unanswer(requestID)
		return err
	}
	s.menuLeft(ctx, c.menu)
	s.release(requestID)
	return nil
}

func (s *session) answerPicker(ctx context.Context, items []chat.QuestionItem, a driver.QuestionAnswer) error {
	if len(a.Answers) == 0 {
		return fmt.Errorf("tmux: a reply without answers cannot be typed into the picker: %w", driver.ErrUnsupported)
	}
	for step := 0; step < 12; step++ {
		scr, err := s.captureVisible(ctx)
		if err != nil {
			return err
		}
		m, live, _ := scr.Menu()
		if !live {
			return nil
		}
		if err := s.answerPage(ctx, m, items, a.Answers); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the question picker did not close", ErrKeyboard)
}

// pageQuestion finds the card's question shown on a picker page. The pane may
// show a long question wrapped, so its last line is matched against the end.
func pageQuestion(m pane.Menu, items []chat.QuestionItem, answers chat.Answers) (chat.QuestionItem, chat.Answer, bool) {
	shown := pane.Normalize(m.Question)
	find := func(q string) bool {
		n := pane.Normalize(q)
		return q == m.Question || (shown != "" && strings.HasSuffix(n, shown))
	}
	var item chat.QuestionItem
	for _, it := range items {
		if find(it.Question) {
			item = it
			break
		}
	}
	for k, v := range answers {
		if find(k) {
			if item.Question == "" {
				item.Question = k
			}
			return item, v, true
		}
	}
	if len(answers) == 1 {
		for k, v := range answers {
			if item.Question == "" {
				item.Question = k
			}
			return item, v, true
		}
	}
	return item, chat.Answer{}, false
}

// optionFor returns the picker option for a label: by the card's own order of
// options when it has them (the picker numbers them in that order, and a long
// label may wrap on the screen), else by the label on the pane.
func optionFor(m pane.Menu, item chat.QuestionItem, label string) (pane.Option, bool) {
	for i, o := range item.Options {
		if o.Label == label && i < len(m.Options) && !m.Options[i].Free && !m.Options[i].Chat {
			return m.Options[i], true
		}
	}
	o, ok := m.Option(label)
	return o, ok && !o.Free && !o.Chat
}

func (s *session) answerPage(ctx context.Context, m pane.Menu, items []chat.QuestionItem, answers chat.Answers) error {
	key := func(k string) error {
		if err := s.c.SendKeys(ctx, s.pane, k); err != nil {
			return s.goneErr(err)
		}
		return s.waitMenuLeft(ctx, m)
	}
	switch m.Kind {
	case pane.MenuReview:
		return key("1") // "Submit answers"
	case pane.MenuPermission:
		return fmt.Errorf("tmux: a permission menu is open, not the question: %w", driver.ErrUnknownCard)
	}
	item, v, ok := pageQuestion(m, items, answers)
	if !ok {
		return fmt.Errorf("tmux: no answer for %q: %w", m.Question, chat.ErrBadInput)
	}
	labels := v.Words()
	if m.MultiSelect {
		want := map[int]bool{}
		for _, l := range labels {
			o, found := optionFor(m, item, l)
			if !found {
				return fmt.Errorf("tmux: %q is not an option of %q: %w", l, m.Question, chat.ErrBadInput)
			}
			want[o.Number] = true
		}
		for _, o := range m.Choices() {
			if o.Checked != want[o.Number] {
				if err := key(strconv.Itoa(o.Number)); err != nil {
					return err
				}
				scr, err := s.captureVisible(ctx)
				if err != nil {
					return err
				}
				if m, _, _ = scr.Menu(); m.Kind != pane.MenuQuestion {
					return nil
				}
			}
		}
		return key("Right") // on to the review page
	}
	if len(labels) != 1 {
		return fmt.Errorf("tmux: %q takes one answer: %w", m.Question, chat.ErrBadInput)
	}
	if o, found := optionFor(m, item, labels[0]); found {
		return key(strconv.Itoa(o.Number))
	}
	// The person's own words: "Type something.", the text, Enter.
	free, found := m.FreeOption()
	if !found {
		return fmt.Errorf("tmux: %q takes no free text: %w", m.Question, chat.ErrBadInput)
	}
	if err := key(strconv.Itoa(free.Number)); err != nil {
		return err
	}
	if err := s.c.SendLiteral(ctx, s.pane, labels[0]); err != nil {
		return s.goneErr(err)
	}
	want := pane.Normalize(labels[0])
	_, typed, err := s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		mm, live, _ := scr.Menu()
		if !live {
			return false
		}
		for _, o := range mm.Options {
			if o.Number == free.Number && pane.Normalize(o.Label) == want {
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	if !typed {
		return fmt.Errorf("%w: the free answer did not appear in the picker", ErrKeyboard)
	}
	if err := s.c.SendKeys(ctx, s.pane, "Enter"); err != nil {
		return s.goneErr(err)
	}
	_, ok, err = s.waitFor(ctx, s.step, func(scr *pane.Screen) bool {
		mm, live, _ := scr.Menu()
		return !live || mm.Kind == pane.MenuReview || mm.Question != m.Question
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the picker did not take the free answer", ErrKeyboard)
	}
	return nil
}
