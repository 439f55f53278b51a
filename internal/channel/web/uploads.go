// A thread's uploaded files.

package web

import (
	"net/http"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/uploads"
)

// handleUpload shows an image attached to a message of a thread of this
// machine (a thumbnail in the transcript); a remote thread's files stay on
// its machine (404).
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	id := chat.ThreadID(r.PathValue("id"))
	if cluster.NodeOf(id) != "" {
		// A node's thread's files are on that node's disk; the path its
		// summary names may hold another file here (or nothing).
		httpError(w, http.StatusNotFound, "a machine's thread's files stay on that machine")
		return
	}
	th, err := s.store.Thread(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	data, mime, err := uploads.OpenImage(th.Cwd, r.PathValue("name"))
	if err != nil {
		httpError(w, http.StatusNotFound, "no such uploaded image in this thread")
		return
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Cache-Control", "private, max-age=3600")
	w.Write(data)
}
