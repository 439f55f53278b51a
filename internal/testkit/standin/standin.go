// Package standin is what every scripted model-API stand-in shares (claudeapi,
// geminiapi, openaiapi): the Duration type scenarios are written with, the TB
// a test hands in, a loopback HTTP server, the request log with its change
// signal, rule use counting (the three held together by Server), the small HTTP and streaming helpers, and the
// body of a stand-in command. Everything that depends on one API's wire
// format stays in that API's package.
package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Duration is a time.Duration written as "50ms" in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "50ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("standin: duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("standin: duration %s: %w", b, err)
	}
	*d = Duration(n)
	return nil
}

// TB is the part of testing.TB a stand-in needs.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Listen starts an HTTP server for h on addr (e.g. "127.0.0.1:0"); its URL is
// http://host:port. The error is net.Listen's. Stop it with Close.
func Listen(addr string, h http.Handler) (*httptest.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return ServeOn(ln, h), nil
}

// ServeOn serves h on ln.
func ServeOn(ln net.Listener, h http.Handler) *httptest.Server {
	hs := httptest.NewUnstartedServer(h)
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	return hs
}

// Close stops a server from Listen, dropping client connections first so
// in-flight streams end rather than hold it open.
func Close(hs *httptest.Server) {
	hs.CloseClientConnections()
	hs.Close()
}

// Log is the record of the requests a stand-in received. Its zero value is
// ready; it is safe for concurrent use.
type Log[R any] struct {
	mu      sync.Mutex
	items   []R
	changed chan struct{} // closed and replaced at each Add
}

// Add records r and closes the channel Changed handed out.
func (l *Log[R]) Add(r R) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, r)
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// All returns a copy of every recorded request, oldest first.
func (l *Log[R]) All() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]R(nil), l.items...)
}

// Changed returns a channel that is closed when the next request is recorded.
func (l *Log[R]) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// Uses counts the answers of each rule of a scenario, so that a rule limited
// to some number of answers stops matching. It is not safe for concurrent
// use: the stand-in's lock guards it.
type Uses struct{ used []int }

// Reset starts the counts again, for a scenario of n rules.
func (u *Uses) Reset(n int) { u.used = make([]int, n) }

// Take counts an answer by rule i and reports true if the rule has answers
// left under its limit times (0 or less: no limit); else it reports false.
func (u *Uses) Take(i, times int) bool {
	if times > 0 && u.used[i] >= times {
		return false
	}
	u.used[i]++
	return true
}

// Split cuts s into n pieces of near-equal rune counts, the deltas of a
// streamed text; n < 1 counts as 1 and n is at most the number of runes.
func Split(s string, n int) []string {
	rs := []rune(s)
	if n <= 1 || len(rs) <= 1 {
		return []string{s}
	}
	n = min(n, len(rs))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(rs[i*len(rs)/n:(i+1)*len(rs)/n]))
	}
	return out
}

// Wait pauses for d unless ctx ends first, and reports whether ctx is still
// live: false means the client went away.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// WriteJSON answers with v as JSON and the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// LoadJSON reads the JSON file at path into v (a scenario). A parse error
// names the file; a read error already does.
func LoadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteConfig writes v as indented JSON to path (mode 0600), creating the
// directories above it (mode 0700): an agent's settings in an isolated HOME.
func WriteConfig(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
