// Package web is the web channel: the chat socket (/ws/chat), the REST API, the
// token login and the embedded dashboard. The socket and REST reach the very same
// router calls: there is one send path.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/follow"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/uploads"
	"github.com/parleyhq/parley/internal/wire"
)

// CookieName is the dashboard's session cookie: a random session id (never the
// token), set by a sign-in with a login code or the token (page.go).
const CookieName = "parley_session"

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
	s := &Server{opt: opt, router: r, store: st, fanout: h, log: opt.Logger, mux: http.NewServeMux(),
		m: newMetrics(opt.Registry, h), ctx: ctx, cancel: cancel,
		socketSlots: make(chan struct{}, max(opt.Limits.MaxSockets, 1))}
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
	s.mux.HandleFunc("GET /login", s.handleLoginLink)
	s.mux.HandleFunc("POST /login", s.handleLoginForm)
	api := func(pattern string, h http.HandlerFunc) { s.mux.Handle(pattern, s.authed(h)) }
	api("POST /logout", s.handleLogout)
	api("POST /api/login-codes", s.handleLoginCode)
	api("POST /api/pair-codes", s.handlePairCode)
	s.mux.HandleFunc("POST /api/pair", s.handlePair)
	api("GET /api/devices", s.handleDevices)
	api("DELETE /api/devices/{id}", s.handleRevokeDevice)
	api("PATCH /api/devices/{id}", s.handleDevicePrefs)
	api("GET /api/push/key", s.handlePushKey)
	api("POST /api/push/subscriptions", s.handlePushSubscribe)
	api("DELETE /api/push/subscriptions", s.handlePushUnsubscribe)
	api("POST /api/push/screen", s.handleScreen)
	api("GET /ws/chat", s.handleSocket)
	api("GET /api/version", s.handleVersion)
	api("GET /api/agents", s.handleAgents)
	api("GET /api/agents/{id}/sessions", s.handleNativeSessions)
	api("GET /api/nodes", s.handleNodes)
	api("GET /api/threads", s.handleThreads)
	api("GET /api/threads/changes", s.handleChanges)
	api("GET /api/threads/{id}", s.handleThread)
	api("PATCH /api/threads/{id}", s.handleEditThread)
	api("DELETE /api/threads/{id}", s.handleDeleteThread)
	api("GET /api/search", s.handleSearch)
	api("GET /api/threads/{id}/events", s.handleEvents)
	api("GET /api/threads/{id}/uploads/{name}", s.handleUpload)
	api("POST /api/threads/{id}/messages", s.handleSend)
	api("POST /api/threads/{id}/stop", s.handleStop)
	api("POST /api/threads/{id}/cards/{request_id}", s.handleCard)
	api("GET /api/fs/complete", s.handleComplete)
	api("GET /api/route", s.handleRoute)
	api("GET /api/sessions", s.handleSessions)
	api("GET /api/processes", s.handleProcesses)
	api("POST /api/threads/{id}/unload", s.handleUnload)
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

// signedIn reports whether r shows the token (Authorization: Bearer, or for the
// chat socket ?token=), a device's token the same ways, or a device's live
// session cookie; a signed-in request's connection is trusted from then on
// (conns.go). dev is the device (ok with isDev false for the shared token).
func (s *Server) signedIn(r *http.Request) (dev auth.Device, isDev, ok bool) {
	secret, cookie := "", false
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		secret = strings.TrimPrefix(h, "Bearer ")
	} else if c, err := r.Cookie(CookieName); err == nil {
		secret, cookie = c.Value, true
	} else if r.URL.Path == "/ws/chat" {
		secret = r.URL.Query().Get("token")
	}
	if !cookie && auth.Equal(secret, s.opt.Token) {
		ok = true
	} else if dev, isDev = s.opt.Devices.Lookup(secret); isDev {
		ok = true
	}
	if ok {
		s.trust(r)
	}
	return dev, isDev, ok
}

// authed requires the token or a device and, for browser requests, our own
// origin. A device's request carries the device in its context and ends when
// the device is revoked.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dev, isDev, ok := s.signedIn(r)
		if !ok {
			s.refuse(w)
			httpError(w, http.StatusUnauthorized, "missing or wrong token")
			return
		}
		if !s.originAllowed(r) {
			httpError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not allowed")
			return
		}
		if isDev {
			ctx, done := s.live.track(context.WithValue(r.Context(), deviceKey{}, dev), dev.ID)
			defer done()
			// Revoked between the lookup and track: live.end ran before this
			// request was there to cancel.
			if !s.opt.Devices.Live(dev.ID) {
				s.refuse(w)
				httpError(w, http.StatusUnauthorized, "missing or wrong token")
				return
			}
			r = r.WithContext(ctx)
		}
		h(w, r)
	})
}

// refuse prepares a 401: the connection closes after it, so net/http answers at
// once instead of first reading (up to 256 kB of) a body nobody will use, and a
// stranger's connection is not kept.
func (s *Server) refuse(w http.ResponseWriter) {
	s.m.authFailures.Inc()
	w.Header().Set("Connection", "close")
}

// originAllowed accepts requests without Origin (non-browsers), from the server's
// own origin, and from configured ones.
func (s *Server) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, a := range s.opt.AllowedOrigins {
		if strings.EqualFold(strings.TrimRight(a, "/"), o) {
			return true
		}
	}
	return false
}

func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opt.Version)
}

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"agents": s.agents(r.Context()), "default_agent": s.router.DefaultAgent()}
	if s.opt.Cluster != nil {
		body["node"] = s.opt.Cluster.Node() // this machine: a new thread naming it stays here
	}
	writeJSON(w, http.StatusOK, body)
}

// agents lists the agents a new thread may pick: this machine's, and on a
// cluster's hub every machine's, each with its node.
func (s *Server) agents(ctx context.Context) []chat.AgentInfo {
	own := s.router.Agents()
	if s.opt.Cluster == nil {
		return own
	}
	all, err := s.opt.Cluster.Agents(ctx, own)
	if err != nil {
		s.log.Warn("web: list the machines' agents", "err", err)
	}
	return all
}

// handleNodes answers what `parley nodes` prints: the joined machines.
func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) {
	if s.opt.Cluster == nil {
		httpError(w, http.StatusNotFound, "this parley is not a cluster's hub: it has no machines to list")
		return
	}
	nodes, err := s.opt.Cluster.Machines(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "could not list the machines: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes})
}

func (s *Server) handleNativeSessions(w http.ResponseWriter, r *http.Request) {
	drv, ag, err := s.router.Driver(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	lister, ok := drv.(driver.SessionLister)
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"sessions": []driver.NativeSession{}})
		return
	}
	cwd := r.URL.Query().Get("cwd")
	if cwd != "" {
		if cwd, err = config.Confine(cwd, ag.Roots); err != nil {
			writeErr(w, err)
			return
		}
	}
	sessions, err := lister.ListSessions(r.Context(), driver.Spec{AgentID: ag.ID, Command: ag.Command, Cwd: cwd, Env: envList(ag.Env)})
	if err != nil {
		writeErr(w, err)
		return
	}
	if sessions == nil {
		sessions = []driver.NativeSession{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

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
	if err := s.router.DeleteThread(r.Context(), chat.ThreadID(r.PathValue("id"))); err != nil {
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

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := chat.ThreadID(r.PathValue("id"))
	th, err := s.store.Thread(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	since, err1 := queryInt(r, "since", 0)
	limit, err2 := queryInt(r, "limit", 1000)
	if err := errors.Join(err1, err2); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	evs, err := s.store.Events(r.Context(), id, int64(since), limit)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	buf := make([]byte, 0, 4096)
	buf = append(buf, `{"events":[`...)
	for i, ev := range evs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ev.Frame()...)
	}
	buf = append(buf, ']')
	if through := follow.PrunedThrough(int64(since), th.LastSeq, evs); through > 0 {
		buf = append(buf, `,"pruned_through":`...)
		buf = strconv.AppendInt(buf, through, 10)
	}
	buf = append(buf, "}\n"...)
	w.Write(buf)
}

// restRoute is the route REST calls come from.
var restRoute = chat.RouteKey{Channel: "rest", Chat: "api"}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	var m router.Message
	if !s.readBody(w, r, &m) {
		return
	}
	final := make(chan chat.Delivery, 8)
	notify := func(d chat.Delivery) {
		if d.State == chat.DeliverySubmitted || d.State == chat.DeliveryFailed || d.State == chat.DeliveryUnknown {
			select {
			case final <- d:
			default:
			}
		}
	}
	d, thread, err := s.router.Send(r.Context(), router.SendRequest{
		From: restRoute, Thread: chat.ThreadID(r.PathValue("id")), Message: m, Notify: notify,
	})
	if errors.Is(err, chat.ErrAway) {
		err = nil // queued for a machine that is away: its receipt says so
	}
	if errors.Is(err, chat.ErrDuplicate) {
		writeJSON(w, http.StatusOK, map[string]any{"message_id": d.MessageID, "state": d.State, "detail": d.Detail, "thread": thread, "duplicate": true})
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	// Answer with the furthest receipt reached within the wait (default 10 s).
	wait := 10 * time.Second
	if v := r.URL.Query().Get("wait"); v != "" {
		if dur, err := time.ParseDuration(v); err == nil && dur >= 0 && dur <= time.Minute {
			wait = dur
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case d = <-final:
	case <-t.C:
	case <-r.Context().Done():
	}
	writeJSON(w, http.StatusOK, map[string]any{"message_id": d.MessageID, "state": d.State, "detail": d.Detail, "thread": thread})
}

func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	err := s.router.Control(r.Context(), router.Control{From: restRoute, Thread: chat.ThreadID(r.PathValue("id")), Stop: true})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"stopped": true})
}

func (s *Server) handleCard(w http.ResponseWriter, r *http.Request) {
	// One body for both kinds of card: answers (or a response) answer a question.
	var body struct {
		OptionID  string       `json:"option_id"`
		Message   string       `json:"message"`
		Cancelled bool         `json:"cancelled"`
		Answers   chat.Answers `json:"answers"`
		Response  string       `json:"response"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	c := router.Control{From: restRoute, Thread: chat.ThreadID(r.PathValue("id"))}
	rid := r.PathValue("request_id")
	if body.Answers != nil || body.Response != "" {
		c.Answer = &router.QuestionAnswer{RequestID: rid, Answers: body.Answers, Response: body.Response}
	} else {
		c.Permission = &router.PermissionAnswer{RequestID: rid, OptionID: body.OptionID, Message: body.Message, Cancelled: body.Cancelled}
	}
	if err := s.router.Control(r.Context(), c); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"resolved": true})
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

// readBody decodes a JSON body of at most the frame limit (the router judges a
// message's own size).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	limit := config.FrameLimit(s.opt.Limits.MaxMessageBytes)
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		httpError(w, http.StatusBadRequest, "could not read the body: "+err.Error())
		return false
	}
	if int64(len(body)) > limit {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", limit))
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		httpError(w, http.StatusBadRequest, "body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer", name)
	}
	return n, nil
}

// errorCode maps an error to its socket code and HTTP status, in one place.
func errorCode(err error) (string, int) {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we.Code, http.StatusBadRequest
	case errors.Is(err, chat.ErrNotFound):
		return chat.CodeNotFound, http.StatusNotFound
	case errors.Is(err, chat.ErrBusy):
		return chat.CodeBusy, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrTooLarge):
		return chat.CodeTooLarge, http.StatusRequestEntityTooLarge
	case errors.Is(err, auth.ErrTooManyCodes):
		return chat.CodeRateLimit, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrRateLimited):
		return chat.CodeRateLimit, http.StatusTooManyRequests
	case errors.Is(err, chat.ErrSessionLimit):
		return chat.CodeBusy, http.StatusServiceUnavailable
	case errors.Is(err, chat.ErrCardClosed):
		return chat.CodeCardClosed, http.StatusConflict
	case errors.Is(err, chat.ErrSessionRunning):
		return chat.CodeSessionRunning, http.StatusConflict
	case errors.Is(err, chat.ErrNoTurn):
		return chat.CodeBadInput, http.StatusConflict
	case errors.Is(err, chat.ErrBadInput), errors.Is(err, chat.ErrUnknownAgent):
		return chat.CodeBadInput, http.StatusBadRequest
	case errors.Is(err, chat.ErrOutsideRoot):
		return chat.CodeForbidden, http.StatusForbidden
	case errors.Is(err, driver.ErrNotRunning), errors.Is(err, driver.ErrUnsupported):
		return chat.CodeAgent, http.StatusConflict
	case errors.Is(err, chat.ErrClosed):
		return chat.CodeInternal, http.StatusServiceUnavailable
	}
	return chat.CodeInternal, http.StatusInternalServerError
}

func writeErr(w http.ResponseWriter, err error) {
	code, status := errorCode(err)
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": http.StatusText(status), "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
