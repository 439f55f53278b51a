package acpagent

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/parleyhq/parley/internal/chat"
)

// toUpdate maps a normalized event back onto ACP's session/update, the reverse of
// the acp driver's mapping. ok is false for events ACP has no update for; those
// travel as _parley/… notifications.
func toUpdate(ev chat.Event) (acp.SessionUpdate, bool) {
	switch ev.Type {
	case chat.TypeAgentChunk:
		var p chat.AgentChunk
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		u := acp.UpdateAgentMessageText(p.Text)
		if p.MessageID != "" {
			u.AgentMessageChunk.MessageId = acp.Ptr(p.MessageID)
		}
		return u, true
	case chat.TypeThoughtChunk:
		var p chat.ThoughtChunk
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		return acp.UpdateAgentThoughtText(p.Text), true
	case chat.TypeToolCall:
		var p chat.ToolCall
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		opts := []acp.ToolCallStartOpt{acp.WithStartKind(toolKind(p.Kind)), acp.WithStartStatus(toolStatus(p.Status))}
		if len(p.Input) > 0 {
			opts = append(opts, acp.WithStartRawInput(json.RawMessage(p.Input)))
		}
		if len(p.Locations) > 0 {
			opts = append(opts, acp.WithStartLocations(locations(p.Locations)))
		}
		return acp.StartToolCall(acp.ToolCallId(p.ToolCallID), p.Title, opts...), true
	case chat.TypeToolCallUpdate:
		var p chat.ToolCallUpdate
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		var opts []acp.ToolCallUpdateOpt
		if p.Status != "" {
			opts = append(opts, acp.WithUpdateStatus(toolStatus(p.Status)))
		}
		if p.Title != "" {
			opts = append(opts, acp.WithUpdateTitle(p.Title))
		}
		var content []acp.ToolCallContent
		if p.Output != "" {
			content = append(content, acp.ToolContent(acp.TextBlock(p.Output)))
		}
		for _, d := range p.Diffs {
			if d.OldText != "" {
				content = append(content, acp.ToolDiffContent(d.Path, d.NewText, d.OldText))
			} else {
				content = append(content, acp.ToolDiffContent(d.Path, d.NewText))
			}
		}
		if len(content) > 0 {
			opts = append(opts, acp.WithUpdateContent(content))
		}
		if len(p.Locations) > 0 {
			opts = append(opts, acp.WithUpdateLocations(locations(p.Locations)))
		}
		return acp.UpdateToolCall(acp.ToolCallId(p.ToolCallID), opts...), true
	case chat.TypePlan:
		var p chat.Plan
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		entries := make([]acp.PlanEntry, 0, len(p.Entries))
		for _, e := range p.Entries {
			pr := acp.PlanEntryPriority(e.Priority)
			if pr == "" {
				pr = acp.PlanEntryPriorityMedium
			}
			entries = append(entries, acp.PlanEntry{Content: e.Content, Priority: pr, Status: acp.PlanEntryStatus(e.Status)})
		}
		return acp.UpdatePlan(entries...), true
	case chat.TypeCommands:
		var p chat.Commands
		if ev.Decode(&p) != nil {
			return acp.SessionUpdate{}, false
		}
		cmds := make([]acp.AvailableCommand, 0, len(p.Commands))
		for _, c := range p.Commands {
			ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
			if c.Hint != "" {
				ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.Hint}}
			}
			cmds = append(cmds, ac)
		}
		return acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{
			SessionUpdate: "available_commands_update", AvailableCommands: cmds}}, true
	case chat.TypeMode:
		var p chat.Mode
		if ev.Decode(&p) != nil || p.Current == "" {
			return acp.SessionUpdate{}, false
		}
		meta := map[string]any{}
		if len(p.Available) > 0 {
			meta["parley/available"] = p.Available
		}
		if len(p.ConfigOptions) > 0 {
			meta["parley/config_options"] = p.ConfigOptions
		}
		u := &acp.SessionCurrentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeId: acp.SessionModeId(p.Current)}
		if len(meta) > 0 {
			u.Meta = meta
		}
		return acp.SessionUpdate{CurrentModeUpdate: u}, true
	}
	return acp.SessionUpdate{}, false
}

func toolKind(k string) acp.ToolKind {
	switch acp.ToolKind(k) {
	case acp.ToolKindRead, acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove, acp.ToolKindSearch,
		acp.ToolKindExecute, acp.ToolKindThink, acp.ToolKindFetch:
		return acp.ToolKind(k)
	}
	return acp.ToolKindOther
}

func toolStatus(s string) acp.ToolCallStatus {
	switch acp.ToolCallStatus(s) {
	case acp.ToolCallStatusPending, acp.ToolCallStatusInProgress, acp.ToolCallStatusCompleted, acp.ToolCallStatusFailed:
		return acp.ToolCallStatus(s)
	}
	return acp.ToolCallStatusPending
}

func locations(ls []chat.Location) []acp.ToolCallLocation {
	out := make([]acp.ToolCallLocation, 0, len(ls))
	for _, l := range ls {
		loc := acp.ToolCallLocation{Path: l.Path}
		if l.Line > 0 {
			loc.Line = acp.Ptr(l.Line)
		}
		out = append(out, loc)
	}
	return out
}
