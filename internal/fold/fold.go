package fold

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
)

// Fold folds one thread's events into its View. One owner calls it; it is
// not safe for concurrent use.
type Fold struct {
	view        View
	index       map[string]int    // item key → position in view.Items
	lastKind    string            // the kind of the last streamed item, to join chunks
	hiddenTools map[string]string // tool call id → its title, for tools shown as their own card
	asking      map[string]string // tool call id → the key of the permission card about it
	seq         int               // keys for items of events without a seq
	// closed are cards learnt to be no longer open without a *_resolved event.
	closed map[string]bool
}

// New returns an empty fold.
func New() *Fold {
	f := &Fold{}
	f.Reset()
	return f
}

// Reset empties the fold: another thread is shown.
func (f *Fold) Reset() {
	f.view = View{Receipts: map[string]Receipt{}}
	f.index = map[string]int{}
	f.lastKind = ""
	f.hiddenTools = map[string]string{}
	f.asking = map[string]string{}
	f.closed = map[string]bool{}
}

// View is the conversation now. The owner reads it and does not change it.
func (f *Fold) View() View { return f.view }

// Has reports whether an item of that key is shown, in the conversation or queued.
func (f *Fold) Has(key string) bool {
	_, ok := f.index[key]
	return ok || slices.ContainsFunc(f.view.Queued, func(q Item) bool { return q.Key == key })
}

// Item is the item of that key, in the conversation or queued.
func (f *Fold) Item(key string) (Item, bool) {
	if i, ok := f.index[key]; ok {
		return f.view.Items[i], true
	}
	for _, q := range f.view.Queued {
		if q.Key == key {
			return q, true
		}
	}
	return Item{}, false
}

// Closed reports a card learnt to be no longer open without its resolution.
func (f *Fold) Closed(requestID string) bool { return f.closed[requestID] }

// UserKey is the key of a person's message's item.
func UserKey(messageID string) string { return "u:" + messageID }

// CardKey is the key of a card's item.
func CardKey(requestID string) string { return "c:" + requestID }

// User shows a person's message (one typed here, before the server has it):
// after the running turn while one runs.
func (f *Fold) User(it Item) {
	if f.Has(it.Key) {
		return
	}
	if f.view.TurnActive {
		f.view.Queued = append(slices.Clip(f.view.Queued), it)
		return
	}
	f.Push(it)
}

// Receipt sets what is known of a message.
func (f *Fold) Receipt(messageID string, r Receipt) {
	rs := make(map[string]Receipt, len(f.view.Receipts)+1)
	for k, v := range f.view.Receipts {
		rs[k] = v
	}
	rs[messageID] = r
	f.view.Receipts = rs
}

// Stopping says a stop was asked of the running turn (or, false, that the
// ask did not get through).
func (f *Fold) Stopping(on bool) { f.view.Stopping = on }

// PatchCard changes a card shown in the conversation.
func (f *Fold) PatchCard(requestID string, patch func(*Item)) {
	key := CardKey(requestID)
	i, ok := f.index[key]
	if !ok {
		return
	}
	it := f.view.Items[i]
	patch(&it)
	f.replace(key, it)
}

// CloseUnseen closes every card shown open that the server did not send
// again on this connection: a stale card is never left answerable.
func (f *Fold) CloseUnseen(seen map[string]bool) {
	for _, it := range f.view.Items {
		if (it.Kind == KindPermission || it.Kind == KindQuestion) && (it.State == CardOpen || it.State == CardAnswering) && !seen[it.RequestID] {
			f.closed[it.RequestID] = true
			f.PatchCard(it.RequestID, func(c *Item) { c.State, c.Note = CardClosed, "no longer open" })
		}
	}
}

// Note adds a notice of the screen's own (no event's) at the end of the conversation.
func (f *Fold) Note(level, text string) {
	f.Push(Item{Kind: KindNotice, Key: f.key("l:", 0), Level: level, Text: text})
}

// Push adds an item at the end of the conversation.
func (f *Fold) Push(it Item) {
	f.view.Items = append(slices.Clip(f.view.Items), it)
	f.index[it.Key] = len(f.view.Items) - 1
	f.lastKind = it.Kind
}

// Apply folds one event of the thread shown into the conversation. Events of
// the connection (config, thread, replay_done, …) are the owner's; the fold
// passes over them.
func (f *Fold) Apply(ev client.Event) {
	if ev.Seq > 0 && (f.view.Draft != "" || f.view.DraftID != 0) && chat.EndsDraft(ev.Type) {
		f.view.Draft, f.view.DraftID = "", 0
	}
	if apply := rules[ev.Type]; apply != nil {
		apply(f, ev)
	}
}

// rules fold each event type; a type without one changes nothing shown.
var rules = map[string]func(*Fold, client.Event){
	chat.TypeAgentDraft:         (*Fold).agentDraft,
	chat.TypeUserMessage:        (*Fold).userMessage,
	chat.TypeDelivery:           (*Fold).delivery,
	chat.TypeAgentChunk:         (*Fold).agentChunk,
	chat.TypeThoughtChunk:       (*Fold).thoughtChunk,
	chat.TypeToolCall:           (*Fold).toolCall,
	chat.TypeToolCallUpdate:     (*Fold).toolCallUpdate,
	chat.TypePlan:               (*Fold).plan,
	chat.TypePermissionRequest:  (*Fold).permissionRequest,
	chat.TypePermissionResolved: (*Fold).permissionResolved,
	chat.TypeQuestion:           (*Fold).question,
	chat.TypeQuestionResolved:   (*Fold).questionResolved,
	chat.TypeMode:               (*Fold).mode,
	chat.TypeCommands:           (*Fold).commands,
	chat.TypeUsage:              (*Fold).usage,
	chat.TypeTurnStatus:         (*Fold).turnStatus,
	chat.TypePromptDone:         (*Fold).promptDone,
	chat.TypeError:              (*Fold).error,
	chat.TypeSessionInfo:        (*Fold).session,
	chat.TypeThreadInfo:         (*Fold).threadInfo,
	chat.TypeNotice:             (*Fold).notice,
}

// agentDraft shows provisional text: whole, or (extends) what it adds to the
// draft shown; an append to a draft not shown (one was missed) shows none
// until a whole one.
func (f *Fold) agentDraft(ev client.Event) {
	var p chat.AgentDraft
	if ev.Decode(&p) != nil {
		return
	}
	f.view.DraftID, f.view.Draft = p.Onto(f.view.DraftID, f.view.Draft)
}

func (f *Fold) userMessage(ev client.Event) {
	var p chat.UserMessage
	_ = ev.Decode(&p)
	key := UserKey(p.MessageID)
	if it, ok := f.Item(key); ok {
		// Sent from here: the server's time is when it was said, its text
		// what the agent got (the saved files' paths added).
		if it.Kind == KindUser && ((it.TS == "" && ev.TS != "") || it.Text != p.Text || p.Files != nil) {
			if it.TS == "" {
				it.TS = ev.TS
			}
			it.Text = p.Text
			if p.Files != nil {
				it.Files = p.Files
			}
			f.replaceAny(it)
		}
	} else {
		f.User(Item{Kind: KindUser, Key: key, MessageID: p.MessageID, Text: p.Text, From: p.From.Channel, TS: ev.TS, Files: p.Files, Origin: p.Origin})
	}
	if _, ok := f.view.Receipts[p.MessageID]; !ok {
		f.Receipt(p.MessageID, Receipt{State: chat.DeliveryQueued})
	}
	if _, ok := f.index[key]; ok {
		f.lastKind = KindUser
	}
}

func (f *Fold) delivery(ev client.Event) {
	var p chat.Delivery
	_ = ev.Decode(&p)
	// A receipt without a seq (the answer to a resend) may be overtaken by
	// the log's: it never moves a receipt back.
	if ev.Seq == 0 && rank(p.State) < rank(f.view.Receipts[p.MessageID].State) {
		return
	}
	f.Receipt(p.MessageID, Receipt{State: p.State, Detail: p.Detail})
	if p.State != chat.DeliveryQueued {
		f.unqueue(p.MessageID)
	}
}

func (f *Fold) agentChunk(ev client.Event) {
	var p chat.AgentChunk
	_ = ev.Decode(&p)
	f.appendText(KindAgent, p.Text, ev.TS)
}

func (f *Fold) thoughtChunk(ev client.Event) {
	var p chat.ThoughtChunk
	_ = ev.Decode(&p)
	f.appendText(KindThought, p.Text, "")
}

// ownCard reports a tool call the conversation shows as its own card, by its
// title (Claude Code's tool name).
func ownCard(title string) bool { return title == "AskUserQuestion" }

func (f *Fold) toolCall(ev client.Event) {
	var p chat.ToolCall
	_ = ev.Decode(&p)
	if ownCard(p.Title) {
		f.hiddenTools[p.ToolCallID] = p.Title
		return
	}
	key := "t:" + p.ToolCallID
	it, ok := f.Item(key)
	if !ok {
		f.Push(Item{Kind: KindTool, Key: key, ID: p.ToolCallID, Title: p.Title, Tool: p.Kind, Status: p.Status, Input: p.Input, Locations: p.Locations})
		return
	}
	it.Title = or(p.Title, it.Title)
	it.Tool = or(p.Kind, it.Tool)
	it.Status = or(p.Status, it.Status)
	if p.Input != nil {
		it.Input = p.Input
	}
	f.replace(key, it)
}

// toolUpdate is a tool_call_update as it came: an output given empty is
// told apart from none.
type toolUpdate struct {
	chat.ToolCallUpdate
	Output *string `json:"output"`
}

func (f *Fold) toolCallUpdate(ev client.Event) {
	var p toolUpdate
	_ = ev.Decode(&p)
	hidden := f.hiddenTools[p.ToolCallID]
	if hidden != "" && p.Status != "failed" {
		return
	}
	if len(p.Diffs) > 0 {
		// The permission card about the call shows what it will change.
		if card := f.asking[p.ToolCallID]; card != "" {
			if it, ok := f.Item(card); ok && it.Kind == KindPermission && it.State == CardOpen {
				it.Diffs = p.Diffs
				f.replace(card, it)
			}
		}
	}
	key := "t:" + p.ToolCallID
	it, ok := f.Item(key)
	if !ok {
		it = Item{Kind: KindTool, Key: key, ID: p.ToolCallID, Title: or(p.Title, or(hidden, "tool")), Tool: "other",
			Status: or(p.Status, "in_progress"), Diffs: p.Diffs, Locations: p.Locations}
		if p.Output != nil {
			it.Output = *p.Output
		}
		f.Push(it)
		return
	}
	it.Status = or(p.Status, it.Status)
	it.Title = or(p.Title, it.Title)
	if p.Output != nil {
		it.Output = *p.Output
	}
	if p.Diffs != nil {
		it.Diffs = p.Diffs
	}
	if p.Locations != nil {
		it.Locations = p.Locations
	}
	f.replace(key, it)
}

// plan: the plan comes whole each time; this turn's plan is updated in place.
func (f *Fold) plan(ev client.Event) {
	var p chat.Plan
	_ = ev.Decode(&p)
	if it, ok := f.turnPlan(); ok {
		it.Entries = p.Entries
		f.replace(it.Key, it)
		return
	}
	f.Push(Item{Kind: KindPlan, Key: f.key("p:", ev.Seq), Entries: p.Entries})
}

// turnPlan is the plan shown since the person's last message, if any.
func (f *Fold) turnPlan() (Item, bool) {
	for i := len(f.view.Items) - 1; i >= 0; i-- {
		switch it := f.view.Items[i]; it.Kind {
		case KindPlan:
			return it, true
		case KindUser:
			return Item{}, false
		}
	}
	return Item{}, false
}

func (f *Fold) permissionRequest(ev client.Event) {
	var p chat.PermissionRequest
	_ = ev.Decode(&p)
	key := CardKey(p.RequestID)
	call := p.Tool.ToolCallID
	// The agent's diffs of the call, else parley's (a Write over an existing file).
	diffs := p.Diffs
	if call != "" {
		f.asking[call] = key
		if t, ok := f.Item("t:" + call); ok && t.Kind == KindTool && len(t.Diffs) > 0 {
			diffs = t.Diffs
		}
	}
	if len(diffs) == 0 {
		diffs = nil
	}
	if it, ok := f.Item(key); !ok {
		f.Push(Item{Kind: KindPermission, Key: key, RequestID: p.RequestID, Title: or(p.Tool.Title, or(p.Tool.Name, "permission")),
			Name: p.Tool.Name, Input: p.Tool.Input, ToolCallID: call, Diffs: diffs, Options: nonNil(p.Options), State: CardOpen})
	} else if it.Kind == KindPermission && ev.Restated && (it.State == CardAnswering || it.State == CardClosed) {
		it.State = CardOpen
		f.replace(key, it)
	}
	if ev.Restated {
		delete(f.closed, p.RequestID)
	}
}

func (f *Fold) permissionResolved(ev client.Event) {
	var p chat.PermissionResolved
	_ = ev.Decode(&p)
	f.PatchCard(p.RequestID, func(it *Item) {
		it.State, it.Chosen, it.Note, it.By = resolvedState(p.Cancelled), p.OptionID, resolvedBy(p.By, p.Message), channel(p.By)
		if p.Rule != "" {
			// Answered by the person's rule, which the note names (its
			// message to the agent names it again: not repeated).
			it.Note = "by " + p.Rule
		}
	})
}

func (f *Fold) question(ev client.Event) {
	var p chat.Question
	_ = ev.Decode(&p)
	key := CardKey(p.RequestID)
	if it, ok := f.Item(key); !ok {
		f.Push(Item{Kind: KindQuestion, Key: key, RequestID: p.RequestID, Questions: nonNil(p.Questions), State: CardOpen})
	} else if it.Kind == KindQuestion && ev.Restated && (it.State == CardAnswering || it.State == CardClosed) {
		it.State = CardOpen
		f.replace(key, it)
	}
	if ev.Restated {
		delete(f.closed, p.RequestID)
	}
}

func (f *Fold) questionResolved(ev client.Event) {
	var p chat.QuestionResolved
	_ = ev.Decode(&p)
	f.PatchCard(p.RequestID, func(it *Item) {
		it.State, it.Answers, it.Response, it.Note, it.By = resolvedState(p.Cancelled), p.Answers, p.Response, resolvedBy(p.By, ""), channel(p.By)
	})
}

func (f *Fold) mode(ev client.Event) {
	var md chat.Mode
	_ = ev.Decode(&md)
	was := f.view.Mode
	if md.Available == nil {
		md.Available = []chat.ModeOption{}
		if was != nil {
			md.Available = was.Available
		}
	}
	if md.ConfigOptions == nil {
		md.ConfigOptions = []chat.ConfigOption{}
		if was != nil {
			md.ConfigOptions = was.ConfigOptions
		}
	}
	if was != nil && was.Current != md.Current && md.Current != "" {
		f.Push(Item{Kind: KindNotice, Key: f.key("m:", ev.Seq), Level: LevelInfo, Text: "Mode changed to " + ModeName(md) + ".", TS: ev.TS})
		f.lastKind = ""
	}
	f.view.Mode = &md
}

// ModeName is the current mode's name as the agent calls it.
func ModeName(md chat.Mode) string {
	for _, o := range md.Available {
		if o.ID == md.Current {
			return o.Name
		}
	}
	return md.Current
}

func (f *Fold) commands(ev client.Event) {
	var p chat.Commands
	_ = ev.Decode(&p)
	f.view.Commands = nonNil(p.Commands)
}

func (f *Fold) usage(ev client.Event) {
	var u chat.Usage
	_ = ev.Decode(&u)
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.CostUSD == 0 {
		// A context-only report (ACP's usage_update, mid-turn) keeps the turn's numbers.
		was := chat.Usage{}
		if f.view.Usage != nil {
			was = *f.view.Usage
		}
		was.ContextTokens, was.ContextWindow = u.ContextTokens, u.ContextWindow
		f.view.Usage = &was
		return
	}
	f.view.Usage = &u
	f.Push(Item{Kind: KindUsage, Key: f.key("u:", ev.Seq), Usage: u, TS: ev.TS})
}

// turnStatus: stopping says a stop was taken (on this screen or any other);
// a logged status without it is a turn starting. The status restated on
// connect (no seq) keeps what the log said.
func (f *Fold) turnStatus(ev client.Event) {
	var p chat.TurnStatus
	_ = ev.Decode(&p)
	v := &f.view
	if !p.Active {
		v.TurnActive, v.TurnSince, v.Stopping = false, "", false
		return
	}
	v.TurnActive = true
	if v.TurnSince == "" {
		v.TurnSince = ev.TS
	}
	v.Stopping = p.Stopping || (ev.Seq == 0 && v.Stopping)
}

func (f *Fold) promptDone(ev client.Event) {
	var p chat.PromptDone
	_ = ev.Decode(&p)
	f.view.TurnActive, f.view.TurnSince, f.view.Stopping = false, "", false
	f.lastKind = ""
	if p.StopReason != "" && p.StopReason != chat.StopEndTurn {
		level := LevelError
		if p.StopReason == chat.StopCancelled {
			level = LevelInfo
		}
		f.Push(Item{Kind: KindNotice, Key: f.key("d:", ev.Seq), Level: level, Text: StopText(p.StopReason)})
	}
}

func (f *Fold) error(ev client.Event) {
	var p chat.Error
	_ = ev.Decode(&p)
	_, card := f.index[CardKey(p.Ref)]
	switch {
	case p.Ref != "" && card && p.Code == chat.CodeCardClosed:
		f.closed[p.Ref] = true
		// Answered elsewhere first: its resolution, when it came first, says more.
		f.PatchCard(p.Ref, func(it *Item) {
			if it.State == CardOpen || it.State == CardAnswering {
				it.State, it.Note = CardClosed, p.Message
			}
		})
	case p.Ref != "" && card:
		// The answer was refused but the card is still open (its agent is
		// not running now): it stays answerable, saying why.
		f.PatchCard(p.Ref, func(it *Item) { it.State, it.Note = CardOpen, p.Message })
	case p.Ref != "" && f.Has(UserKey(p.Ref)) && rank(f.view.Receipts[p.Ref].State) < rank(chat.DeliveryDelivering):
		// Refused before it was taken (busy, bad input): it failed, and says
		// why. An error about a message the agent has (a turn cut off) is
		// said below, and leaves its receipt true.
		f.Receipt(p.Ref, Receipt{State: chat.DeliveryFailed, Detail: p.Message})
		f.unqueue(p.Ref)
	default:
		f.Push(Item{Kind: KindNotice, Key: f.key("e:", ev.Seq), Level: LevelError, Text: or(p.Message, p.Code)})
	}
}

func (f *Fold) session(ev client.Event) {
	var p chat.SessionInfo
	_ = ev.Decode(&p)
	switch p.State {
	case "starting":
		f.view.Starting = or(ev.TS, "now") // no clock here: an event without a time starts now
	case "identified":
	default:
		f.view.Starting = ""
	}
	if (p.State == "exited" && p.Detail != "") || p.State == "restarted" {
		f.Push(Item{Kind: KindNotice, Key: f.key("s:", ev.Seq), Level: LevelInfo, Text: "session " + p.State + opt(": ", p.Detail)})
	}
	if p.State == "handed_back" {
		f.Push(Item{Kind: KindHandBack, Key: f.key("h:", ev.Seq), TS: ev.TS, Text: p.Command})
	}
}

// notice: said to the person by the agent (notify_person) or a script
// (parley notify), with who said it.
func (f *Fold) notice(ev client.Event) {
	var p chat.Notice
	_ = ev.Decode(&p)
	from := "the agent"
	if p.From == chat.FromCLI {
		from = "a script"
	}
	f.Push(Item{Kind: KindNotice, Key: f.key("n:", ev.Seq), Level: p.Level, Text: p.Text, TS: ev.TS, From: from})
}

// threadInfo: a move says, in the conversation, what the new agent knows.
func (f *Fold) threadInfo(ev client.Event) {
	var p chat.ThreadInfo
	_ = ev.Decode(&p)
	if p.MovedFrom != "" {
		f.Push(Item{Kind: KindNotice, Key: f.key("m:", ev.Seq), Level: LevelInfo, Text: MovedText(p.MovedFrom, p.Agent, p.ContextMessages)})
	}
}

// unqueue puts a queued message in its place in the conversation: now.
func (f *Fold) unqueue(messageID string) {
	i := slices.IndexFunc(f.view.Queued, func(q Item) bool { return q.Kind == KindUser && q.MessageID == messageID })
	if i < 0 {
		return
	}
	q := f.view.Queued[i]
	f.view.Queued = slices.Delete(slices.Clone(f.view.Queued), i, i+1)
	f.Push(q)
	f.lastKind = KindUser
}

func (f *Fold) appendText(kind, text, ts string) {
	items := f.view.Items
	if n := len(items); n > 0 && items[n-1].Kind == kind && f.lastKind == kind {
		last := items[n-1]
		last.Text += text
		f.replace(last.Key, last)
		return
	}
	it := Item{Kind: kind, Key: "h:" + strconv.Itoa(len(items)), Text: text}
	if kind == KindAgent {
		it.Key, it.TS = "a:"+strconv.Itoa(len(items)), ts
	}
	f.Push(it)
}

// replace puts it in the place of the item of key in the conversation. The
// items are copied first: a View handed out before does not change.
func (f *Fold) replace(key string, it Item) {
	i, ok := f.index[key]
	if !ok {
		return
	}
	f.view.Items = slices.Clone(f.view.Items)
	f.view.Items[i] = it
}

// replaceAny replaces an item shown in the conversation or among the queued.
func (f *Fold) replaceAny(it Item) {
	if _, ok := f.index[it.Key]; ok {
		f.replace(it.Key, it)
		return
	}
	f.view.Queued = slices.Clone(f.view.Queued)
	for i, q := range f.view.Queued {
		if q.Key == it.Key {
			f.view.Queued[i] = it
		}
	}
}

// key is an item's key from its event's seq, or a counter for an event without one.
func (f *Fold) key(prefix string, seq int64) string {
	if seq > 0 {
		return prefix + strconv.FormatInt(seq, 10)
	}
	f.seq++
	return fmt.Sprintf("%sn%d", prefix, f.seq)
}

// rank orders receipts: a later state never goes back to an earlier one.
func rank(state string) int {
	switch state {
	case "sending":
		return 1
	case chat.DeliveryQueued:
		return 2
	case chat.DeliveryDelivering:
		return 3
	case chat.DeliverySubmitted, chat.DeliveryFailed, chat.DeliveryUnknown:
		return 4
	}
	return 0
}

func channel(by *chat.RouteKey) string {
	if by == nil {
		return ""
	}
	return by.Channel
}

func resolvedState(cancelled bool) string {
	if cancelled {
		return CardCancelled
	}
	return CardResolved
}

// resolvedBy says where a card was answered ("from web", "from telegram: …").
func resolvedBy(by *chat.RouteKey, message string) string {
	s := ""
	if by != nil && by.Channel != "" {
		s = "from " + by.Channel
	}
	if message != "" {
		if s != "" {
			s += ": "
		}
		s += message
	}
	return s
}

// StopText says how a turn that did not end by itself ended.
func StopText(reason string) string {
	switch reason {
	case chat.StopCancelled:
		return "Stopped."
	case "max_tokens":
		return "The answer hit the length limit."
	case chat.StopRefusal:
		return "The agent refused."
	}
	return "The turn ended with an error."
}

// MovedText says what a thread's move changed, in the conversation.
func MovedText(from, to string, context int) string {
	given := "No earlier messages are given to it."
	if context > 0 {
		s := "s"
		if context == 1 {
			s = ""
		}
		given = fmt.Sprintf("Your next message goes with the last %d message%s of this thread, as context.", context, s)
	}
	return fmt.Sprintf("Moved from %s to %s. %s starts a fresh session in the same folder: it does not have %s's memory of this conversation. %s", from, to, to, from, given)
}

// opt is s after prefix, or nothing when s is empty.
func opt(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// nonNil is a list the agent sent, empty rather than nil when it sent none.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
