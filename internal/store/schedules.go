package store

import (
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// Schedule is a schedule as kept (internal/schedule owns its meaning).
type Schedule struct {
	ID      string
	Name    string
	Agent   string
	Cwd     string
	Thread  chat.ThreadID // every run goes to this thread
	NewEach bool          // every run starts a new thread
	Kind    string        // cron, every, at
	Expr    string
	TZ      string
	Missed  string // run-once, skip
	Text    string
	Paused  bool
	NextRun time.Time // zero: no run to come
	LastRun time.Time
	// LastThread is the thread the last run went to.
	LastThread chat.ThreadID
	LastError  string
	Created    time.Time
}

// Trigger is a webhook that starts a turn (internal/trigger owns its meaning).
type Trigger struct {
	ID         string
	Name       string
	Agent      string
	Cwd        string
	Thread     chat.ThreadID
	NewEach    bool
	Template   string
	Secret     string // the HMAC key; never logged
	LastRun    time.Time
	LastThread chat.ThreadID
	LastError  string
	Created    time.Time
}
