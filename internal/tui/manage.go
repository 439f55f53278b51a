package tui

// Managing the shown thread (Ctrl+E): rename, archive, delete, and moving a
// thread whose agent is gone to another agent. Each goes on the socket
// (edit_thread, delete_thread), the path the dashboard takes; the daemon
// answers done or an error naming the ref, and thread_info tells every screen.

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/wire"
)

// manager is the thread menu while it is open.
type manager struct {
	step    string // "" the menu, "rename", "delete", "move"
	title   string // the title typed
	agent   int    // the agent chosen to move to (index in targets)
	context int    // messages given to the new agent as context
	ref     string // the edit sent and not yet answered
	note    string // what happened, or why not
}

// defaultMoveContext is how many earlier messages a move offers to give.
const defaultMoveContext = 10

// agentGone reports whether the shown thread's agent is no longer configured
// (or this build cannot run it): nothing answers until it moves.
func (m *Model) agentGone() bool {
	if m.thread.ID == "" || m.thread.Agent == "" || m.machineGone() {
		return false
	}
	if m.thread.State == chat.ThreadNoAgent {
		return true
	}
	for _, a := range m.cfg.Agents {
		if a.ID == m.thread.Agent && a.Status != "unavailable" && (m.thread.Node == "" || a.Node == m.thread.Node) {
			return false
		}
	}
	return len(m.cfg.Agents) > 0 || m.cfg.Chat != ""
}

// machineGone reports whether, at a cluster's hub, the shown thread's machine
// lists no agent at all: it is not joined to the hub (revoked, or it never
// joined; an offline machine keeps its agents listed). Its agent is not
// what is missing, and no move helps.
func (m *Model) machineGone() bool {
	n := m.thread.Node
	if m.thread.ID == "" || n == "" || m.cfg.Node == "" || n == m.cfg.Node {
		return false
	}
	for _, a := range m.cfg.Agents {
		if a.Node == n {
			return false
		}
	}
	return true
}

// moveTargets are the agents a thread can move to: ready, on its machine.
func (m *Model) moveTargets() []chat.AgentInfo {
	var out []chat.AgentInfo
	for _, a := range m.cfg.Agents {
		if a.Status == "ready" && a.ID != m.thread.Agent && (m.thread.Node == "" || a.Node == m.thread.Node) {
			out = append(out, a)
		}
	}
	return out
}

func (m *Model) openManager() {
	if m.thread.ID == "" {
		m.flash = "no thread yet: send a message first"
		return
	}
	m.manager = &manager{context: defaultMoveContext}
	if m.agentGone() {
		m.manager.step = "move"
	}
	m.layout()
}

func (m *Model) closeManager() {
	m.manager = nil
	m.layout()
}

func (m *Model) managerKey(k tea.KeyPressMsg) tea.Cmd {
	g := m.manager
	m.dirty = true
	defer func() {
		if m.manager != nil {
			m.layout() // the panel's height follows its step
		}
	}()
	key := k.String()
	if key == "esc" {
		if g.step == "" || (g.step == "move" && !m.agentGone()) {
			m.closeManager()
		} else {
			g.step, g.note = "", ""
		}
		return nil
	}
	if g.ref != "" {
		return nil // waiting for the answer
	}
	switch g.step {
	case "":
		switch key {
		case "r":
			g.step, g.title, g.note = "rename", m.thread.Title, ""
		case "a":
			return m.sendEdit(router.ThreadEdit{Archived: ptr(!m.thread.Archived)})
		case "d":
			g.step, g.note = "delete", ""
		case "m":
			if !m.agentGone() {
				g.note = "the agent " + m.thread.Agent + " is still configured: a thread moves only when its agent is gone"
				return nil
			}
			g.step, g.note = "move", ""
		}
	case "rename":
		switch key {
		case "enter":
			return m.sendEdit(router.ThreadEdit{Title: ptr(g.title)})
		case "backspace":
			if r := []rune(g.title); len(r) > 0 {
				g.title = string(r[:len(r)-1])
			}
		default:
			if k.Text != "" {
				g.title += k.Text
			}
		}
	case "delete":
		if key == "y" {
			g.ref = chat.NewID("r")
			g.note = "deleting…"
			return m.sendCmd("delete", g.ref, wire.Frame(wire.TypeDeleteThread, wire.DeleteThread{Ref: g.ref, ThreadID: string(m.thread.ID)}))
		}
	case "move":
		ts := m.moveTargets()
		switch key {
		case "left":
			if g.agent > 0 {
				g.agent--
			}
		case "right":
			if g.agent < len(ts)-1 {
				g.agent++
			}
		case "+", "=":
			g.context = min(g.context+1, router.MaxMoveContext)
		case "-":
			g.context = max(g.context-1, 0)
		case "enter":
			if len(ts) == 0 {
				g.note = "no other agent is ready: configure one first"
				return nil
			}
			a := ts[min(g.agent, len(ts)-1)].ID
			return m.sendEdit(router.ThreadEdit{Agent: &a, ContextMessages: g.context})
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (m *Model) sendEdit(e router.ThreadEdit) tea.Cmd {
	g := m.manager
	g.ref = chat.NewID("r")
	g.note = "sending…"
	return m.sendCmd("edit", g.ref, wire.Frame(wire.TypeEditThread, wire.EditThread{Ref: g.ref, ThreadID: string(m.thread.ID), ThreadEdit: e}))
}

// onDone takes the daemon's answer to the manager's edit or delete.
func (m *Model) onDone(p chat.Done) {
	g := m.manager
	if g == nil || g.ref == "" || p.Ref != g.ref {
		return
	}
	switch g.step {
	case "delete":
		m.flash = "thread deleted: " + p.Note
	case "move":
		m.flash = "moved to " + m.thread.Agent
	default:
		m.flash = "done"
	}
	m.closeManager()
}

// deletedHere ends the manager's delete of the shown thread: the daemon
// closes the sockets showing it (hub.ReasonDeleted), this one too, before
// its done can come.
func (m *Model) deletedHere(err error) {
	g := m.manager
	if g == nil || g.step != "delete" || g.ref == "" || err == nil || !strings.Contains(err.Error(), fanout.ReasonDeleted) {
		return
	}
	m.flash = "thread deleted: " + router.DeletedNote
	m.closeManager()
}

// managerErr shows an error answering the manager's edit; false when the
// error is about something else.
func (m *Model) managerErr(p chat.Error) bool {
	g := m.manager
	if g == nil || g.ref == "" || p.Ref != g.ref {
		return false
	}
	g.ref, g.note = "", "refused: "+p.Message
	m.layout()
	return true
}

func (m *Model) managerLines() []string {
	g := m.manager
	st := m.st
	title := m.thread.Title
	if title == "" {
		title = string(m.thread.ID)
	}
	lines := []string{st.cardTitle.Render("Thread: " + title)}
	hint := ""
	switch g.step {
	case "":
		arch := "archive"
		if m.thread.Archived {
			arch = "unarchive"
		}
		lines = append(lines, "r rename · a "+arch+" · d delete"+map[bool]string{true: " · m move to another agent", false: ""}[m.agentGone()])
		hint = "Esc close"
	case "rename":
		lines = append(lines, "Title: "+g.title+"▏")
		hint = "Enter save · Esc back"
	case "delete":
		lines = append(lines, m.wrap(router.DeletedNote)...)
		hint = "y delete · Esc back"
	case "move":
		lines = append(lines, fmt.Sprintf("The agent %q is no longer configured: nothing answers in this thread.", m.thread.Agent))
		ts := m.moveTargets()
		if len(ts) == 0 {
			lines = append(lines, "No other agent is ready to take it: configure one.")
		} else {
			a := ts[min(g.agent, len(ts)-1)]
			ctx := "no earlier messages"
			if g.context > 0 {
				ctx = fmt.Sprintf("the last %d messages", g.context)
			}
			lines = append(lines, fmt.Sprintf("Move to ‹%s› (%d of %d), giving it %s as context.", a.ID, min(g.agent, len(ts)-1)+1, len(ts), ctx))
		}
		lines = append(lines, m.wrap("The new agent starts a fresh session in "+m.thread.Cwd+": it does not have the old agent's memory of this conversation.")...)
		hint = "←→ agent · +/- messages · Enter move · Esc back"
	}
	if g.note != "" {
		lines = append(lines, m.wrap(g.note)...)
	}
	return append(lines, st.dim.Render(hint))
}

// wrap breaks text into lines of the terminal's width.
func (m *Model) wrap(s string) []string {
	return strings.Split(ansi.Wordwrap(s, max(m.width, 20), ""), "\n")
}
