// Answering cards: pressing a menu's option, a rejection with words, a
// question's pages.

package tmux

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

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
	if err != nil || n < 1 || n > len(m.Options) || m.Options[n-1].Terminal {
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
	if s.dialect == pane.GeminiCLI {
		// Gemini's "No, suggest changes" cancels the turn and takes no words:
		// they are the person's next message (the router sends them).
		return fmt.Errorf("tmux: Gemini CLI: %w", driver.ErrNoWords)
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
