package standin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Server is what every scenario-driven stand-in server holds the same way: its
// loopback listener, the log of the requests it got (R) and the scenario (S)
// with its rules' use counts. An API's package embeds it and answers in its
// own wire format.
type Server[R, S any] struct {
	// URL is the base URL the agent is pointed at (http://127.0.0.1:port).
	URL string

	hs    *httptest.Server
	log   Log[R]
	rules func(S) int // how many rules a scenario has

	// Mu guards Sc and Uses, and what the embedding server keeps beside them.
	Mu   sync.Mutex
	Sc   S
	Uses Uses // answers per rule
}

// Init sets the scenario sc (rules says how many rules a scenario has) and
// serves h on addr (e.g. "127.0.0.1:0"); the error is net.Listen's.
func (s *Server[R, S]) Init(addr string, sc S, rules func(S) int, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.InitOn(ln, sc, rules, h)
	return nil
}

// InitOn is Init serving on a listener the caller opened (one inside a
// network namespace: only that namespace reaches it).
func (s *Server[R, S]) InitOn(ln net.Listener, sc S, rules func(S) int, h http.Handler) {
	s.rules = rules
	s.SetScenario(sc)
	hs := ServeOn(ln, h)
	s.hs, s.URL = hs, hs.URL
}

// Close stops the server; in-flight streams end when their clients go away.
func (s *Server[R, S]) Close() { Close(s.hs) }

// SetScenario replaces the script (rule use counts start again).
func (s *Server[R, S]) SetScenario(sc S) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	s.Sc = sc
	s.Uses.Reset(s.rules(sc))
}

// Record adds r to the log.
func (s *Server[R, S]) Record(r R) { s.log.Add(r) }

// Requests returns every recorded request, oldest first.
func (s *Server[R, S]) Requests() []R { return s.log.All() }

// RequestsWhere returns the recorded requests keep accepts, oldest first.
func (s *Server[R, S]) RequestsWhere(keep func(R) bool) []R {
	var out []R
	for _, r := range s.log.All() {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// Changed returns a channel that is closed when the next request is recorded.
func (s *Server[R, S]) Changed() <-chan struct{} { return s.log.Changed() }
