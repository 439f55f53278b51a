package daemon

import (
	"context"
	"net/http"
	"os"
	"sync"

	"github.com/coder/websocket"

	"github.com/parleyhq/parley/internal/channel/acpagent"
	"github.com/parleyhq/parley/internal/channel/plugin"
	"github.com/parleyhq/parley/internal/channel/web"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
)

// ACPPath is where the daemon speaks ACP as the agent: a WebSocket whose text
// frames are ACP's JSON-RPC lines. `parley acp` relays an editor's stdio to it.
const ACPPath = "/ws/acp"

// extras are the channels added beside the web channel: the ACP endpoint (and
// the plugin host). They end before the router does.
type extras struct {
	ctx     context.Context // connections' lifetime, as the web channel's
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	plugins *plugin.Host
}

// startExtras starts the plugin host (its plugins connect as ACP clients).
func (d *Daemon) startExtras(plugins []config.Plugin) *extras {
	ctx, cancel := context.WithCancel(context.Background())
	self, _ := os.Executable()
	e := &extras{ctx: ctx, cancel: cancel,
		plugins: plugin.New(d.channelRouter(), d.readStore(), d.fanout, plugin.Options{Self: self, Version: d.version, Logger: d.log.With("channel", "plugin")})}
	e.plugins.Start(plugins)
	return e
}

func (e *extras) close() {
	e.cancel()
	e.plugins.Close()
	e.wg.Wait()
}

// Plugins is the plugin host (its Statuses are what /api/plugins shows).
func (d *Daemon) Plugins() *plugin.Host { return d.extra.plugins }

// handle adds the extra endpoints to the web channel, behind its checks.
func (d *Daemon) handle(web *web.Server) {
	web.Handle("GET "+ACPPath, http.HandlerFunc(d.handleACP))
	web.Handle("GET /api/plugins", d.extra.plugins)
}

func (d *Daemon) acpDeps() acpagent.Deps {
	return acpagent.Deps{Router: d.channelRouter(), Store: d.readStore(), Hub: d.fanout}
}

// channelRouter is the router as the ACP side and the plugin host use it: on
// a cluster's hub its agents are every machine's, each with its node (as
// /api/agents lists them), and "agent@node" starts a thread there.
func (d *Daemon) channelRouter() plugin.Router {
	if d.remote == nil {
		return d.router
	}
	return d.remote.EveryMachine(d.router)
}

// handleACP serves one ACP client. Token as for every API call; a browser
// Origin is refused (editors and `parley acp` send none). ?agent= and ?thread=
// choose what new sessions get.
func (d *Daemon) handleACP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" {
		http.Error(w, "ACP is not for browsers", http.StatusForbidden)
		return
	}
	release, ok := d.web.OpenSocket(w)
	if !ok {
		return
	}
	defer release()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	// Room for one message at the limit; the router judges the message itself.
	ws.SetReadLimit(config.FrameLimit(d.cfg.Limits.MaxMessageBytes))
	d.extra.wg.Add(1)
	defer d.extra.wg.Done()
	ctx, cancel := context.WithCancel(d.extra.ctx)
	defer cancel()
	nc := websocket.NetConn(ctx, ws, websocket.MessageText)
	defer nc.Close()
	q := r.URL.Query()
	log := d.log.With("channel", "acp")
	log.Debug("acp client connected")
	err = acpagent.Serve(ctx, d.acpDeps(), acpagent.Options{
		Channel: "acp", Agent: q.Get("agent"), Thread: chat.ThreadID(q.Get("thread")),
		Version: d.version, Logger: log,
	}, nc, nc)
	log.Debug("acp client gone", "err", err)
}
