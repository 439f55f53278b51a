package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/fanout"
)

// Heartbeat defaults and range ([cluster] heartbeat).
const DefaultHeartbeat = 5 * time.Second

// LinkOptions configure a node's link to its hub.
type LinkOptions struct {
	DataDir string
	// Hub is the hub's NATS address (host:port).
	Hub     string
	Node    string
	Version string
	Agents  []string
	// Heartbeat is how often the node writes its directory record.
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Registerer receives parley_cluster_link_up; nil skips it.
	Registerer prometheus.Registerer
	// Inputs applies the inputs the hub hands this node; nil takes none
	// (they wait at the hub).
	Inputs InputHandler
	// Store and Events, when both set, make the node show its threads to
	// the hub (node_threads.go): its store answers source requests, Events' tap
	// carries each committed event, its watcher the thread summaries.
	Store  NodeStore
	Events EventHub
	// AgentInfo and Roots go into the directory record: what a new thread
	// on this node may pick (agents, directories).
	AgentInfo []chat.AgentInfo
	Roots     []string
}

// EventHub is the node's local hub as the link uses it.
type EventHub interface {
	SetTap(func(fanout.Item))
	Watch() *fanout.Watcher
	WatchTypes(types ...string) *fanout.Watcher
	Unwatch(*fanout.Watcher)
}

// Link is a node's connection to the hub: it dials out (the node needs no
// inbound port), reconnects with backoff for as long as it runs, and keeps
// the node's directory record fresh. The node's own daemon does not depend on
// it: with the hub away, everything local works.
type Link struct {
	opt    LinkOptions
	log    *slog.Logger
	nc     *nats.Conn
	up     prometheus.Gauge
	kick   chan struct{}   // a (re)connect: write the record now
	upKick chan struct{}   // a (re)connect: write every thread summary
	watch  *fanout.Watcher // the threads changed (serveNode)
	// noticeWatch hears of the threads whose turn ended or that failed:
	// their notices are read again (node_notices.go); only the summaries'
	// goroutine touches notices.
	noticeWatch *fanout.Watcher
	notices     map[chat.ThreadID]*threadNotices
	srcSub      *nats.Subscription // the hub's reads of this node's store (serveNode)
	// applied holds the ids of the last inputs applied, so one the hub hands
	// over again (its ack was lost) is answered, not applied twice.
	applied *idSet
	done    chan struct{}
	wg      sync.WaitGroup
	// life ends when Close begins: what the link's goroutines ask of the
	// hub ends with it, so Close (which waits for them) never waits out a
	// request to a hub that is away.
	life    context.Context
	endLife context.CancelFunc

	mu    sync.Mutex // guards since
	since time.Time

	closeOnce  sync.Once
	refuseOnce sync.Once
	refused    atomic.Bool // refuseHub ended the link
}

// Dial starts the link. It returns at once: a hub that is down is retried in
// the background, never an error here. Only a missing or damaged key is.
func Dial(opt LinkOptions) (*Link, error) {
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = DefaultHeartbeat
	}
	l := &Link{opt: opt, log: opt.Logger, kick: make(chan struct{}, 1),
		upKick: make(chan struct{}, 1), done: make(chan struct{}), applied: newIDSet(4096)}
	l.life, l.endLife = context.WithCancel(context.Background())
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.log = l.log.With("component", "cluster-link", "hub", opt.Hub, "node", opt.Node)
	l.up = prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_cluster_link_up",
		Help: "1 while this node's link to its hub is connected, else 0.", ConstLabels: prometheus.Labels{"node": opt.Node}})
	if opt.Registerer != nil {
		if err := opt.Registerer.Register(l.up); err != nil {
			return nil, err
		}
	}
	dir := Dir(opt.DataDir)
	auth, err := nats.NkeyOptionFromSeed(filepath.Join(dir, nodeSeed))
	if err != nil {
		return nil, fmt.Errorf("cluster: this node's key (made by `parley join`): %w", err)
	}
	tlsConf, err := caTLS(filepath.Join(dir, hubCAFile))
	if err != nil {
		return nil, err
	}
	l.nc, err = nats.Connect("tls://"+opt.Hub, auth, nats.Secure(tlsConf),
		nats.Name("parley node "+opt.Node), nats.CustomInboxPrefix(inboxPrefix(opt.Node)),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.Timeout(10*time.Second),
		nats.CustomReconnectDelay(linkRetry.Delay),
		nats.ConnectHandler(func(*nats.Conn) { l.connected() }),
		nats.ReconnectHandler(func(*nats.Conn) { l.connected() }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			l.up.Set(0)
			l.log.Warn("cluster: link to the hub is down; retrying", "err", err)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			l.up.Set(0)
			switch err := nc.LastError(); {
			case errors.Is(err, nats.ErrAuthorization):
				l.log.Error("cluster: the hub refuses this node's key (revoked?); this machine works alone until it joins again with a new token (`parley join-token` on the hub)", "err", err)
			case err != nil:
				l.log.Error("cluster: link to the hub closed", "err", err)
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			l.log.Warn("cluster: the hub refused something", "err", err)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("cluster: dial the hub: %w", err)
	}
	// fail ends what Dial started so far: the goroutines it started wait on
	// done (and life), and the tap on the events is taken off.
	fail := func(err error) (*Link, error) {
		if l.refused.Load() {
			// The hub refused this node's protocol while the link was being
			// set up (a summary written on connect heard it first): refuseHub
			// said why and closed the connection, so what failed here is that
			// close. The daemon goes on alone, as after a refusal later on.
			return l, nil
		}
		l.unwatch()
		close(l.done)
		l.endLife()
		l.nc.Close()
		l.wg.Wait()
		return nil, err
	}
	if opt.Inputs != nil {
		if err := l.serveInputs(opt.Inputs); err != nil {
			return fail(err)
		}
	}
	if opt.Store != nil && opt.Events != nil {
		if err := l.serveNode(); err != nil {
			return fail(err)
		}
	}
	// The hub holds the subscriptions before Dial returns: an input handed
	// over at once finds its node there, not "no responders" (which says the
	// node is away and makes the sender's input wait).
	if err := l.nc.FlushTimeout(10 * time.Second); err != nil {
		return fail(fmt.Errorf("cluster: the hub did not confirm the link: %w", err))
	}
	l.wg.Add(1)
	go l.heartbeat()
	return l, nil
}

// linkRetry doubles from half a second to 30 s, with jitter (down to half)
// so nodes restarted together do not knock on the hub together.
var linkRetry = backoff.Policy{Min: 500 * time.Millisecond, Max: 30 * time.Second, Jitter: backoff.Jitter{Low: 0.5, Width: 0.5}}

func (l *Link) connected() {
	l.mu.Lock()
	l.since = time.Now().UTC()
	l.mu.Unlock()
	l.up.Set(1)
	l.log.Info("cluster: linked to the hub")
	for _, k := range []chan struct{}{l.kick, l.upKick} {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// refuseHub ends the link to a hub whose protocol this node does not take
// (protocol.go): it is not retried, as no retry can change that.
func (l *Link) refuseHub(err error) {
	l.refuseOnce.Do(func() {
		l.refused.Store(true)
		l.log.Error("cluster: link refused: "+err.Error()+"; this machine works alone until then", "err", err)
		l.nc.Close()
	})
}

// serveHub answers the hub's requests on subject with answer, for as long
// as the link lasts; only the hub's asking is answered. A link the hub
// already refused (its protocol, a moment after Dial) serves nothing and is
// no error: the daemon goes on alone, as refuseHub said.
func (l *Link) serveHub(subject string, answer func(m *nats.Msg)) error {
	_, err := l.nc.Subscribe(subject, func(m *nats.Msg) {
		if !strings.HasPrefix(m.Reply, hubInbox+".") {
			return // only the hub asks
		}
		answer(m)
	})
	if err != nil && l.refused.Load() {
		return nil
	}
	return err
}

// Conn is the link's NATS connection (for the route follower's seam).
func (l *Link) Conn() *nats.Conn { return l.nc }

// Connected says whether the link is up now.
func (l *Link) Connected() bool { return l.nc.IsConnected() }

func (l *Link) heartbeat() {
	defer l.wg.Done()
	t := time.NewTicker(l.opt.Heartbeat)
	defer t.Stop()
	// A record the hub did not take (one just restarted answers records only
	// once its directory is loaded) is written again after a second,
	// doubling up to the heartbeat: until it is taken, the hub lists this
	// machine offline.
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	failures := 0
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		case <-l.kick:
		case <-retry.C:
		}
		retry.Stop()
		if !l.nc.IsConnected() {
			continue
		}
		if err := l.write(false); err != nil {
			if _, ok := errors.AsType[*ProtocolError](err); ok {
				return // refuseHub said why and ended the link
			}
			l.log.Warn("cluster: heartbeat", "err", err)
			retry.Reset(min(time.Second<<min(failures, 5), l.opt.Heartbeat))
			failures++
			continue
		}
		failures = 0
	}
}

// write puts the node's record into the directory.
func (l *Link) write(offline bool) error {
	l.mu.Lock()
	since := l.since
	l.mu.Unlock()
	b, err := json.Marshal(Record{Node: l.opt.Node, Version: l.opt.Version, Protocol: thisProtocol, Agents: l.opt.Agents,
		AgentInfo: l.opt.AgentInfo, Roots: l.opt.Roots, Every: l.opt.Heartbeat, Since: since, Offline: offline})
	if err != nil {
		return err
	}
	// The goodbye is said after the link's life (Close); a heartbeat ends
	// with it.
	parent := l.life
	if offline {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, max(5*time.Second, l.opt.Heartbeat))
	defer cancel()
	return l.publishRecord(ctx, dirSubject(l.opt.Node), b)
}

// unwatch takes the link's tap and watchers off the node's events.
func (l *Link) unwatch() {
	if l.watch != nil {
		l.opt.Events.SetTap(nil)
		l.opt.Events.Unwatch(l.watch)
	}
	if l.noticeWatch != nil {
		l.opt.Events.Unwatch(l.noticeWatch)
	}
}

// Close says the node is going offline (when the hub can hear it) and closes.
func (l *Link) Close() { l.closeOnce.Do(l.close) }

func (l *Link) close() {
	l.unwatch()
	close(l.done)
	l.endLife()
	l.wg.Wait()
	l.drainReads()
	if l.nc.IsConnected() {
		if err := l.write(true); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			l.log.Warn("cluster: could not say goodbye to the hub", "err", err)
		}
	}
	l.nc.Close()
	l.up.Set(0)
}

// readsDrainWait bounds how long a closing node answers the hub's reads
// already on their way.
const readsDrainWait = 5 * time.Second

// drainReads answers the hub's reads on their way before the goodbye, and
// takes the node's interest away, so a read sent after the goodbye hears at
// once that nobody answers instead of waiting out its timeout.
func (l *Link) drainReads() {
	if l.srcSub == nil || !l.nc.IsConnected() {
		return
	}
	closed := l.srcSub.StatusChanged(nats.SubscriptionClosed)
	if err := l.srcSub.Drain(); err != nil {
		l.log.Warn("cluster: drain the hub's reads", "err", err)
		return
	}
	select {
	case <-closed:
	case <-time.After(readsDrainWait):
		l.log.Warn("cluster: the hub's reads did not drain in time", "wait", readsDrainWait)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// publishRecord sends one of the node's records to the hub and waits for it
// to be written.
func (l *Link) publishRecord(ctx context.Context, subject string, b []byte) error {
	ans, err := l.nc.RequestWithContext(ctx, subject, b)
	if err != nil {
		return err
	}
	hub := 1 // a hub before protocols says none
	if v := ans.Header.Get(hdrProtocol); v != "" {
		if hub, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("the hub's answer names protocol %q", v)
		}
	}
	if err := checkProtocol(l.opt.Node, hub, thisProtocol, "", l.opt.Version); err != nil {
		// Only the directory record's answer ends the link: by then the hub
		// has the record, and refuses (and logs) it too. Ended on a
		// summary's answer, which may come first, the record never got
		// there and the hub never said why.
		if subject == dirSubject(l.opt.Node) {
			l.refuseHub(err)
		}
		return err
	}
	if len(ans.Data) > 0 {
		return fmt.Errorf("the hub refused it: %s", ans.Data)
	}
	return nil
}
