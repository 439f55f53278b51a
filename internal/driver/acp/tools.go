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

// Codex (codex-acp 0.16.0) asks for every MCP tool call through an MCP
// elicitation it turns into a permission request titled "Approve MCP tool
// call", whose raw input names the server (server_name) and the approval's
// kind (request._meta.codex_approval_kind "mcp_tool_call"): a structured
// field Codex fills from its own MCP client, not from the model's text.
// Its options include "approved-for-session" and "approved-always"; the
// latter writes the person's Codex config, so parley picks the former.
const (
	codexApprovalTitle = "Approve MCP tool call"
	codexApprovalKind  = "mcp_tool_call"
	codexSessionOption = "approved-for-session"
)

// codexParleyCall tells whether p is Codex's approval of a call of server's
// tools (parley's own).
func codexParleyCall(p sdk.RequestPermissionRequest, server string) bool {
	if p.ToolCall.Title == nil || *p.ToolCall.Title != codexApprovalTitle {
		return false
	}
	raw, ok := p.ToolCall.RawInput.(map[string]any)
	if !ok || raw["server_name"] != server {
		return false
	}
	req, _ := raw["request"].(map[string]any)
	meta, _ := req["_meta"].(map[string]any)
	return meta["codex_approval_kind"] == codexApprovalKind
}

// allowParleyTool answers an agent's permission request for one of
// parley's own tools without a card: they only reach the person, who is
// asked by the tool itself. It picks the agent's option that allows this
// session's next calls too (Codex's "approved-for-session", else the first
// "always"), else "once"; ok is false for any other request.
func (s *Session) allowParleyTool(p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, bool) {
	if s.spec.Tools == nil {
		return sdk.RequestPermissionResponse{}, false
	}
	codex := codexParleyCall(p, s.spec.Tools.Name)
	if !codex && (p.ToolCall.Title == nil || !slices.Contains(parleyToolTitles, *p.ToolCall.Title)) {
		return sdk.RequestPermissionResponse{}, false
	}
	pick := func(ok func(sdk.PermissionOption) bool) (sdk.PermissionOptionId, bool) {
		for _, o := range p.Options {
			if ok(o) {
				return o.OptionId, true
			}
		}
		return "", false
	}
	id, ok := pick(func(o sdk.PermissionOption) bool {
		if codex {
			return o.OptionId == codexSessionOption
		}
		return o.Kind == sdk.PermissionOptionKindAllowAlways
	})
	if !ok {
		if id, ok = pick(func(o sdk.PermissionOption) bool { return o.Kind == sdk.PermissionOptionKindAllowOnce }); !ok {
			return sdk.RequestPermissionResponse{}, false
		}
	}
	s.logger.Debug("parley's own tool allowed", "title", *p.ToolCall.Title, "option", id)
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Selected: &sdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: id}}}, true
}
