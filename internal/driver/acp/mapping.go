package acp

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// mapper turns ACP session updates into chat payloads. It keeps what the
// payloads need across updates: the modes and config options last reported,
// and which tool calls are still open. It is not safe for concurrent use; the
// session calls it under its lock.
type mapper struct {
	modes   []chat.ModeOption
	current string
	options []chat.ConfigOption
	// tools maps an open tool call's id to its last status.
	tools map[string]string
	// order lists tool call ids in the order they were first seen.
	order []string
	// kinds maps a config option id to its type (select, boolean).
	kinds map[string]string
	// refused holds tool calls whose permission the person refused.
	refused map[string]bool
	// usage sums the turn's token counts an agent reports per model call in
	// a message chunk's _meta.usage (Qwen Code), for a prompt answer without
	// ACP's usage field, and the context fill usage_update reported.
	usage chat.Usage
	// cost is the session's cumulative cost usage_update reported last;
	// costSeen what of it earlier turns' usage events carried.
	cost, costSeen float64
}

func newMapper() *mapper {
	return &mapper{tools: map[string]string{}, kinds: map[string]string{}, refused: map[string]bool{}}
}

// refuse records that the person refused the tool call's permission.
func (m *mapper) refuse(id string) { m.refused[id] = true }

// Gemini CLI 0.61.0 reports an approval-mode change as an agent message chunk
// "[MODE_UPDATE] <mode>" instead of current_mode_update.
var geminiModeUpdate = regexp.MustCompile(`^\[MODE_UPDATE\] (\S+)$`)

// update maps one session/update. It returns nothing for updates a person
// does not see (user message echoes, session info).
func (m *mapper) update(u sdk.SessionUpdate) []chat.Payload {
	switch {
	case u.AgentMessageChunk != nil:
		c := u.AgentMessageChunk
		m.addUsage(c.Meta)
		text := contentText(c.Content)
		if g := geminiModeUpdate.FindStringSubmatch(strings.TrimSpace(text)); g != nil && c.Content.Text != nil {
			return m.setMode(g[1])
		}
		if text == "" {
			return nil
		}
		return []chat.Payload{chat.AgentChunk{Text: text, MessageID: deref(c.MessageId)}}
	case u.AgentThoughtChunk != nil:
		text := contentText(u.AgentThoughtChunk.Content)
		if text == "" {
			return nil
		}
		return []chat.Payload{chat.ThoughtChunk{Text: text}}
	case u.UserMessageChunk != nil:
		// The person's own words are already in the log as user_message.
		return nil
	case u.ToolCall != nil:
		tc := u.ToolCall
		return m.toolCall(string(tc.ToolCallId), tc.Title, string(tc.Kind), string(tc.Status), tc.RawInput, tc.Locations, tc.Content)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		return m.toolCallUpdate(string(tu.ToolCallId), tu.Title, tu.Status, tu.Locations, tu.Content)
	case u.Plan != nil:
		p := chat.Plan{Entries: []chat.PlanEntry{}}
		for _, e := range u.Plan.Entries {
			p.Entries = append(p.Entries, chat.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
		}
		return []chat.Payload{p}
	case u.AvailableCommandsUpdate != nil:
		c := chat.Commands{Commands: []chat.Command{}}
		for _, ac := range u.AvailableCommandsUpdate.AvailableCommands {
			cmd := chat.Command{Name: ac.Name, Description: ac.Description}
			if ac.Input != nil && ac.Input.Unstructured != nil {
				cmd.Hint = ac.Input.Unstructured.Hint
			}
			c.Commands = append(c.Commands, cmd)
		}
		return []chat.Payload{c}
	case u.CurrentModeUpdate != nil:
		return m.setMode(string(u.CurrentModeUpdate.CurrentModeId))
	case u.ConfigOptionUpdate != nil:
		m.setOptions(u.ConfigOptionUpdate.ConfigOptions)
		return []chat.Payload{m.mode()}
	case u.UsageUpdate != nil:
		// ACP's usage_update is the context window's fill and the session's
		// cumulative cost: the turn's usage event (takeUsage) carries the
		// turn's part of the cost, so usage events sum to the thread's cost.
		uu := u.UsageUpdate
		m.usage.ContextTokens, m.usage.ContextWindow = int64(uu.Used), int64(uu.Size)
		if c := uu.Cost; c != nil && strings.EqualFold(c.Currency, "USD") {
			m.cost = c.Amount
		}
		if uu.Size == 0 && uu.Used == 0 {
			return nil
		}
		return []chat.Payload{chat.Usage{ContextTokens: int64(uu.Used), ContextWindow: int64(uu.Size)}}
	}
	return nil
}

// addUsage adds a chunk's _meta.usage ({inputTokens, outputTokens}) to the
// turn's sum.
func (m *mapper) addUsage(meta map[string]any) {
	u, ok := meta["usage"].(map[string]any)
	if !ok {
		return
	}
	in, _ := u["inputTokens"].(float64)
	out, _ := u["outputTokens"].(float64)
	m.usage.InputTokens += int64(in)
	m.usage.OutputTokens += int64(out)
}

// takeUsage returns the turn's summed usage (its cost: the cumulative cost's
// growth since the last turn) and starts the next turn's at zero.
func (m *mapper) takeUsage() (chat.Usage, bool) {
	u := m.usage
	if m.cost > m.costSeen {
		u.CostUSD = math.Round((m.cost-m.costSeen)*1e9) / 1e9
	}
	m.costSeen = m.cost
	m.usage = chat.Usage{}
	return u, u.InputTokens != 0 || u.OutputTokens != 0 || u.CostUSD != 0
}

// toolCall reports a new tool call (or a repeated one, which ACP allows).
func (m *mapper) toolCall(id, title, kind, status string, input any, locs []sdk.ToolCallLocation, content []sdk.ToolCallContent) []chat.Payload {
	if status == "" {
		status = string(sdk.ToolCallStatusPending)
	}
	if kind == "" {
		kind = string(sdk.ToolKindOther)
	}
	if _, seen := m.tools[id]; !seen {
		m.order = append(m.order, id)
	}
	m.tools[id] = status
	out := []chat.Payload{chat.ToolCall{
		ToolCallID: id, Title: title, Kind: kind, Status: status,
		Input: rawJSON(input), Locations: locations(locs),
	}}
	// chat.ToolCall has no room for content: diffs and output ride on an update.
	if output, diffs := toolContent(content); output != "" || len(diffs) > 0 {
		out = append(out, chat.ToolCallUpdate{ToolCallID: id, Output: output, Diffs: diffs})
	}
	return out
}

func (m *mapper) toolCallUpdate(id string, title *string, status *sdk.ToolCallStatus, locs []sdk.ToolCallLocation, content []sdk.ToolCallContent) []chat.Payload {
	up := chat.ToolCallUpdate{ToolCallID: id, Title: deref(title), Locations: locations(locs)}
	up.Output, up.Diffs = toolContent(content)
	if status != nil {
		up.Status = string(*status)
		if _, seen := m.tools[id]; !seen {
			m.order = append(m.order, id)
		}
		m.tools[id] = up.Status
	}
	return []chat.Payload{up}
}

// permission maps a permission request onto a card with the agent's own
// options, preceded by its tool call when the agent has not reported it
// (Gemini CLI asks before it reports).
func (m *mapper) permission(id string, p sdk.RequestPermissionRequest) []chat.Payload {
	tc := p.ToolCall
	tcID := string(tc.ToolCallId)
	req := chat.PermissionRequest{RequestID: id, Options: []chat.PermissionOption{}}
	for _, o := range p.Options {
		req.Options = append(req.Options, chat.PermissionOption{ID: string(o.OptionId), Label: o.Name, Kind: string(o.Kind)})
	}
	kind := ""
	if tc.Kind != nil {
		kind = string(*tc.Kind)
	}
	req.Tool = chat.PermissionTool{Name: kind, Title: deref(tc.Title), Input: rawJSON(tc.RawInput), ToolCallID: tcID}
	if req.Tool.Input == nil {
		// What the person approves: the agent's explanation or diffs.
		in := map[string]any{}
		out, diffs := toolContent(tc.Content)
		if out != "" {
			in["description"] = out
		}
		if len(diffs) > 0 {
			in["diffs"] = diffs
		}
		if len(in) > 0 {
			req.Tool.Input = rawJSON(in)
		}
	}
	var out []chat.Payload
	if tcID != "" && !m.knows(tcID) {
		out = m.toolCall(tcID, deref(tc.Title), kind, string(sdk.ToolCallStatusPending), tc.RawInput, tc.Locations, tc.Content)
	}
	return append(out, req)
}

// knows reports whether the tool call has been reported.
func (m *mapper) knows(id string) bool {
	_, ok := m.tools[id]
	return ok
}

// closeTools ends the turn's tool calls that never reported an end: a turn
// is over, so a tool still "pending" on the screen would be untrue.
func (m *mapper) closeTools() []chat.Payload {
	var out []chat.Payload
	for _, id := range m.order {
		switch m.tools[id] {
		case string(sdk.ToolCallStatusCompleted), string(sdk.ToolCallStatusFailed):
		default:
			why := "the turn ended before the tool finished"
			if m.refused[id] {
				why = "not run: permission refused"
			}
			out = append(out, chat.ToolCallUpdate{ToolCallID: id, Status: string(sdk.ToolCallStatusFailed), Output: why})
		}
	}
	m.tools = map[string]string{}
	m.refused = map[string]bool{}
	m.order = nil
	return out
}

func (m *mapper) setMode(id string) []chat.Payload {
	if id == m.current {
		return nil
	}
	m.current = id
	return []chat.Payload{m.mode()}
}

func (m *mapper) mode() chat.Mode {
	return chat.Mode{Current: m.current, Available: m.modes, ConfigOptions: m.options}
}

// setModes records a session's mode state from session/new, load or resume.
func (m *mapper) setModes(st *sdk.SessionModeState) {
	if st == nil {
		return
	}
	m.current = string(st.CurrentModeId)
	m.modes = nil
	for _, md := range st.AvailableModes {
		m.modes = append(m.modes, chat.ModeOption{ID: string(md.Id), Name: md.Name, Description: deref(md.Description)})
	}
}

// setModels records the unstable model list as a "model" config option, so
// the dashboard can offer it like any other option.
func (m *mapper) setModels(st *sdk.SessionModelState) {
	if st == nil || len(st.AvailableModels) == 0 {
		return
	}
	opt := chat.ConfigOption{ID: modelOption, Name: "Model", Current: string(st.CurrentModelId)}
	for _, mi := range st.AvailableModels {
		opt.Values = append(opt.Values, chat.ModeOption{ID: string(mi.ModelId), Name: mi.Name, Description: deref(mi.Description)})
	}
	m.replaceOption(opt)
}

// setCurrent records a config option's new value. The slice is copied:
// payloads already reported share the old one.
func (m *mapper) setCurrent(optID, value string) {
	m.options = slices.Clone(m.options)
	for i := range m.options {
		if m.options[i].ID == optID {
			m.options[i].Current = value
		}
	}
}

func (m *mapper) replaceOption(opt chat.ConfigOption) {
	m.options = slices.Clone(m.options)
	for i := range m.options {
		if m.options[i].ID == opt.ID {
			m.options[i] = opt
			return
		}
	}
	m.options = append(m.options, opt)
}

// setOptions records the full set of config options (ACP always sends all).
func (m *mapper) setOptions(opts []sdk.SessionConfigOption) {
	var model *chat.ConfigOption
	for i := range m.options {
		if m.options[i].ID == modelOption {
			model = &m.options[i]
		}
	}
	var out []chat.ConfigOption
	seenModel := false
	for _, o := range opts {
		switch {
		case o.Select != nil:
			s := o.Select
			co := chat.ConfigOption{ID: string(s.Id), Name: s.Name, Current: string(s.CurrentValue)}
			if s.Options.Ungrouped != nil {
				for _, v := range *s.Options.Ungrouped {
					co.Values = append(co.Values, chat.ModeOption{ID: string(v.Value), Name: v.Name, Description: deref(v.Description)})
				}
			}
			if s.Options.Grouped != nil {
				for _, g := range *s.Options.Grouped {
					for _, v := range g.Options {
						co.Values = append(co.Values, chat.ModeOption{ID: string(v.Value), Name: g.Name + ": " + v.Name, Description: deref(v.Description)})
					}
				}
			}
			seenModel = seenModel || co.ID == modelOption
			m.kinds[co.ID] = "select"
			out = append(out, co)
		case o.Boolean != nil:
			b := o.Boolean
			cur := "false"
			if b.CurrentValue {
				cur = "true"
			}
			m.kinds[string(b.Id)] = "boolean"
			out = append(out, chat.ConfigOption{ID: string(b.Id), Name: b.Name, Current: cur,
				Values: []chat.ModeOption{{ID: "true", Name: "On"}, {ID: "false", Name: "Off"}}})
		}
	}
	if model != nil && !seenModel {
		out = append(out, *model)
	}
	m.options = out
}

// option returns the config option with that id.
func (m *mapper) option(id string) (chat.ConfigOption, bool) {
	for _, o := range m.options {
		if o.ID == id {
			return o, true
		}
	}
	return chat.ConfigOption{}, false
}

const modelOption = "model"

// contentText is a content block as text: text itself, links as Markdown,
// other media named in brackets.
func contentText(c sdk.ContentBlock) string {
	switch {
	case c.Text != nil:
		return c.Text.Text
	case c.ResourceLink != nil:
		return "[" + c.ResourceLink.Name + "](" + c.ResourceLink.Uri + ")"
	case c.Resource != nil:
		if r := c.Resource.Resource.TextResourceContents; r != nil {
			return r.Text
		}
		return "[resource]"
	case c.Image != nil:
		return "[image " + c.Image.MimeType + "]"
	case c.Audio != nil:
		return "[audio " + c.Audio.MimeType + "]"
	}
	return ""
}

// toolContent splits tool call content into text output and diffs.
func toolContent(content []sdk.ToolCallContent) (string, []chat.Diff) {
	var sb strings.Builder
	var diffs []chat.Diff
	for _, c := range content {
		switch {
		case c.Content != nil:
			if t := contentText(c.Content.Content); t != "" {
				if sb.Len() > 0 {
					sb.WriteString("\n")
				}
				sb.WriteString(t)
			}
		case c.Diff != nil:
			diffs = append(diffs, chat.Diff{Path: c.Diff.Path, OldText: deref(c.Diff.OldText), NewText: c.Diff.NewText})
		case c.Terminal != nil:
			if sb.Len() > 0 {
				sb.WriteString("\n")
			}
			sb.WriteString("[terminal " + c.Terminal.TerminalId + "]")
		}
	}
	return sb.String(), diffs
}

func locations(locs []sdk.ToolCallLocation) []chat.Location {
	var out []chat.Location
	for _, l := range locs {
		loc := chat.Location{Path: l.Path}
		if l.Line != nil {
			loc.Line = *l.Line
		}
		out = append(out, loc)
	}
	return out
}

// rawJSON marshals a tool's raw input, or returns nil when there is none.
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// stopReason maps ACP's stop reasons onto chat's.
func stopReason(r sdk.StopReason) string {
	switch r {
	case sdk.StopReasonEndTurn:
		return chat.StopEndTurn
	case sdk.StopReasonCancelled:
		return chat.StopCancelled
	case sdk.StopReasonMaxTokens, sdk.StopReasonMaxTurnRequests:
		// chat has one "a limit was hit" reason.
		return chat.StopMaxTokens
	case sdk.StopReasonRefusal:
		return chat.StopRefusal
	}
	return chat.StopEndTurn
}
