// A thread's directory, read-only: the dashboard's file browser
// (internal/filetree reads it; a node's thread's is read on its node).

package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/filetree"
)

const (
	// maxFileText is the largest file shown as text (filetree.MaxText).
	maxFileText = filetree.MaxText
	// maxFileImage is the largest image served (?raw=1).
	maxFileImage = filetree.MaxImage
)

// handleFiles answers ?path=P (relative to the thread's directory; "" for
// the directory itself): a directory's entries, or a file's text. Nothing
// outside the thread's directory is read: the path is resolved, symbolic
// links included, and refused when it leaves. Files git ignores (and .git)
// are hidden unless ?all=1. ?raw=1 serves an image with its content type.
// A node's thread's files are read on the node (an image at most
// cluster.MaxNodeRaw).
func (s *Server) handleFiles(w http.ResponseWriter, r *http.Request) {
	th, err := s.store.Thread(r.Context(), chat.ThreadID(r.PathValue("id")))
	if err != nil {
		writeErr(w, err)
		return
	}
	hub, node, own, remote, err := s.onNode(th)
	if err != nil {
		writeErr(w, err)
		return
	}
	q := filetree.Query{Path: r.URL.Query().Get("path"), All: r.URL.Query().Get("all") == "1"}
	if r.URL.Query().Get("raw") == "1" {
		var data []byte
		if remote {
			data, err = hub.NodeRaw(r.Context(), node, own, q)
		} else {
			data, err = s.work().Raw(r.Context(), th.ID, q, maxFileImage)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		serveImage(w, q.Path, data)
		return
	}
	var v filetree.View
	if remote {
		v, err = hub.NodeFiles(r.Context(), node, own, q)
	} else {
		v, err = s.work().Files(r.Context(), th.ID, q)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// serveImage serves an image file's bytes with its sniffed content type, in
// a sandbox (as uploads are); anything else is refused.
func serveImage(w http.ResponseWriter, rel string, data []byte) {
	ct := http.DetectContentType(data)
	if !strings.HasPrefix(ct, "image/") {
		httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s is not an image: raw=1 serves images only", rel))
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(data)
}
