package router

import (
	"os"
	"strconv"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/rules"
)

// applyRules answers a permission card that has just opened by the person's
// rules, in the same step: the card is stored resolved, never seen open by
// the push sender, and the agent is told at once. A rule that asks, or no
// rule, leaves it open as before.
func (l *lane) applyRules(p chat.PermissionRequest) {
	decide := l.r.opt.Rules
	if decide == nil {
		return
	}
	command, paths := rules.FromTool(p.Tool.Input)
	home, _ := os.UserHomeDir()
	v := decide(rules.Call{Agent: l.th.Agent, Machine: l.r.opt.Node, Tool: p.Tool.Name, Command: command, Paths: paths,
		Dir: l.th.Cwd, Roots: l.ag.Roots, Home: home})
	kind, message := chat.OptionAllowOnce, ""
	switch v.Action {
	case rules.Allow:
	case rules.Deny:
		kind, message = chat.OptionRejectOnce, "denied by the person's "+v.By()
		if v.Reason != "" {
			message += ": " + v.Reason
		}
	default:
		return
	}
	option := ""
	for _, o := range p.Options {
		if o.Kind == kind {
			option = o.ID
			break
		}
	}
	if option == "" {
		l.log.Warn("a rule answered a card that offers no such option; it stays open", "request_id", p.RequestID, "rule", v.Rule, "kind", kind)
		return
	}
	ctl := Control{From: chat.RouteKey{Channel: "rule", Chat: strconv.Itoa(v.Rule)},
		Permission: &PermissionAnswer{RequestID: p.RequestID, OptionID: option, Message: message, rule: v.By()}}
	l.answerPermission(ctl, func(err error) {
		if err != nil {
			l.log.Warn("a rule's answer was not taken", "request_id", p.RequestID, "rule", v.Rule, "err", err)
		}
	})
}
