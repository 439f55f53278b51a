package acp

import (
	"slices"

	sdk "github.com/coder/acp-go-sdk"
)

// parleyToolTitles are the titles agents give a call of parley's own MCP
// tools when they ask permission for it: Gemini CLI (and Qwen Code, its
// fork) "<tool> (parley MCP Server)"; Copilot CLI names the tool
// "parley-<tool>". Only an exact title counts: a shell command's title is
// its command line, which could hold these words.
var parleyToolTitles = func() []string {
	var out []string
	for _, tool := range []string{"ask_person", "notify_person"} {
		out = append(out, tool+" (parley MCP Server)", "parley-"+tool)
	}
	return out
}()

// allowParleyTool answers an agent's permission request for one of
// parley's own tools without a card: they only reach the person, who is
// asked by the tool itself. It picks the agent's "always" option (so the
// session asks no more), else "once"; ok is false for any other request.
func (s *Session) allowParleyTool(p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, bool) {
	if s.spec.Tools == nil || p.ToolCall.Title == nil || !slices.Contains(parleyToolTitles, *p.ToolCall.Title) {
		return sdk.RequestPermissionResponse{}, false
	}
	pick := func(kind sdk.PermissionOptionKind) (sdk.PermissionOptionId, bool) {
		for _, o := range p.Options {
			if o.Kind == kind {
				return o.OptionId, true
			}
		}
		return "", false
	}
	id, ok := pick(sdk.PermissionOptionKindAllowAlways)
	if !ok {
		if id, ok = pick(sdk.PermissionOptionKindAllowOnce); !ok {
			return sdk.RequestPermissionResponse{}, false
		}
	}
	s.logger.Debug("parley's own tool allowed", "title", *p.ToolCall.Title, "option", id)
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: id}}}, true
}
