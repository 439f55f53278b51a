// A thread's change under review, and shipping it: GET …/changes, POST
// …/comment, …/commit, …/push, …/pr (internal/gitwork does the git).

package web

import (
	"context"
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/router"
)

// nodeChanges is a cluster's hub that asks a node for its thread's change
// (cluster.Hub).
type nodeChanges interface {
	NodeChanges(ctx context.Context, node string, thread chat.ThreadID, q gitwork.Query) (gitwork.Changes, error)
}

// reviewThread is the thread a review call names; false when answered
// already (unknown thread).
func (s *Server) reviewThread(w http.ResponseWriter, r *http.Request) (chat.Thread, bool) {
	th, err := s.store.Thread(r.Context(), chat.ThreadID(r.PathValue("id")))
	if err != nil {
		writeErr(w, err)
		return chat.Thread{}, false
	}
	return th, true
}

func (s *Server) handleThreadChanges(w http.ResponseWriter, r *http.Request) {
	th, ok := s.reviewThread(w, r)
	if !ok {
		return
	}
	off, err := queryInt(r, "offset", 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	q := gitwork.Query{Base: th.GitBase, Path: r.URL.Query().Get("path"), Offset: off}
	var c gitwork.Changes
	if th.Node != "" {
		nc, ok := s.opt.Cluster.(nodeChanges)
		if !ok {
			writeErr(w, fmt.Errorf("%w: thread %s is on machine %s, which this parley cannot ask", chat.ErrBadInput, th.ID, th.Node))
			return
		}
		node, own, ok := cluster.SplitRemoteID(th.ID)
		if !ok {
			node, own = th.Node, th.ID
		}
		c, err = nc.NodeChanges(r.Context(), node, own, q)
	} else {
		c, err = gitwork.Diff(r.Context(), th.Cwd, q)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleComment(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Path      string `json:"path"`
		Line      int    `json:"line"`
		Hunk      string `json:"hunk"`
		Text      string `json:"text"`
		MessageID string `json:"message_id"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	text, err := gitwork.CommentText(body.Path, body.Line, body.Hunk, body.Text)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.sendAndWait(w, r, chat.ThreadID(r.PathValue("id")), router.Message{MessageID: messageID(body.MessageID), Text: text})
}

func messageID(given string) string {
	if given != "" {
		return given
	}
	return chat.NewID("m")
}

func (s *Server) handleCommit(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message   string `json:"message"`
		AskAgent  bool   `json:"ask_agent"`
		MessageID string `json:"message_id"`
		RequestID string `json:"request_id"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	if body.AskAgent {
		// A message like any other: a node's thread's goes to its machine.
		s.sendAndWait(w, r, chat.ThreadID(r.PathValue("id")), router.Message{MessageID: messageID(body.MessageID), Text: gitwork.AskCommit})
		return
	}
	th, ok := s.reviewThread(w, r)
	if !ok {
		return
	}
	hub, node, own, remote, err := s.onNode(th)
	var c gitwork.Committed
	switch {
	case err != nil:
	case remote:
		c, err = hub.NodeCommit(r.Context(), node, own, body.RequestID, body.Message)
	default:
		c, err = s.work().Commit(r.Context(), th.ID, body.Message)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.recordGit(r, th, audit.KindGitCommit, "commit "+c.Commit+" on "+c.Branch, map[string]any{"commit": c.Commit, "branch": c.Branch})
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RequestID string `json:"request_id"`
	}
	if r.ContentLength != 0 && !s.readBody(w, r, &body) {
		return
	}
	th, ok := s.reviewThread(w, r)
	if !ok {
		return
	}
	hub, node, own, remote, err := s.onNode(th)
	var p gitwork.Pushed
	switch {
	case err != nil:
	case remote:
		p, err = hub.NodePush(r.Context(), node, own, body.RequestID)
	default:
		p, err = s.work().Push(r.Context(), th.ID)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.recordGit(r, th, audit.KindGitPush, "branch "+p.Branch+" pushed to "+p.Remote, map[string]any{"remote": p.Remote, "branch": p.Branch})
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) handlePR(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title     string `json:"title"`
		Body      string `json:"body"`
		RequestID string `json:"request_id"`
	}
	if r.ContentLength != 0 && !s.readBody(w, r, &body) {
		return
	}
	th, ok := s.reviewThread(w, r)
	if !ok {
		return
	}
	hub, node, own, remote, err := s.onNode(th)
	var pr gitwork.PullRequest
	switch {
	case err != nil:
	case remote:
		pr, err = hub.NodePR(r.Context(), node, own, body.RequestID, body.Title, body.Body)
	default:
		pr, err = s.work().PR(r.Context(), th.ID, body.Title, body.Body)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.recordGit(r, th, audit.KindGitPR, map[bool]string{true: "pull request opened: ", false: "pull request page: "}[pr.Created]+pr.URL,
		map[string]any{"url": pr.URL, "created": pr.Created})
	writeJSON(w, http.StatusOK, pr)
}
