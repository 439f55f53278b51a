// Package web is the web channel: the chat socket (/ws/chat), the REST API, the
// token login and the embedded dashboard. The socket and REST reach the very same
// router calls: there is one send path.
package web

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
)

// Channel kinds a socket may declare.
var socketChannels = map[string]bool{"web": true, "tui": true}

// Version is what /api/version reports: the running process, not the file on disk.
type Version struct {
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	Built   string    `json:"built"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	UIHash  string    `json:"ui_hash,omitempty"`
}

// Options configure the server.
type Options struct {
	Token          string
	Devices        *auth.Devices
	Limits         config.Limits
	AllowedOrigins []string
	Roots          []string
	Version        Version
	UI             fs.FS // the dashboard bundle; nil serves a plain placeholder
	Logger         *slog.Logger
	Registry       *prometheus.Registry
	// BaseURL, when set and not "", is the address pairing links carry (a
	// phone cannot open a loopback one); else the request's own host is used.
	BaseURL func() string
	// Push keeps the devices' Web Push subscriptions; nil serves no push.
	Push Push
	// Cluster, on a cluster's hub, lists every machine's agents and the
	// joined machines; nil on a machine that is not a hub.
	Cluster Cluster
	// Sessions lists the agents' own sessions (GET /api/sessions); nil lists none.
	Sessions Sessions
	// Audit records git actions (gitaudit.go), naming Machine (this
	// machine in its cluster, or ""); nil records nothing.
	Audit   audit.Log
	Machine string
}

// Cluster is a cluster's hub as the dashboard shows it (cluster.Hub, with
// the hub's own machine name).
type Cluster interface {
	// Agents lists own (this machine's agents) and every node's, each with
	// its node; on an error what it could list.
	Agents(ctx context.Context, own []chat.AgentInfo) ([]chat.AgentInfo, error)
	// Node is this machine's name in the cluster.
	Node() string
	// Machines lists the joined machines, as `parley nodes` prints them.
	Machines(ctx context.Context) ([]cluster.NodeStatus, error)
	// MachinesChanged is closed when a machine next comes online or goes
	// offline (then ask again).
	MachinesChanged() <-chan struct{}
}

// Server is the web channel's HTTP handler.
type Server struct {
	opt    Options
	cookie string // the session cookie's name (cookie.go)
	router *router.Router
	store  store.Store
	fanout *fanout.Fanout
	log    *slog.Logger
	mux    *http.ServeMux
	m      *metrics

	ctx     context.Context // connections' lifetime
	cancel  context.CancelFunc
	sockets socketCount // open chat sockets (sockcount.go)

	live        live          // each device's requests in flight, ended at revocation (devices.go)
	gate        connGate      // the cap on connections without the token (conns.go)
	socketSlots chan struct{} // one per open socket, limits.max_sockets
	changeSlots chan struct{} // one per open change stream, maxWatchers (changes.go)
	terminals   atomic.Int32  // open terminal streams (terminal.go)
}

// New builds the handler.
func New(r *router.Router, st store.Store, h *fanout.Fanout, opt Options) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Devices == nil {
		opt.Devices, _ = auth.OpenDevices("") // in memory: cannot fail
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opt: opt, cookie: SessionCookie(opt.Token), router: r, store: st, fanout: h, log: opt.Logger, mux: http.NewServeMux(),
		m: newMetrics(opt.Registry, h), ctx: ctx, cancel: cancel,
		socketSlots: make(chan struct{}, max(opt.Limits.MaxSockets, 1)), changeSlots: make(chan struct{}, maxWatchers)}
	s.gate = connGate{max: max(opt.Limits.MaxUnauthenticated, 1), unauth: map[net.Conn]time.Time{}, evicted: s.m.evicted.Inc}
	s.routes()
	return s
}

// Shutdown closes every socket with a reason, gives them a moment to say goodbye,
// then ends what is left.
func (s *Server) Shutdown() {
	s.fanout.CloseAll(fanout.ReasonShutdown)
	select {
	case <-s.sockets.drained():
	case <-time.After(2 * time.Second):
	}
	s.cancel()
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	// Signing in and devices: page.go, devices.go.
	s.mux.HandleFunc("GET /login", s.handleLoginLink)
	s.mux.HandleFunc("POST /login", s.handleLoginForm)
	api := func(pattern string, h http.HandlerFunc) { s.mux.Handle(pattern, s.authed(h)) } // auth.go
	api("POST /logout", s.handleLogout)
	api("POST /api/login-codes", s.handleLoginCode)
	api("POST /api/pair-codes", s.handlePairCode)
	s.mux.HandleFunc("POST /api/pair", s.handlePair)
	api("GET /api/devices", s.handleDevices)
	api("DELETE /api/devices/{id}", s.handleRevokeDevice)
	api("PATCH /api/devices/{id}", s.handleDevicePrefs)
	// Web Push: push.go.
	api("GET /api/push/key", s.handlePushKey)
	api("POST /api/push/subscriptions", s.handlePushSubscribe)
	api("DELETE /api/push/subscriptions", s.handlePushUnsubscribe)
	api("POST /api/push/screen", s.handleScreen)
	// The chat socket: socket.go.
	api("GET /ws/chat", s.handleSocket)
	// This parley, its agents and machines: server.go, agents.go, machines.go.
	api("GET /api/version", s.handleVersion)
	api("GET /api/agents", s.handleAgents)
	api("GET /api/agents/{id}/sessions", s.handleNativeSessions)
	api("GET /api/nodes", s.handleNodes)
	// Threads: threads.go (changes.go: the list's live changes).
	api("GET /api/threads", s.handleThreads)
	api("GET /api/threads/changes", s.handleChanges)
	api("GET /api/threads/{id}", s.handleThread)
	api("PATCH /api/threads/{id}", s.handleEditThread)
	api("DELETE /api/threads/{id}", s.handleDeleteThread)
	api("POST /api/threads/{id}/unload", s.handleUnload)
	api("GET /api/search", s.handleSearch)
	api("GET /api/fs/complete", s.handleComplete)
	api("GET /api/route", s.handleRoute)
	api("GET /api/sessions", s.handleSessions)
	api("GET /api/processes", s.handleProcesses)
	// A thread's conversation over REST: messages.go; its uploaded files: uploads.go.
	api("GET /api/threads/{id}/events", s.handleEvents)
	api("POST /api/threads/{id}/messages", s.handleSend)
	api("POST /api/threads/{id}/stop", s.handleStop)
	api("POST /api/threads/{id}/cards/{request_id}", s.handleCard)
	api("GET /api/threads/{id}/uploads/{name}", s.handleUpload)
	// Its directory's files and its terminal: files.go, terminal.go.
	api("GET /api/threads/{id}/files", s.handleFiles)
	api("GET /api/threads/{id}/terminal", s.handleTerminal)
	api("POST /api/threads/{id}/terminal/keys", s.handleTerminalKeys)
	// A thread's change and shipping it: review.go.
	api("GET /api/threads/{id}/changes", s.handleThreadChanges)
	api("POST /api/threads/{id}/comment", s.handleComment)
	api("POST /api/threads/{id}/commit", s.handleCommit)
	api("POST /api/threads/{id}/push", s.handlePush)
	api("POST /api/threads/{id}/pr", s.handlePR)
	// A notice from a script (parley notify): notify.go.
	api("POST /api/notify", s.handleNotify)
	// What the agents spent, and any other /api/ path: usage.go.
	api("GET /api/usage", s.handleUsage)
	api("/api/", s.handleNoSuchAPI)
	if s.opt.Registry != nil {
		s.mux.Handle("GET /metrics", s.authed(promhttp.HandlerFor(s.opt.Registry, promhttp.HandlerOpts{}).ServeHTTP))
	}
	s.mux.HandleFunc("/", s.handlePage)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Handle adds an endpoint of another channel (the ACP agent, the plugin host)
// behind the same token and Origin checks as the API, so a browser signed in
// with the cookie reaches it like any API call.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, s.authed(h.ServeHTTP)) }

func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opt.Version)
}
