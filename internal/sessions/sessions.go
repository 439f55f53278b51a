// Package sessions finds the agents' own sessions on this machine: the
// transcripts Claude Code, Codex and Gemini CLI keep on disk, and the sessions
// an ACP agent lists itself. They are not parley's threads (package chat), its
// agent processes (router.LiveSessions) nor its signed-in devices (auth).
//
// One Index owns the listing: it keeps what it read of each transcript file in
// SQLite, keyed by path with size and mtime, so a listing re-reads only the
// files that changed.
package sessions

import (
	"context"
	"time"
)

// Session is one agent session found on a machine.
type Session struct {
	ID    string `json:"id"`    // the agent's own session id (what its resume takes)
	Agent string `json:"agent"` // the source: "claude", "codex", "gemini", or an ACP agent's configured id
	Cwd   string `json:"cwd"`   // the directory it ran in ("" when the transcript does not say)
	Title string `json:"title"` // the agent's own title, else the first prompt
	// UpdatedAt is its last activity: the newest record's time, else the file's mtime.
	UpdatedAt time.Time `json:"updated_at"`
	Turns     int       `json:"turns"`   // the person's prompts in it
	Running   bool      `json:"running"` // a process of the agent has it open now
	// Where it runs: "tmux:SERVER:TARGET" (SERVER the tmux socket's name,
	// TARGET "session:window.pane"), "pid:1234" for a plain terminal, or ""
	// (not running, or running where parley cannot tell).
	Where string `json:"where"`
	PID   int    `json:"pid,omitempty"` // the agent's process when running and known
	// Node is the machine it is on: "" for this one; a hub fills in a node's.
	Node string `json:"node"`
	// Path is the transcript file (never sent: a client has no use for it).
	Path string `json:"-"`
}

// Filter narrows a listing.
type Filter struct {
	Agent   string // only this agent's sessions ("" every agent)
	Machine string // only this machine's ("" every machine; a node's Index answers only its own name or "")
	// All includes the sessions parley's own threads hold. Sessions outside
	// the machine's roots are never listed.
	All bool
}

// Source is one agent's sessions. A source implements FileSource (the index
// keeps what it read) or Lister (asked every time), and may implement Runner.
type Source interface {
	// Agent names the source; it is Session.Agent of what it finds.
	Agent() string
}

// FileSource is an agent that keeps one transcript file per session.
type FileSource interface {
	Source
	// Files calls visit for every transcript file the agent keeps now. A
	// missing folder is no error (the agent never ran here).
	Files(ctx context.Context, visit func(path string, size int64, mtime time.Time)) error
	// Read reads one transcript: whatever could be read of it, with bounded
	// memory however big the file. An error means nothing could be read at
	// all (the file vanished); a half-written or foreign file is not one.
	Read(path string) (Session, error)
}

// Lister is an agent that lists its sessions itself (ACP session/list).
type Lister interface {
	Source
	List(ctx context.Context) ([]Session, error)
}

// Runner is a source that can tell which sessions run now.
type Runner interface {
	// Running maps session id to where it runs (Running, Where and PID set).
	Running(ctx context.Context) (map[string]Live, error)
}

// Live is where a running session runs.
type Live struct {
	PID   int
	Where string
}

// Held says which session ids parley's own threads hold: those are not
// listed unless Filter.All. It is the daemon's (its store knows the threads).
type Held func(ctx context.Context) (map[string]bool, error)

// Listing is what GET /api/sessions answers: the sessions, and at a
// cluster's hub how fresh each machine's part is.
type Listing struct {
	Sessions []Session `json:"sessions"`
	// Machines says, per machine, when its part was listed; a machine that is
	// away is Stale (its last listing, kept at the hub), never an error.
	Machines []Machine `json:"machines,omitempty"`
}

// Machine is one machine's part of a Listing.
type Machine struct {
	Node     string    `json:"node"`
	ListedAt time.Time `json:"listed_at"`
	Stale    bool      `json:"stale,omitempty"`
	Error    string    `json:"error,omitempty"` // why it is stale, when it is
}
