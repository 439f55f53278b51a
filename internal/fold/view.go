// Package fold is a thread's conversation folded from its events: what a
// person sees of a chat, computed from the server's frames alone. It is the Go
// twin of the dashboard's ui/src/fold.ts, item for item and rule for rule, and
// the two are held together by one table (ui/testdata/views.json) that both
// test suites replay. Pure: no I/O, no clock; its owner (parley chat) keeps
// what is its own (the outbox, key focus, scrolling) and draws the View.
//
// The rules, the same on every screen:
//   - a plan is one item per turn: a plan event updates the plan shown since
//     the person's last message, or adds one after it;
//   - a tool call the conversation shows as its own card (AskUserQuestion, as
//     its question card) is not shown as a tool too, unless it fails;
//   - a mode change after the first mode is said in the conversation;
//   - a message queued behind a running turn is shown after the answer, and
//     takes its place in the conversation when it is delivered.
//   - a receipt without a seq never moves a message's receipt back, and an
//     error about a message the agent has leaves its receipt true;
//   - a card answered elsewhere keeps its answer when this screen's own
//     answer is then refused as too late.
package fold

import (
	"encoding/json"

	"github.com/parleyhq/parley/internal/chat"
)

// Item kinds.
const (
	KindUser       = "user"
	KindAgent      = "agent"
	KindThought    = "thought"
	KindTool       = "tool"
	KindPlan       = "plan"
	KindPermission = "permission"
	KindQuestion   = "question"
	KindNotice     = "notice"
	KindUsage      = "usage"
	KindHandBack   = "handback" // the session handed to a terminal: Text is the command
)

// Card states.
const (
	CardOpen      = "open"
	CardAnswering = "answering" // answered from this screen, not confirmed yet
	CardResolved  = "resolved"
	CardCancelled = "cancelled"
	CardClosed    = "closed" // no longer open, learnt without its resolution
)

// Notice levels.
const (
	LevelInfo  = "info"
	LevelError = "error"
	LevelDone  = "done" // a notice saying a piece of work is finished
)

// Item is one block of the conversation. Kind says which fields it uses.
type Item struct {
	Kind string
	Key  string // unique in the view: "u:<message id>", "t:<tool call id>", "c:<request id>", …
	TS   string // when it was said (user, agent, notice, usage), as the server wrote it

	// user
	MessageID string
	From      string // the channel it was sent from ("" when sent from here)
	Files     []chat.FileRef
	Origin    *chat.Origin // the schedule or trigger that sent it (no person typed it)

	// user, agent, thought, notice; handback: the command
	Text string

	// tool
	ID        string // the tool call's id
	Title     string // also a permission card's
	Tool      string // the tool's kind (read, edit, execute, …)
	Status    string
	Input     json.RawMessage // also a permission card's
	Output    string
	Diffs     []chat.Diff // also a permission card's: the change asked about
	Locations []chat.Location

	// plan
	Entries []chat.PlanEntry

	// permission and question cards
	RequestID  string
	State      string // one of the Card* states
	Note       string // who answered it, or why it is closed
	By         string // the channel that answered it ("" when parley closed it)
	Name       string // permission: the tool's name
	ToolCallID string // permission: the tool call asked about
	Options    []chat.PermissionOption
	Chosen     string // permission: the option taken
	Questions  []chat.QuestionItem
	Answers    chat.Answers
	Response   string

	// notice
	Level string // one of the Level* levels
	// (From, for a notice event: who said it, "the agent" or "a script".)

	// usage
	Usage chat.Usage
}

// Receipt is what the server said last of a message.
type Receipt struct {
	State  string // sending, queued, delivering, submitted, failed, unknown
	Detail string
}

// View is the folded conversation: everything a screen draws of it.
type View struct {
	Items []Item
	// Queued are messages waiting behind the running turn, drawn after it.
	Queued   []Item
	Receipts map[string]Receipt
	// TurnActive: a turn runs. Stopping: a stop was asked and the turn has
	// not ended yet. TurnSince: when the running turn began.
	TurnActive bool
	Stopping   bool
	TurnSince  string
	Mode       *chat.Mode // nil until the agent says
	Commands   []chat.Command
	Usage      *chat.Usage // the last turn's, and the context's fill
	// Starting is when the agent's process began to start, while it has not.
	Starting string
	// Draft is provisional text (agent_draft), drawn apart after the items;
	// DraftID names it, so that an append adds to it alone.
	Draft   string
	DraftID int64
}
