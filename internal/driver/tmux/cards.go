// Cards from the screen: a live menu on the pane becomes a permission or a
// question card, withdrawn when the menu goes. Claude Code's menus and Gemini
// CLI's tool confirmations alike (pane.Screen.Menu reads the dialect).

package tmux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver/claudecode"
	"github.com/parleyhq/parley/internal/driver/tmux/pane"
)

type openCard struct {
	id        string
	kind      string // chat.CardPermission or chat.CardQuestion
	menu      pane.Menu
	toolUseID string
	input     json.RawMessage // the tool's input from the PreToolUse hook: a card shows what it will do (an edit's diff)
	question  chat.Question
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
	s.geminiTurn(scr)
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
		if o.Terminal {
			continue // an editor opened in the terminal is no answer from afar
		}
		pr.Options = append(pr.Options, chat.PermissionOption{ID: strconv.Itoa(o.Number), Label: o.Label, Kind: optionKind(o.Label)})
	}
	return pr
}

// optionKind reads an option's label: Claude Code's "Yes…"/"No…", Gemini
// CLI's "Allow once", "Allow for this session", "No, suggest changes".
func optionKind(label string) string {
	l := strings.ToLower(label)
	switch {
	case strings.HasPrefix(l, "yes") && (strings.Contains(l, "always") || strings.Contains(l, "don't ask") || strings.Contains(l, "allow all")):
		return chat.OptionAllowAlways
	case strings.HasPrefix(l, "yes"), l == "allow once":
		return chat.OptionAllowOnce
	case strings.HasPrefix(l, "allow") && (strings.Contains(l, "session") || strings.Contains(l, "always")):
		return chat.OptionAllowAlways
	}
	return chat.OptionRejectOnce
}
