// Package mcpserver is parley's own MCP server, named "parley", which every
// agent parley starts is given: its tools reach the person of the agent's
// thread. ask_person becomes a question card in the thread (the router's card
// state: answered once, from any surface) and returns the answer;
// notify_person stores a notice in the thread's log and returns at once.
//
// It is served over streamable HTTP on loopback (the one transport every
// agent checked takes: Copilot refuses stdio over ACP), stateless, so each
// request is judged alone: its bearer credential names exactly one thread.
// A credential is made when the router starts an agent's session (Grant) and
// dropped when that session ends; one that is missing, unknown or dropped is
// refused with 401, and no request can name another thread than its
// credential's.
package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/driver"
)

// Name is the server's name, as agents list its tools
// (mcp__parley__ask_person, mcp_parley_ask_person, parley-ask_person).
const Name = "parley"

// Path is where the server answers on its listener.
const Path = "/mcp"

// Bounds of what an agent may send.
const (
	maxBody     = 64 << 10
	maxText     = 4000 // a question's or a notice's characters
	maxOptions  = 20
	maxOptionLn = 200
)

// Person is who the tools reach: the router, which owns each thread's cards
// and log.
type Person interface {
	// Ask opens a question card in thread and waits for its answer: the
	// words picked or written. It fails when the card closes unanswered (a
	// stop, the turn's or the session's end) or ctx ends (the agent gave up
	// the call: the card is withdrawn).
	Ask(ctx context.Context, thread chat.ThreadID, q chat.QuestionItem) ([]string, error)
	// Notify stores n in thread's log; it returns once it is stored.
	Notify(ctx context.Context, thread chat.ThreadID, n chat.Notice) error
}

// Server is the MCP server and the credentials it honours. Its methods are
// safe for concurrent use.
type Server struct {
	person Person
	log    *slog.Logger
	http   *http.Server
	ln     net.Listener
	url    string

	mu        sync.Mutex
	keepEvery time.Duration                     // a waiting ask's progress notifications (keepalive.go)
	grants    map[[sha256.Size]byte]*mcp.Server // by the credential's hash: one server per session, bound to its thread
	calls     map[string]context.Context        // the HTTP requests in flight, by callHeader
}

// callHeader names the HTTP request a tool call came in (set by the
// server itself, whatever the agent sent): the SDK runs tool handlers on a
// context detached from the request, and an agent that gives up a call
// drops its request, which must end the call (an ask's card is withdrawn).
const callHeader = "X-Parley-Call"

// Listen starts the server on a loopback port of its own (never the
// dashboard's listener, which may face a network).
func Listen(person Person, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcpserver: listen: %w", err)
	}
	s := &Server{person: person, log: log, ln: ln, keepEvery: DefaultKeepAlive, grants: map[[sha256.Size]byte]*mcp.Server{}, calls: map[string]context.Context{}}
	s.url = "http://" + ln.Addr().String() + Path
	mux := http.NewServeMux()
	mux.Handle(Path, s.Handler())
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("mcpserver: serve", "err", err)
		}
	}()
	return s, nil
}

// SetKeepAlive sets how often a waiting ask_person sends a progress
// notification (DefaultKeepAlive; 0: never). For tests that shorten an
// agent's idle bound.
func (s *Server) SetKeepAlive(d time.Duration) {
	s.mu.Lock()
	s.keepEvery = d
	s.mu.Unlock()
}

// URL is where agents reach the server.
func (s *Server) URL() string { return s.url }

// Close stops the server; calls in flight end with their requests.
func (s *Server) Close(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}

// Grant makes a credential for one agent session of thread and returns the
// server as the agent is to be given it; revoke drops the credential (call
// it when the session ends; calling it again does nothing).
func (s *Server) Grant(thread chat.ThreadID) (srv *driver.MCPServer, revoke func()) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	key := sha256.Sum256([]byte(secret))
	s.mu.Lock()
	s.grants[key] = s.newMCP(thread)
	s.mu.Unlock()
	var once sync.Once
	return &driver.MCPServer{
			Name: Name, URL: s.url,
			Headers: map[string]string{"Authorization": "Bearer " + secret},
		}, func() {
			once.Do(func() {
				s.mu.Lock()
				delete(s.grants, key)
				s.mu.Unlock()
			})
		}
}

// Handler serves the MCP endpoint: each request's credential picks the
// thread's server, or the request is refused.
func (s *Server) Handler() http.Handler {
	mcpH := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.serverFor(r)
	}, &mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: maxBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.serverFor(r) == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
			http.Error(w, "parley: this MCP server needs the credential parley gave the agent's session (a missing, wrong or ended one is refused)", http.StatusUnauthorized)
			return
		}
		id := rand.Text()
		r.Header.Set(callHeader, id)
		s.mu.Lock()
		s.calls[id] = r.Context()
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.calls, id)
			s.mu.Unlock()
		}()
		mcpH.ServeHTTP(w, r)
	})
}

// callContext is ctx, ended also when the HTTP request that carried call
// (its callHeader) ends.
func (s *Server) callContext(ctx context.Context, call *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if call.Extra == nil {
		return ctx, cancel
	}
	s.mu.Lock()
	req := s.calls[call.Extra.Header.Get(callHeader)]
	s.mu.Unlock()
	if req == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(req, cancel)
	return ctx, func() { stop(); cancel() }
}

// serverFor is the server of r's credential, or nil.
func (s *Server) serverFor(r *http.Request) *mcp.Server {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil
	}
	key := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[key]
}
