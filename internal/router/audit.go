package router

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
)

// The audit trail's choke points in the router: a message accepted into its
// thread (Send, on the one send path), a card answered (answerCard's
// callers) by a person, a surface or a rule, and an agent's session
// continued (ContinueSession) or handed back (the HandBack control). Text is
// never recorded.

// actorOf is who acts in a request: the device or token its context carries
// (the web channel puts it there), else the route it came from.
func actorOf(ctx context.Context, from chat.RouteKey) string {
	if a := audit.ActorFrom(ctx); a != "" {
		return a
	}
	return audit.ActorSurface + from.String()
}

func (r *Router) record(e audit.Entry) {
	if r.opt.Audit != nil {
		r.opt.Audit.Record(e)
	}
}

// recordSent records a message its lane accepted.
func (r *Router) recordSent(actor string, in chat.Input, origin *chat.Origin, retry bool) {
	detail := map[string]any{"message_id": in.MessageID, "route": in.From.String()}
	if r.opt.Node != "" {
		detail["machine"] = r.opt.Node
	}
	if retry {
		detail["retry"] = true
	}
	kind, subject := audit.KindMessageSent, "message "+in.MessageID+" sent"
	if origin != nil {
		detail["origin"] = origin
		switch origin.Kind {
		case chat.OriginSchedule:
			kind, actor = audit.KindScheduleRun, "schedule:"+origin.ID
		case chat.OriginTrigger:
			kind, actor = audit.KindTriggerRun, "trigger:"+origin.ID
		}
		subject = origin.Kind + " " + firstNonEmpty(origin.Name, origin.ID) + " sent message " + in.MessageID
	}
	d, _ := json.Marshal(detail)
	r.record(audit.Entry{TS: in.AcceptedAt, Kind: kind, Actor: actor, Thread: string(in.ThreadID), Subject: subject, Detail: d})
}

// recordAnswer records a card's answer: who (a device, a surface, a rule)
// and what (the option, or cancelled); a question's answers are not kept.
func (l *lane) recordAnswer(ctl Control, c *chat.Card, option string, cancelled bool) {
	actor := ctl.actor
	if ctl.From.Channel == "rule" {
		actor = audit.ActorRule + ctl.From.Chat
	} else if actor == "" {
		actor = audit.ActorSurface + ctl.From.String()
	}
	detail := map[string]any{"request_id": c.RequestID, "card": c.Kind, "route": ctl.From.String()}
	subject := c.Kind + " " + c.RequestID
	switch {
	case cancelled:
		detail["cancelled"] = true
		subject += " dismissed"
	case option != "":
		detail["option"] = option
		subject += " answered " + strconv.Quote(option)
	default:
		subject += " answered"
	}
	if ctl.Permission != nil && ctl.Permission.rule != "" {
		detail["rule"] = ctl.Permission.rule
	}
	if c.Kind == chat.CardPermission {
		var req chat.PermissionRequest
		if json.Unmarshal(c.Request, &req) == nil && req.Tool.Name != "" {
			detail["tool"] = req.Tool.Name
		}
	}
	if n := l.r.opt.Node; n != "" {
		detail["machine"] = n
	}
	d, _ := json.Marshal(detail)
	l.r.record(audit.Entry{TS: l.clock.Now(), Kind: audit.KindCardAnswer, Actor: actor, Thread: string(l.th.ID), Subject: subject, Detail: d})
}

// recordContinue records an agent's session continued in thread id: adopted
// when it ran in a terminal whose pane the thread took over, watched when
// the thread follows it read-only.
func (r *Router) recordContinue(ctx context.Context, from chat.RouteKey, ri ResumeIntent, id chat.ThreadID, term *terminal) {
	detail := map[string]any{"agent": ri.Agent, "session_id": ri.SessionID, "route": from.String()}
	verb := "continued"
	if term != nil {
		verb = map[string]string{termAdopt: "adopted", termWatch: "watched"}[term.kind]
		detail["terminal"] = verb
	}
	if m := firstNonEmpty(ri.Node, r.opt.Node); m != "" {
		detail["machine"] = m
	}
	d, _ := json.Marshal(detail)
	r.record(audit.Entry{Kind: audit.KindSessionContinue, Actor: actorOf(ctx, from), Thread: string(id),
		Subject: ri.Agent + " session " + ri.SessionID + " " + verb, Detail: d})
}

// recordHandBack records a thread's session handed back to a terminal (asked:
// it happens once the turn in flight is done).
func (l *lane) recordHandBack(ctl Control) {
	actor := ctl.actor
	if actor == "" {
		actor = audit.ActorSurface + ctl.From.String()
	}
	detail := map[string]any{"agent": l.th.Agent, "session_id": l.th.SessionID, "route": ctl.From.String()}
	if n := l.r.opt.Node; n != "" {
		detail["machine"] = n
	}
	d, _ := json.Marshal(detail)
	l.r.record(audit.Entry{TS: l.clock.Now(), Kind: audit.KindSessionHandBack, Actor: actor, Thread: string(l.th.ID),
		Subject: l.th.Agent + " session " + l.th.SessionID + " handed back to a terminal", Detail: d})
}
