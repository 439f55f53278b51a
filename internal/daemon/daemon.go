// Package daemon assembles parley from its parts (store, hub, router, web channel)
// and runs it. The caller chooses the drivers: `parley serve` hands in the real
// transports; tests hand in scripted ones. Nothing else differs.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/parleyhq/parley/internal/audit"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/client"
	"github.com/parleyhq/parley/internal/cluster"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/gitwork"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/remote"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/internal/sessions"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/tailnet"
)

// Options are what the composition root decides.
type Options struct {
	Drivers map[string]driver.Driver
	Version web.Version
	UI      fs.FS
	Logger  *slog.Logger
	// Say prints a line for the person at the terminal after start-up (the
	// tailnet's login URL and address); nil says nothing.
	Say func(line string)
	// PushNet is how pushes reach push services; the zero one (parley serve's)
	// dials public https endpoints only. Set only by Go test code, to reach
	// the push service stand-in on loopback: no config key, flag or
	// environment variable reaches it.
	PushNet push.Net
	// AgentHome is the home folder the agents' own sessions are read from
	// (~/.claude, ~/.codex, ~/.gemini); "" is $HOME, with CLAUDE_CONFIG_DIR,
	// CODEX_HOME and GEMINI_CLI_HOME as the agents themselves read them. Set
	// by Go tests and benchmarks that run several machines in one process.
	AgentHome string
	// JoinTailnet puts the daemon on the tailnet when [tailscale] is on: the
	// parley binary's is tsnode.Join. nil (test binaries that play parley, so
	// that they need not link tsnet) refuses such a config.
	JoinTailnet tailnet.Join
}

// Daemon is a running parley.
type Daemon struct {
	cfg    config.Config
	log    *slog.Logger
	store  *sqlite.Store
	fanout *fanout.Fanout
	router *router.Router
	web    *web.Server
	http   *http.Server
	ln     net.Listener
	token  string
	// devices are the dashboard's sign-ins and one-time login codes.
	devices  *auth.Devices
	warnings []string
	served   chan error
	// version and extra serve the endpoints beside the web channel (acp.go).
	version string
	extra   *extras
	prune   *pruner // limits.retain_events (retain.go)
	// clusterHub or link is set when [cluster] makes this machine the hub or a node.
	clusterHub *cluster.Hub
	remote     *remote.Hub // the hub's parts around clusterHub
	link       *cluster.Link
	// push sends Web Push for cards; it watches every thread through pushWatch.
	push      *push.Service
	pushWatch *fanout.Watcher
	// cert is the person's own certificate (tls_cert) when parley serves HTTPS.
	cert     *certSource
	stopCert func() // ends cert's watch
	// view is the hub's readers' store (every machine's threads).
	view *cluster.View
	// tailnet is set when [tailscale] puts the dashboard on the tailnet.
	tailnet tailnet.Node
	// sessions indexes the agents' own sessions on this machine (sessions.go);
	// at a cluster's hub, allSessions lists every machine's.
	sessions    *sessions.Index
	allSessions *sessions.Hub
	// auto runs the schedules and serves the triggers (autorun.go).
	auto *autorun
	// audit is the audit trail (audit.go).
	audit *auditTrail
	// tools is parley's MCP server, given to every agent session.
	tools *mcpserver.Server
}

// Start opens the store, recovers what a previous run left, and listens.
func Start(ctx context.Context, cfg config.Config, opt Options) (*Daemon, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	warning, err := auth.SecureDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		log.Warn(warning)
	}
	token, err := auth.LoadOrCreate(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	devs, err := auth.OpenDevices(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// What is open so far, closed newest first if Start returns an error.
	started := false
	var undo undoList
	defer func() {
		if !started {
			undo.run()
		}
	}()
	st, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "parley.db"), log)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	undo.add(func() { st.Close() })
	trail, err := startAudit(ctx, st, cfg.Audit.Keep.Duration, log)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	undo.add(trail.close)
	devs.SetAudit(trail.rec)
	if err := recordConfig(ctx, st, trail.rec, cfg); err != nil {
		log.Warn("audit: config file not recorded", "err", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h := fanout.New(nil)
	// A cluster's hub comes first: its router reaches the nodes' threads.
	ch, err := startClusterHub(ctx, cfg, opt.Version.Version, st, h, log, reg, trail.rec)
	if err != nil {
		return nil, err
	}
	undo.add(ch.Close) // nil (not a hub): nothing
	// parley's MCP server for the agents (ask_person, notify_person): on a
	// loopback port of its own, whatever cfg.Addr faces.
	var running atomic.Pointer[router.Router] // the tools reach the router once it runs
	tools, err := mcpserver.Listen(person{rt: &running}, log)
	if err != nil {
		return nil, err
	}
	undo.add(func() { tools.Close(context.WithoutCancel(ctx)) })
	ruleSet, err := openRules(ctx, cfg, st, ch, log, trail.rec)
	if err != nil {
		return nil, err
	}
	var rem router.Remote
	readStore := store.Store(st)
	if ch != nil {
		rem, readStore = ch.Remote(), ch.View()
	}
	rt := router.New(st, h, router.Options{
		Agents: cfg.Agents, DefaultAgent: cfg.DefaultAgent, Roots: cfg.Roots,
		Drivers: opt.Drivers, QueueDepth: cfg.Limits.QueueDepth, MaxMessageBytes: cfg.Limits.MaxMessageBytes,
		MaxSessions: cfg.Limits.MaxSessions, ThreadsPerMinute: cfg.Limits.ThreadsPerMinute,
		Logger: log, Metrics: router.NewMetrics(reg), Remote: rem, Tools: tools, Node: cfg.Cluster.Node, Rules: ruleSet.Decide,
		Audit:     trail.rec,
		Worktrees: cfg.Git.Worktrees,
	})
	if err := rt.Start(ctx); err != nil {
		return nil, err
	}
	undo.add(func() { rt.Close(ctx) })
	if ch != nil {
		ch.RouterStarted(rt)
	}
	running.Store(rt)
	opt.Version.PID = os.Getpid()
	opt.Version.Started = time.Now().UTC()
	// push starts first (the web channel serves it) and asks the web channel
	// what is on screen: the pointer is set once the channel exists.
	var wsp atomic.Pointer[web.Server]
	watch := h.WatchTypes(push.Types...)
	undo.add(func() { h.Unwatch(watch) })
	var remoteCards push.Remote
	if ch != nil {
		remoteCards = ch.Cards()
	}
	pusher, err := push.Start(push.Options{DataDir: cfg.DataDir, Store: st, Watch: watch, Machine: machineName(cfg), Remote: remoteCards,
		AgentName: agentNames(cfg), OnScreen: func(dev string, th chat.ThreadID) bool {
			w := wsp.Load()
			return w != nil && w.OnScreen(dev, th)
		},
		Live: devs.Live, Net: opt.PushNet, Logger: log})
	if err != nil {
		return nil, err
	}
	undo.add(pusher.Close)
	idx, err := openSessions(cfg, opt.AgentHome, opt.Drivers, st, log)
	if err != nil {
		return nil, err
	}
	undo.add(func() { idx.Close() })
	var d *Daemon // set below, before anything is served
	var machines web.Cluster
	var listSessions web.Sessions = idx
	var allSessions *sessions.Hub
	if ch != nil {
		machines = ch.Machines()
		allSessions = sessions.NewHub(idx, hubSessions{ch.Cluster()}, cfg.Cluster.Node)
		listSessions = allSessions
	}
	ws := web.New(rt, readStore, h, web.Options{
		Token: token, Devices: devs, Limits: cfg.Limits, AllowedOrigins: cfg.AllowedOrigins, Roots: cfg.Roots,
		Version: opt.Version, UI: opt.UI, Logger: log, Registry: reg, Push: pusher,
		BaseURL: func() string { return d.publicBase() }, Cluster: machines, Sessions: listSessions,
		Audit: trail.rec, Machine: cfg.Cluster.Node,
	})
	wsp.Store(ws)
	var cert *certSource
	if cfg.TLSCert != "" {
		if cert, err = loadCert(cfg.TLSCert, cfg.TLSKey, filepath.Join(cfg.DataDir, client.AddrCertFile)); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, listenError(cfg.Addr, err) // taken.go
	}
	undo.add(func() { ln.Close() }) // the TLS listener over it, once that wraps it
	if err := refuseClearText(cfg, ln.Addr(), cert != nil); err != nil {
		return nil, err
	}
	if cert != nil {
		ln = tls.NewListener(ln, cert.tlsConfig())
	}
	d = &Daemon{cfg: cfg, log: log, store: st, audit: trail, fanout: h, router: rt, web: ws, ln: ln, token: token, devices: devs,
		push: pusher, pushWatch: watch, cert: cert, sessions: idx, allSessions: allSessions, tools: tools,
		served: make(chan error, 1),
		http: &http.Server{Handler: ws,
			// Every request must arrive in time. net/http lifts the read
			// deadline once the body is read (and at a socket's hijack), so
			// answers that stream or wait (sockets, change streams, a send's
			// ?wait=) are not cut short; no WriteTimeout for the same reason.
			ReadHeaderTimeout: min(10*time.Second, cfg.Limits.ReadTimeout.Duration),
			ReadTimeout:       cfg.Limits.ReadTimeout.Duration,
			IdleTimeout:       cfg.Limits.ConnIdleTimeout.Duration,
			ConnState:         ws.ConnState, ConnContext: ws.ConnContext,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
	}
	d.version = opt.Version.Version
	if ch != nil {
		d.clusterHub, d.view, d.remote = ch.Cluster(), ch.View(), ch
		ch.StartAskResolver(rt)
	}
	undo.add(func() {
		if d.link != nil { // set even when the link's set-up failed after Dial
			d.link.Close()
		}
	})
	if err := d.dialClusterHub(reg); err != nil {
		return nil, err
	}
	if err := d.startTailnet(opt.JoinTailnet, opt.Say); err != nil {
		return nil, err
	}
	d.warnings = warnings(cfg, ln.Addr(), cert != nil)
	for _, w := range d.warnings {
		log.Warn(w)
	}
	d.extra = d.startExtras(cfg.Plugins)
	d.prune = startPruner(st, cfg.Limits.RetainEvents.Duration, time.Now, log)
	// The daemon is whole: Shutdown closes it, and the listener Serve has not
	// taken yet.
	undo = undoList{func() { ln.Close(); d.Shutdown(ctx) }}
	if d.auto, err = startAutorun(ctx, cfg, st, rt, d.remote, d.link, trail.rec, log); err != nil {
		return nil, err
	}
	d.auto.handle(ws)
	if err := serveRules(d.link, ruleSet); err != nil {
		return nil, err
	}
	ruleSet.Handle(ws.Handle)
	if cert != nil {
		d.stopCert = cert.watch(log)
	}
	d.handle(ws)
	ws.Handle("GET /api/audit", http.HandlerFunc(trail.handleAudit))
	go func() { d.served <- d.http.Serve(ln) }()
	started = true
	return d, nil
}

// machineName names this machine in a push's title: the cluster node name,
// else the host name.
func machineName(cfg config.Config) string {
	if cfg.Cluster.Node != "" {
		return cfg.Cluster.Node
	}
	h, _ := os.Hostname()
	return h
}

// agentNames names agents by id as the config does.
func agentNames(cfg config.Config) func(string) string {
	names := map[string]string{}
	for _, a := range cfg.Agents {
		names[a.ID] = a.Name
	}
	return func(id string) string { return names[id] }
}

// startClusterHub runs the hub's NATS server when [cluster] listen says so,
// with the view of every machine's threads and the relay of the nodes' live
// events into h; nil when this machine is not a hub.
func startClusterHub(ctx context.Context, cfg config.Config, version string, st store.Store, h *fanout.Fanout, log *slog.Logger,
	reg prometheus.Registerer, trail audit.Log) (*remote.Hub, error) {
	c := cfg.Cluster
	if c.Listen == "" {
		return nil, nil
	}
	return remote.StartHub(ctx, remote.HubOptions{Store: st, Events: h, Cluster: cluster.HubOptions{DataDir: cfg.DataDir, Listen: c.Listen,
		Advertise: c.Advertise, Self: c.Node, Version: version, Logger: log, Registerer: reg, InputWait: c.InputWait.Duration, InputBytes: c.InputBytes,
		StoreBytes: c.StoreBytes, CopyBytes: c.CopyBytes, CopyAge: c.CopyAge.Duration, Audit: trail}})
}

// dialClusterHub starts a node's link when [cluster] hub says so: it shows
// this machine's threads to the hub and applies the hub's inputs.
func (d *Daemon) dialClusterHub(reg prometheus.Registerer) error {
	c := d.cfg.Cluster
	if c.Hub == "" {
		return nil
	}
	agents := make([]string, 0, len(d.cfg.Agents))
	for _, a := range d.cfg.Agents {
		agents = append(agents, a.ID)
	}
	var err error
	d.link, err = cluster.Dial(cluster.LinkOptions{DataDir: d.cfg.DataDir, Hub: c.Hub, Node: c.Node,
		Version: d.version, Agents: agents, Heartbeat: c.Heartbeat.Duration, Logger: d.log, Registerer: reg,
		Inputs: remote.Inputs(d.router), Store: d.store, Events: d.fanout, AgentInfo: d.router.Agents(), Roots: d.cfg.Roots})
	if err != nil {
		return err
	}
	// The hub lists this machine's agent sessions by asking it, and reads
	// its threads' changes the same way.
	if err := d.link.ServeSessions(d.sessions.List); err != nil {
		return err
	}
	err = d.link.ServeChanges(func(ctx context.Context, id chat.ThreadID, q gitwork.Query) (gitwork.Changes, error) {
		th, err := d.store.Thread(ctx, id)
		if err != nil {
			return gitwork.Changes{}, err
		}
		q.Base = th.GitBase
		return gitwork.Diff(ctx, th.Cwd, q)
	})
	if err != nil {
		return err
	}
	// It commits, pushes, opens pull requests, shows files and the terminal
	// for the hub as it does for its own dashboard.
	return d.link.ServeWork(web.Workspace{Threads: d.store, Router: d.router, Roots: d.cfg.Roots}, d.store)
}

func (d *Daemon) stopCluster() {
	if d.link != nil {
		d.link.Close()
	}
	d.remote.Close()
}

// startTailnet joins the tailnet when [tailscale] says so; the node serves
// d.http there once it runs.
func (d *Daemon) startTailnet(join tailnet.Join, say func(string)) error {
	t := d.cfg.Tailscale
	if !t.Enabled {
		return nil
	}
	if join == nil {
		return errors.New("tailscale: this program was built without the tailnet (-tags notailnet, or a test binary playing parley); " +
			"[tailscale] needs parley built without that tag")
	}
	if say == nil {
		say = func(string) {}
	}
	// The address comes with a sign-in link for it, as the local one does.
	serving := func(url string) {
		code, _, err := d.devices.NewCode("")
		if err != nil {
			say("On your tailnet: " + url)
			return
		}
		say(fmt.Sprintf("On your tailnet: %s (this link signs in once, within %v: %s%s)", url, auth.CodeTTL, url, web.LoginPath(code)))
	}
	var err error
	d.tailnet, err = join(tailnet.Options{Hostname: t.Hostname, StateDir: t.StateDir,
		AuthKeyFile: t.AuthKeyFile, ControlURL: t.ControlURL, Server: d.http, Say: say, Serving: serving, Logger: d.log})
	return err
}

// Tailnet is the daemon's node on the tailnet, or nil.
func (d *Daemon) Tailnet() tailnet.Node { return d.tailnet }

// ClusterHub is the hub this daemon runs, or nil.
func (d *Daemon) ClusterHub() *cluster.Hub { return d.clusterHub }

// Link is this node's link to its hub, or nil.
func (d *Daemon) Link() *cluster.Link { return d.link }

// Addr is the address the daemon listens on.
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// LinkAddr is the address to put in links and to dial: the listening one, with
// an unspecified host (0.0.0.0, ::) replaced by the loopback.
func (d *Daemon) LinkAddr() string { return LinkAddr(d.ln.Addr()) }

// LinkAddr is the dialable form of a listening address. An unspecified host
// becomes 127.0.0.1: Go listens on both families for 0.0.0.0 and [::] alike.
func LinkAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// LoginURL makes a one-time sign-in link for the dashboard (good for
// auth.CodeTTL), as printed at start-up.
func (d *Daemon) LoginURL() (string, error) {
	code, _, err := d.devices.NewCode("")
	if err != nil {
		return "", err
	}
	base := d.publicBase()
	if base == "" {
		base = d.LocalURL()
	}
	return base + web.LoginPath(code), nil
}

// Token is the access token.
func (d *Daemon) Token() string { return d.token }

// Router is the daemon's router (for in-process channels).
func (d *Daemon) Router() *router.Router { return d.router }

// Wait blocks until the HTTP server stops.
func (d *Daemon) Wait() error {
	err := <-d.served
	d.served <- err
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops taking input, closes sockets with a reason, ends the sessions and
// finishes the store's writes.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.web.Shutdown()
	d.extra.close()
	herr := d.http.Shutdown(ctx)
	if d.tailnet != nil {
		herr = errors.Join(herr, d.tailnet.Close())
	}
	if d.allSessions != nil {
		d.allSessions.Close()
	}
	d.stopCluster()
	d.auto.close()
	rerr := d.router.Close(ctx)
	terr := d.tools.Close(ctx) // after the router: its lanes ended the calls waiting on cards
	d.push.Close()             // after the router: the cards' last changes are derived; what is unsent stays pending
	d.fanout.Unwatch(d.pushWatch)
	d.prune.stop()
	d.audit.close() // after the router and the web channel: their last entries are written
	if d.stopCert != nil {
		d.stopCert()
	}
	serr := d.store.Close()
	return errors.Join(herr, rerr, terr, serr, d.sessions.Close())
}

// readStore is what the daemon's readers use: the hub's view of every
// machine's threads, or this machine's store.
func (d *Daemon) readStore() store.Store {
	if d.view != nil {
		return d.view
	}
	return d.store
}
