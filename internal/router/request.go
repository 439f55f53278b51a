package router

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/uploads"
)

// The router's requests. Every channel builds these (the socket's decoder
// straight from its frames, docs/protocol.md; REST, ACP and the plugins in Go),
// and Send and Control validate them once, whatever channel they came from.
// The JSON names are the protocol's.

// MaxIDLen caps the ids a client chooses (message, request, thread and chat ids).
const MaxIDLen = 128

// Message is one message a person sends.
type Message struct {
	MessageID string `json:"message_id"`
	Text      string `json:"text"`
	// Intent, when set, puts the message in a new thread or a resumed session
	// instead of the route's current thread.
	Intent *Intent `json:"intent,omitempty"`
	// Agent, when it differs from the route's thread's, starts a thread with it.
	Agent  string  `json:"agent,omitempty"`
	Mode   string  `json:"mode,omitempty"`
	Images []Image `json:"images,omitempty"`
	// Files are saved in the thread's working directory (uploads.Dir) by
	// the machine that owns the thread, and named by path in the text; an
	// image among them also goes as an image to an agent that takes them.
	Files []uploads.File `json:"files,omitempty"`
	// Origin names the schedule or trigger that sent the message; set in
	// Go only (internal/schedule, internal/trigger), never by a client.
	Origin *chat.Origin `json:"-"`
}

type Image struct {
	MIMEType string `json:"mime_type"`
	Data     []byte `json:"data"` // base64 in JSON
}

// Intent is exactly one of New and Resume.
type Intent struct {
	New    *NewIntent    `json:"new,omitempty"`
	Resume *ResumeIntent `json:"resume,omitempty"`
}

type NewIntent struct {
	Cwd   string `json:"cwd"`
	Agent string `json:"agent,omitempty"`
	// Node, on a cluster's hub, puts the thread on that machine (its agent,
	// its directory, checked there against its roots).
	Node string `json:"node,omitempty"`
	// Worktree makes the thread in a git worktree of its own, on a new
	// branch from the repository's HEAD (gitstart.go).
	Worktree bool `json:"worktree,omitempty"`
	// Ask names a hub's ask for a thread here ("agent@node", kept in its
	// route_asks): one ask makes one thread, and asked again (the hub did
	// not hear the answer) it gets that thread. Set by the hub's router
	// and carried by the cluster's input, never by a client.
	Ask string `json:"-"`
}

// ResumeIntent names an agent's native session (a message's intent, or the
// socket's resume_session).
type ResumeIntent struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	// Node, at a cluster's hub, is the machine the session is on: it is
	// continued there (resume_session only).
	Node string `json:"node,omitempty"`
	// Watch follows a session that runs in a terminal, read-only, rather
	// than refusing it (resume_session only). A session running in a tmux
	// pane is adopted without it.
	Watch bool `json:"watch,omitempty"`
}

// PermissionAnswer answers a permission card: an option, or cancelled.
type PermissionAnswer struct {
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id,omitempty"`
	Message   string `json:"message,omitempty"`
	Cancelled bool   `json:"cancelled,omitempty"`
	// rule names the rule that answered (rules.go); only the lane sets it,
	// never a client.
	rule string
}

// QuestionAnswer answers a question card: answers by question, or a reply in
// the person's own words.
type QuestionAnswer struct {
	RequestID string       `json:"request_id"`
	Answers   chat.Answers `json:"answers"`
	Response  string       `json:"response,omitempty"`
}

type SetMode struct {
	ModeID string `json:"mode_id"`
}

type SetOption struct {
	ConfigID string `json:"config_id"`
	Value    string `json:"value"`
}

// Control is a stop, a card answer or a session setting, addressed to a route's
// thread (or a thread directly) and run by its lane at once. One of Stop and
// the pointers is set.
type Control struct {
	From   chat.RouteKey
	Thread chat.ThreadID // optional: addresses the thread directly

	Stop       bool
	Withdraw   *Withdraw
	Permission *PermissionAnswer
	Answer     *QuestionAnswer
	SetMode    *SetMode
	SetOption  *SetOption
	// Unload ends the thread's agent process now, as an idle unload would
	// (its next message resumes it); refused while a turn runs.
	Unload bool
	// HandBack ends the thread's agent process once no turn runs or waits,
	// and says on the thread the command that goes on with its session in
	// a terminal ("Continue in a terminal").
	HandBack bool
	// Edit renames the thread, archives or un-archives it.
	Edit *ThreadEdit `json:",omitempty"`

	// actor is who sent it, for the audit trail (Router.Control sets it).
	actor string
}

// MaxTitleLen caps a thread's title, in characters.
const MaxTitleLen = 120

// MaxMoveContext caps the messages a moved thread carries to its new agent.
const MaxMoveContext = 20

// ThreadEdit changes what is set: a new title, archived or not, another
// agent (a thread whose agent is gone moves to it, in the same directory).
type ThreadEdit struct {
	Title    *string `json:"title,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
	Agent    *string `json:"agent,omitempty"`
	// ContextMessages, with Agent: how many of the thread's last messages
	// (the person's and the answers) go to the new agent with the next
	// message, so it knows what came before (0: none).
	ContextMessages int `json:"context_messages,omitempty"`
}

// Validate checks a new title: one line of 1 to MaxTitleLen characters once
// its outer spaces are trimmed (Validate trims it).
func (e *ThreadEdit) Validate() error {
	if e.Title == nil && e.Archived == nil && e.Agent == nil {
		return invalid("say what to change: \"title\", \"archived\" or \"agent\"")
	}
	switch {
	case e.Agent == nil && e.ContextMessages != 0:
		return invalid("\"context_messages\" goes with \"agent\" (a move)")
	case e.Agent != nil && *e.Agent == "":
		return invalid("\"agent\" is empty: name the agent to move the thread to")
	case e.ContextMessages < 0 || e.ContextMessages > MaxMoveContext:
		return invalid("\"context_messages\" is %d: from 0 to %d", e.ContextMessages, MaxMoveContext)
	}
	if e.Title == nil {
		return nil
	}
	t := strings.TrimSpace(*e.Title)
	switch n := utf8.RuneCountInString(t); {
	case !utf8.ValidString(t):
		return invalid("the title is not UTF-8 text")
	case n == 0:
		return invalid("the title is empty: give the thread a name")
	case n > MaxTitleLen:
		return invalid("the title is %d characters long; at most %d", n, MaxTitleLen)
	}
	for _, r := range t {
		if unicode.IsControl(r) {
			return invalid("the title must be one line, without control characters")
		}
	}
	*e.Title = t
	return nil
}

// Withdraw takes a queued message back before its turn begins.
type Withdraw struct {
	MessageID string `json:"message_id"`
}

// invalid refuses a request's content in words a client's developer can act
// on (chat.BadInput).
func invalid(format string, args ...any) error { return chat.BadInput(format, args...) }

// Validate checks what the router needs of a message before it is routed.
func (m *Message) Validate() error {
	if err := validID("message_id", m.MessageID); err != nil {
		return err
	}
	if m.Text == "" && len(m.Images) == 0 && len(m.Files) == 0 {
		return invalid("message needs \"text\"")
	}
	if m.Intent != nil {
		n, r := m.Intent.New, m.Intent.Resume
		switch {
		case n != nil && r != nil:
			return invalid("intent has both \"new\" and \"resume\": choose one")
		case n != nil:
			if n.Cwd == "" {
				return invalid("intent \"new\" needs \"cwd\"")
			}
		case r != nil && r.Node != "":
			return invalid("intent \"resume\" takes no \"node\": send resume_session with it, then the message")
		case r != nil:
			return r.Validate()
		default:
			return invalid("intent must be {\"new\": …} or {\"resume\": …}")
		}
	}
	if len(m.Files) > uploads.MaxFiles {
		return invalid("%d files attached: at most %d in one message", len(m.Files), uploads.MaxFiles)
	}
	for i, f := range m.Files {
		if f.Name == "" {
			return invalid("file %d needs \"name\"", i)
		}
	}
	for i, img := range m.Images {
		if img.MIMEType == "" || len(img.Data) == 0 {
			return invalid("image %d needs \"mime_type\" and \"data\"", i)
		}
		if uploads.SniffImage(img.Data) == "" {
			return invalid("image %d is not a PNG, JPEG, GIF or WebP image (its bytes are %s); attach it as a file", i, http.DetectContentType(img.Data))
		}
	}
	return nil
}

func (r *ResumeIntent) Validate() error {
	switch {
	case r.Agent == "":
		return invalid("resume needs \"agent\"")
	case r.SessionID == "":
		return invalid("resume needs \"session_id\"")
	case r.Cwd == "":
		return invalid("resume needs \"cwd\"")
	}
	return nil
}

// Validate checks the control's own fields; whether its card is open is the
// lane's to say.
func (c *Control) Validate() error {
	switch {
	case c.Withdraw != nil:
		if err := validID("message_id", c.Withdraw.MessageID); err != nil {
			return err
		}
	case c.Permission != nil:
		p := c.Permission
		if err := validID("request_id", p.RequestID); err != nil {
			return err
		}
		if p.OptionID == "" && !p.Cancelled {
			return invalid("permission_response needs \"option_id\" or \"cancelled\": true")
		}
	case c.Answer != nil:
		q := c.Answer
		if err := validID("request_id", q.RequestID); err != nil {
			return err
		}
		if len(q.Answers) == 0 && q.Response == "" {
			return invalid("question_answer needs \"answers\" (or a \"response\")")
		}
	case c.SetMode != nil:
		if c.SetMode.ModeID == "" {
			return invalid("set_mode needs \"mode_id\"")
		}
	case c.SetOption != nil:
		if c.SetOption.ConfigID == "" {
			return invalid("set_config_option needs \"config_id\"")
		}
	case c.Edit != nil:
		if err := c.Edit.Validate(); err != nil {
			return err
		}
	case !c.Stop && !c.Unload && !c.HandBack:
		return invalid("empty control: say what to do")
	}
	return nil
}

func validID(field, id string) error {
	if id == "" {
		return invalid("%q is missing", field)
	}
	if len(id) > MaxIDLen {
		return invalid("%q is longer than %d bytes", field, MaxIDLen)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return invalid("%q has a control character", field)
		}
	}
	return nil
}
