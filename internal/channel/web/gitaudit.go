package web

import (
	"encoding/json"
	"net/http"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
)

// recordGit puts a commit, push or pull request made in a thread's directory
// in the audit trail (Options.Audit): who asked (the device, or the token:
// the CLI), which thread, what git made of it. A commit's message and a pull
// request's title and body are never recorded.
func (s *Server) recordGit(r *http.Request, th chat.Thread, kind, subject string, detail map[string]any) {
	if s.opt.Audit == nil {
		return
	}
	detail["cwd"] = th.Cwd
	if s.opt.Machine != "" {
		detail["machine"] = s.opt.Machine
	}
	d, _ := json.Marshal(detail)
	s.opt.Audit.Record(audit.Entry{Kind: kind, Actor: audit.ActorOr(r.Context(), audit.ActorToken),
		Thread: string(th.ID), Subject: subject, Detail: d})
}
