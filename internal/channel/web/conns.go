package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// connGate bounds the connections that have not shown the token (or a session):
// past the cap, a new connection closes the oldest such one. A flood of
// strangers so costs at most max file descriptors and never keeps the real
// user (whose connection shows the token within its first request) out.
// A connection that once showed the token is trusted for its lifetime.
type connGate struct {
	max int
	mu  sync.Mutex
	// unauth maps each untrusted connection to when it was accepted.
	unauth map[net.Conn]time.Time
	// evicted counts the connections closed for the cap.
	evicted func()
}

type connKey struct{}

// ConnContext puts the connection in its requests' context, so a request that
// shows the token can mark its connection trusted. For http.Server.ConnContext.
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnState tracks connections for the cap on unauthenticated ones. For
// http.Server.ConnState.
func (s *Server) ConnState(c net.Conn, st http.ConnState) {
	g := &s.gate
	g.mu.Lock()
	var oldest net.Conn
	switch st {
	case http.StateNew:
		if len(g.unauth) >= g.max {
			var at time.Time
			for o, t := range g.unauth {
				if oldest == nil || t.Before(at) {
					oldest, at = o, t
				}
			}
			delete(g.unauth, oldest)
		}
		g.unauth[c] = time.Now()
	case http.StateHijacked, http.StateClosed:
		delete(g.unauth, c)
	}
	g.mu.Unlock()
	if oldest != nil {
		g.evicted()
		oldest.Close()
	}
}

// trust marks the request's connection as the real user's.
func (s *Server) trust(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		s.gate.mu.Lock()
		delete(s.gate.unauth, c)
		s.gate.mu.Unlock()
	}
}

// OpenSocket takes one of the limits.max_sockets slots for a socket (chat, or
// another channel's such as ACP), or answers 503 saying why. The caller calls
// release when the socket ends.
func (s *Server) OpenSocket(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case s.socketSlots <- struct{}{}:
		return func() { <-s.socketSlots }, true
	default:
		s.m.closed.WithLabelValues("too_many_sockets").Inc()
		httpError(w, http.StatusServiceUnavailable,
			fmt.Sprintf("too many sockets open (at most %d: limits.max_sockets)", cap(s.socketSlots)))
		return nil, false
	}
}
