// Threads: the list, one thread, edits, unload, delete, search, the new-thread
// form's folders, the thread a route shows, and the agent processes running for them.

package web

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/procgroup"
	"github.com/parleyhq/parley/internal/router"
)

// handleThreads lists the threads that are not archived, or with
// ?archived=1 the archived ones.
func (s *Server) handleThreads(w http.ResponseWriter, r *http.Request) {
	archived := r.URL.Query().Get("archived") == "1"
	ths, err := s.store.Threads(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	var nodeCards map[chat.ThreadID][]cluster.OpenCard
	if nc, ok := s.store.(nodeCardLister); ok {
		if nodeCards, err = nc.NodeCards(r.Context()); err != nil {
			writeErr(w, err)
			return
		}
	}
	out := make([]threadView, 0, len(ths))
	for _, th := range ths {
		if th.Archived != archived {
			continue
		}
		v := threadView{Thread: th}
		if nodeCards != nil && cluster.NodeOf(th.ID) != "" {
			if cs := nodeCards[th.ID]; len(cs) > 0 {
				c := cs[len(cs)-1]
				v.waitsOn(openCard{RequestID: c.RequestID, Kind: c.Kind, Title: c.Title()})
			}
			out = append(out, v)
			continue
		}
		// One indexed look-up per thread: the side list shows every thread's
		// "waiting for …", not only the one open in the chat.
		open, err := s.store.Cards(r.Context(), th.ID, chat.CardOpen)
		if err != nil {
			writeErr(w, err)
			return
		}
		if len(open) > 0 {
			c := open[len(open)-1]
			v.waitsOn(openCard{RequestID: c.RequestID, Kind: c.Kind, Title: c.Title()})
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"threads": out})
}

// nodeCardLister is a cluster hub's store (cluster.View): what a node's
// threads wait for comes from the directory, never from a read of the node.
type nodeCardLister interface {
	NodeCards(ctx context.Context) (map[chat.ThreadID][]cluster.OpenCard, error)
}

// threadView is a thread as the thread list shows it: with what it waits for.
type threadView struct {
	chat.Thread
	// Waiting is the kind of the newest open card ("permission" or "question"),
	// or "" when the thread waits for nobody.
	Waiting string    `json:"waiting,omitempty"`
	Card    *openCard `json:"card,omitempty"`
}

// waitsOn says the thread waits on c, its newest open card.
func (v *threadView) waitsOn(c openCard) { v.Waiting, v.Card = c.Kind, &c }

// openCard names a thread's newest open card, so a page can tell a new card
// from one it has already announced.
type openCard struct {
	RequestID string `json:"request_id"`
	Kind      string `json:"kind"`
	Title     string `json:"title,omitempty"`
}

// handleRoute says which thread a route shows, without attaching anything:
// parley send reads the terminal's route this way and sends from its own, so
// an open parley chat never moves.
func (s *Server) handleRoute(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := chat.RouteKey{Channel: q.Get("channel"), Chat: q.Get("chat")}
	if key.Channel == "" || key.Chat == "" {
		httpError(w, http.StatusBadRequest, "channel and chat are both needed")
		return
	}
	id, err := s.router.ThreadOf(r.Context(), key)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channel": key.Channel, "chat": key.Chat, "thread": id})
}

// handleProcesses lists the agent processes running for threads, with their
// memory (their process group's, from /proc).
func (s *Server) handleProcesses(w http.ResponseWriter, _ *http.Request) {
	live := s.router.LiveSessions()
	for i := range live {
		live[i].RSSBytes = procgroup.RSS(live[i].PID)
	}
	writeJSON(w, http.StatusOK, map[string]any{"processes": live})
}

// handleUnload ends a thread's agent process now, as an idle unload would.
func (s *Server) handleUnload(w http.ResponseWriter, r *http.Request) {
	err := s.router.Control(r.Context(), router.Control{From: restRoute, Thread: chat.ThreadID(r.PathValue("id")), Unload: true})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"unloaded": true})
}

// handleEditThread renames a thread or (un)archives it: {"title": …,
// "archived": …}, either or both.
func (s *Server) handleEditThread(w http.ResponseWriter, r *http.Request) {
	var e router.ThreadEdit
	if !s.readBody(w, r, &e) {
		return
	}
	id := chat.ThreadID(r.PathValue("id"))
	if err := s.router.Control(r.Context(), router.Control{From: restRoute, Thread: id, Edit: &e}); err != nil {
		writeErr(w, err)
		return
	}
	th, err := s.store.Thread(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread": th})
}

// handleDeleteThread deletes a thread (router.DeleteThread); the answer says
// what happened to the agent's own session.
func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := router.DeleteOptions{RemoveWorktree: q.Get("remove_worktree") == "1" || q.Get("remove_worktree") == "true",
		Force: q.Get("force") == "1" || q.Get("force") == "true"}
	if err := s.router.DeleteThreadWith(r.Context(), chat.ThreadID(r.PathValue("id")), opts); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "note": router.DeletedNote})
}

// handleSearch searches titles and messages: ?q=words[&limit=n].
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if all, ok := s.store.(everyMachineSearch); ok {
		hits, unsearched, err := all.SearchAll(r.Context(), r.URL.Query().Get("q"), limit)
		if err != nil {
			writeErr(w, err)
			return
		}
		if unsearched == nil {
			unsearched = []cluster.Unsearched{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"hits": hits, "unsearched": unsearched})
		return
	}
	hits, err := s.store.Search(r.Context(), r.URL.Query().Get("q"), limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"hits": hits})
}

// everyMachineSearch is a cluster hub's store (cluster.View): a search covers
// every machine and says which it could not.
type everyMachineSearch interface {
	SearchAll(ctx context.Context, q string, limit int) ([]chat.SearchHit, []cluster.Unsearched, error)
}

func (s *Server) handleThread(w http.ResponseWriter, r *http.Request) {
	th, err := s.store.Thread(r.Context(), chat.ThreadID(r.PathValue("id")))
	if err != nil {
		writeErr(w, err)
		return
	}
	open, err := s.store.Cards(r.Context(), th.ID, chat.CardOpen)
	if err != nil {
		writeErr(w, err)
		return
	}
	if open == nil {
		open = []chat.Card{}
	}
	out := map[string]any{"thread": th, "open_cards": open}
	// An offline machine's thread is read from its summary; its usage is
	// unknown until it is back (left out, not shown as nothing spent).
	switch usage, err := s.store.Usage(r.Context(), th.ID); {
	case err == nil:
		out["usage"] = usage
	case !errors.Is(err, cluster.ErrNodeOffline):
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleComplete lists subdirectories for the new-thread form, within the roots.
func (s *Server) handleComplete(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		writeJSON(w, http.StatusOK, map[string]any{"dirs": s.opt.Roots})
		return
	}
	dir, prefix := p, ""
	if !strings.HasSuffix(p, "/") {
		dir, prefix = filepath.Dir(p), filepath.Base(p)
	}
	real, err := config.Confine(dir, s.opt.Roots)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"dirs": []string{}})
		return
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"dirs": []string{}})
		return
	}
	dirs := []string{}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, filepath.Join(real, e.Name()))
			if len(dirs) == 50 {
				break
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dirs": dirs})
}
