// Package push sends Web Push notifications (RFC 8030, VAPID RFC 8292,
// aes128gcm RFC 8291, through webpush-go) to the devices that subscribed: one
// when a permission request or question opens, and a closing one with the same
// tag when it is answered, anywhere.
//
// Exactly once: what to push is derived from the store's cards and written to
// the store's push outbox, keyed by (endpoint, thread, request id, kind), before
// anything is sent. A reconnect, a replay or a restart derives the same keys and
// adds nothing; a push written but not sent (a crash, a service down) is sent
// after, with backoff. One goroutine (run) owns deriving and sending.
package push

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/parleyhq/parley/internal/backoff"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Store is what push needs of the store.
type Store interface {
	store.PushStore
	Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error)
	Threads(ctx context.Context) ([]chat.Thread, error)
	Cards(ctx context.Context, thread chat.ThreadID, state string) ([]chat.Card, error)
	Tail(ctx context.Context, thread chat.ThreadID, n int) ([]chat.Event, error)
}

// Watcher tells which threads changed (hub.Watcher): it need only hear of
// steps holding one of Types.
type Watcher interface {
	Ready() <-chan struct{}
	Take() []chat.ThreadID
}

// Types are the events that can change what the service pushes: a card
// opened or closed (every card's change is logged as one of these), a turn's
// end and an error (the optional pushes). A streamed chunk is not one of
// them: waking the service for each cost several queries per chunk, which on
// two cores ran beside the chunk's own way to the screen.
var Types = []string{chat.TypePermissionRequest, chat.TypeQuestion, chat.TypePermissionResolved,
	chat.TypeQuestionResolved, chat.TypePromptDone, chat.TypeError, chat.TypeNotice}

// Options configure the service.
type Options struct {
	DataDir string // where the VAPID keys live (KeysFile)
	Store   Store
	Watch   Watcher
	// Machine names this parley in a push's title ("Claude Code on <machine>").
	Machine string
	// Remote is, at a cluster's hub, other machines' threads' open cards; nil
	// elsewhere.
	Remote Remote
	// AgentName names an agent by its id; nil shows the id.
	AgentName func(id string) string
	// OnScreen reports whether a device shows a thread right now: it gets no push.
	OnScreen func(device string, thread chat.ThreadID) bool
	// Live reports whether a device is still signed in; nil: all are. A
	// device revoked, signed out or expired gets no push, and its
	// subscriptions are dropped.
	Live func(device string) bool
	// Subscriber is the VAPID contact: an https: URL or an e-mail address.
	Subscriber string
	// Net is how push services are reached (guard.go); the zero Net is
	// parley's: public https endpoints only.
	Net    Net
	Logger *slog.Logger
	// Clock is the sender's time and timers; nil is the runtime's.
	Clock Clock

	// lookup replaces DNS where an endpoint's host is checked: when it is
	// subscribed, and before a request through a proxy (tests of DNS
	// rebinding: a name public then, loopback when dialled).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

const (
	// ttl is how long a push service keeps an undelivered push: a card that has
	// waited a day is old news.
	ttl = 24 * 60 * 60
	// maxAttempts bounds the retries of a push that fails (not 404/410).
	maxAttempts = 12
	// maxBody bounds a push's body text, in bytes: what it asks, never the
	// tool's full input.
	maxBody     = 140
	sendTimeout = 15 * time.Second
)

// Service is a running push sender.
type Service struct {
	opt  Options
	http *http.Client
	keys Keys
	log  *slog.Logger
	kick chan struct{}
	done chan struct{}
	stop context.CancelFunc

	// since is when this hub first pushed other machines' notices
	// (SinceFile).
	since time.Time
	// Only run's goroutine touches these. remote is each remote thread's
	// open cards as last reconciled (cardsKey), notices its newest finished
	// turn and error (noticesKey), by id.
	remote  map[chat.ThreadID]string
	notices map[chat.ThreadID]string
	// What the store refused (a read, an outbox write) is done again at the
	// next pass of run, and after a wait while nothing else comes: the
	// local threads, the remote ones, everything (reconcileAll's own
	// reads); fails counts the passes in a row that left some undone.
	failed       map[chat.ThreadID]bool
	remoteFailed map[chat.ThreadID]bool
	allFailed    bool
	fails        int

	mu         sync.Mutex     // a leaf (docs/locks.md)
	subscribed map[string]int // device → subscriptions, for the device list
}

// Start loads (or makes) the VAPID keys and starts the sender. Pushes written
// before a restart are looked at again at once.
func Start(opt Options) (*Service, error) {
	keys, err := LoadOrCreateKeys(opt.DataDir)
	if err != nil {
		return nil, err
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Clock == nil {
		opt.Clock = realClock{}
	}
	if opt.Subscriber == "" {
		opt.Subscriber = "https://github.com/parleyhq/parley"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{opt: opt, keys: keys, log: opt.Logger.With("part", "push"), kick: make(chan struct{}, 1),
		done: make(chan struct{}), stop: cancel, subscribed: map[string]int{}, remote: map[chat.ThreadID]string{}}
	s.http = opt.Net.client(s.lookup())
	if opt.Remote != nil {
		s.since = s.loadSince()
	}
	subs, err := opt.Store.PushSubscriptions(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	for _, sub := range subs {
		s.subscribed[sub.Device]++
	}
	go s.run(ctx)
	return s, nil
}

// Close stops the sender; what is pending stays in the outbox.
func (s *Service) Close() {
	s.stop()
	<-s.done
}

// PublicKey is the VAPID public key (applicationServerKey), URL-safe base64.
func (s *Service) PublicKey() string { return s.keys.Public }

// MaxPerDevice bounds a device's subscriptions: a new one replaces its oldest.
const MaxPerDevice = 5

// ErrBadSubscription is a PushSubscription that cannot be used.
var ErrBadSubscription = errors.New("not a usable push subscription")

// Subscribe ties a browser's PushSubscription JSON to a device.
func (s *Service) Subscribe(device string, raw json.RawMessage) error {
	var sub struct {
		Endpoint string `json:"endpoint"`
		Keys     struct {
			P256dh string `json:"p256dh"`
			Auth   string `json:"auth"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(raw, &sub); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSubscription, err)
	}
	u, err := checkEndpoint(sub.Endpoint)
	if err != nil {
		return err
	}
	p, err1 := decodeKey(sub.Keys.P256dh)
	a, err2 := decodeKey(sub.Keys.Auth)
	if err1 != nil || err2 != nil || len(p) != 65 || len(a) < 16 {
		return fmt.Errorf("%w: keys.p256dh must be a P-256 point and keys.auth 16 bytes, URL-safe base64", ErrBadSubscription)
	}
	if err := s.checkHost(context.Background(), u.Hostname()); err != nil {
		return err
	}
	if err := s.opt.Store.PushSubscribe(context.Background(), store.PushSubscription{Endpoint: sub.Endpoint, Device: device,
		P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth}); err != nil {
		return err
	}
	// The newest MaxPerDevice stay: a browser that subscribes again gets a
	// new endpoint and its old ones go stale, so refusing would lock it out.
	all, err := s.opt.Store.PushSubscriptions(context.Background()) // oldest first
	if err != nil {
		return err
	}
	var mine []string
	for _, x := range all {
		if x.Device == device {
			mine = append(mine, x.Endpoint)
		}
	}
	for _, e := range mine[:max(0, len(mine)-MaxPerDevice)] {
		if err := s.opt.Store.PushForget(context.Background(), device, e); err != nil {
			return err
		}
	}
	s.recount()
	s.wake()
	return nil
}

// Subscribed reports whether a device has a subscription.
func (s *Service) Subscribed(device string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed[device] > 0
}

// DeviceGone drops a revoked device's subscriptions and its pending pushes.
func (s *Service) DeviceGone(device string) {
	if err := s.opt.Store.PushForget(context.Background(), device, ""); err != nil {
		s.log.Error("could not drop a revoked device's push subscriptions", "device", device, "err", err)
	}
	s.recount()
}

func (s *Service) recount() {
	subs, err := s.opt.Store.PushSubscriptions(context.Background())
	if err != nil {
		return
	}
	m := map[string]int{}
	for _, sub := range subs {
		m[sub.Device]++
	}
	s.mu.Lock()
	s.subscribed = m
	s.mu.Unlock()
}

func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run owns deriving and sending: at start every thread that may need a push,
// then each thread that changes; after each, what is due.
func (s *Service) run(ctx context.Context) {
	defer close(s.done)
	var remoteChanged <-chan struct{}
	if s.opt.Remote != nil {
		remoteChanged = s.opt.Remote.Ready()
	}
	s.reconcileAll(ctx)
	next := s.opt.Clock.After(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.opt.Watch.Ready():
			for _, th := range s.opt.Watch.Take() {
				s.reconcile(ctx, th)
			}
		case <-remoteChanged:
			s.reconcileRemote(ctx, nil)
		case <-s.kick:
		case <-next:
		}
		s.retry(ctx)
		s.sendDue(ctx)
		next = s.opt.Clock.After(s.untilNext(ctx))
	}
}

// retry does again what the store refused before (see Service.failed).
func (s *Service) retry(ctx context.Context) {
	if s.allFailed {
		s.allFailed = false
		s.reconcileAll(ctx)
	}
	if len(s.failed) > 0 {
		ids := slices.Sorted(maps.Keys(s.failed))
		clear(s.failed)
		for _, id := range ids {
			s.reconcile(ctx, id)
		}
	}
	if len(s.remoteFailed) > 0 {
		s.reconcileRemote(ctx, nil)
	}
	if s.undone() {
		s.fails++
	} else {
		s.fails = 0
	}
}

func (s *Service) undone() bool { return s.allFailed || len(s.failed) > 0 || len(s.remoteFailed) > 0 }

// storeRetry is the wait before a pass that retries what the store refused,
// by passes in a row: 1 s doubling, at most a minute.
var storeRetry = backoff.Policy{Min: time.Second, Max: time.Minute}

func (s *Service) untilNext(ctx context.Context) time.Duration {
	d := time.Hour
	if next, err := s.opt.Store.PushNextDue(ctx); err == nil && !next.IsZero() {
		d = max(next.Sub(s.opt.Clock.Now()), 50*time.Millisecond)
	}
	if s.undone() {
		d = min(d, storeRetry.Delay(s.fails-1))
	}
	return d
}

func (s *Service) reconcileAll(ctx context.Context) {
	seen := map[chat.ThreadID]bool{}
	ths, err := s.opt.Store.Threads(ctx)
	if err != nil {
		s.log.Error("push: threads", "err", err)
		s.allFailed = true
	}
	unclosed, err := s.opt.Store.PushUnclosedThreads(ctx)
	if err != nil {
		s.log.Error("push: threads", "err", err)
		s.allFailed = true
	}
	var remote []chat.ThreadID
	for _, th := range ths {
		seen[th.ID] = true
		s.reconcile(ctx, th.ID)
	}
	for _, id := range unclosed {
		if seen[id] {
			continue
		}
		if s.opt.Remote != nil && s.opt.Remote.Owns(id) {
			remote = append(remote, id)
			continue
		}
		s.reconcile(ctx, id)
	}
	if s.opt.Remote != nil {
		s.reconcileRemote(ctx, remote)
	}
}

// reconcile writes to the outbox what a thread's cards call for: an open push
// per open card and subscription, a closing push per card that closed after
// its open push left; and its optional pushes. A key already written is left
// as it is. What the store refuses is done again at run's next pass.
func (s *Service) reconcile(ctx context.Context, id chat.ThreadID) {
	if s.opt.Remote != nil && s.opt.Remote.Owns(id) {
		// Another machine's: its cards come from Remote (reconcileRemote),
		// never from this store, which does not hold them.
		return
	}
	err := errors.Join(s.reconcileCards(ctx, id), s.reconcileOptional(ctx, id))
	if err != nil {
		s.log.Error("push: could not queue a thread's pushes; trying again", "thread", id, "err", err)
		if s.failed == nil {
			s.failed = map[chat.ThreadID]bool{}
		}
		s.failed[id] = true
	}
}

func (s *Service) reconcileCards(ctx context.Context, id chat.ThreadID) error {
	open, err := s.opt.Store.Cards(ctx, id, chat.CardOpen)
	if err != nil {
		return fmt.Errorf("push: cards of %s: %w", id, err)
	}
	briefs := make([]Card, 0, len(open))
	for _, c := range open {
		briefs = append(briefs, Card{RequestID: c.RequestID, Kind: c.Kind, Asks: c.Asks()})
	}
	return s.reconcileOpen(ctx, id, func() (chat.Thread, error) { return s.opt.Store.Thread(ctx, id) }, briefs)
}

// Card is an open card as a push tells it: its id and what it asks
// (chat.Card.Asks), never its input.
type Card struct {
	RequestID string `json:"request_id"`
	Kind      string `json:"kind"`
	Asks      string `json:"asks"`
}

// reconcileOpen writes the outbox entries a thread's open cards call for
// (thread is read only when one is open), against what its outbox holds.
func (s *Service) reconcileOpen(ctx context.Context, id chat.ThreadID, thread func() (chat.Thread, error), open []Card) error {
	opened, err := s.opt.Store.PushOpened(ctx, id)
	if err != nil {
		return fmt.Errorf("push: outbox of %s: %w", id, err)
	}
	if len(open) == 0 && len(opened) == 0 {
		return nil
	}
	now := s.opt.Clock.Now()
	var items []store.PushItem
	isOpen := map[string]bool{}
	if len(open) > 0 {
		th, err := thread()
		if errors.Is(err, chat.ErrNotFound) {
			return nil // deleted meanwhile: its deletion closes its pushes
		}
		if err != nil {
			return fmt.Errorf("push: thread %s: %w", id, err)
		}
		subs, err := s.opt.Store.PushSubscriptions(ctx)
		if err != nil {
			return fmt.Errorf("push: subscriptions: %w", err)
		}
		gone := map[string]bool{}
		for _, sub := range subs {
			if s.opt.Live != nil && !gone[sub.Device] && !s.opt.Live(sub.Device) {
				gone[sub.Device] = true
				s.DeviceGone(sub.Device)
			}
		}
		for _, c := range open {
			isOpen[c.RequestID] = true
			payload := s.openPayload(th, c)
			for _, sub := range subs {
				if gone[sub.Device] {
					continue
				}
				state := store.PushPending
				if s.opt.OnScreen != nil && s.opt.OnScreen(sub.Device, id) {
					state = store.PushSkipped
				}
				items = append(items, store.PushItem{Endpoint: sub.Endpoint, Thread: id, RequestID: c.RequestID,
					Kind: store.PushOpen, Payload: payload, State: state, NextAt: now})
			}
		}
	}
	for _, o := range opened {
		if isOpen[o.RequestID] {
			continue
		}
		state := store.PushSkipped // nothing was shown, so nothing to close
		switch o.State {
		case store.PushSent:
			state = store.PushPending
		case store.PushPending:
			// It closed before its push left: a push for an answered card is
			// the noise people complain of. Neither goes.
			if err := s.opt.Store.PushMark(ctx, o.ID, store.PushSkipped, o.Attempts, o.NextAt); err != nil {
				return fmt.Errorf("push: outbox of %s: %w", id, err)
			}
		}
		items = append(items, store.PushItem{Endpoint: o.Endpoint, Thread: id, RequestID: o.RequestID,
			Kind: store.PushClose, Payload: closePayload(id, o.RequestID), State: state, NextAt: now})
	}
	n, err := s.opt.Store.PushEnqueue(ctx, items)
	if err != nil {
		return fmt.Errorf("push: outbox of %s: %w", id, err)
	}
	if n > 0 {
		s.log.Debug("push: queued", "thread", id, "new", n)
	}
	return nil
}

// Message is a push's payload as the service worker reads it.
type Message struct {
	Kind      string `json:"kind"` // "open" or "close"; "turn" or "error" (optional pushes)
	Title     string `json:"title,omitempty"`
	Body      string `json:"body,omitempty"`
	Tag       string `json:"tag"`
	URL       string `json:"url"`
	Thread    string `json:"thread"`
	RequestID string `json:"request_id,omitempty"`
}

// Tag is the notification tag of a card: the closing push replaces the open one.
func Tag(thread chat.ThreadID, requestID string) string {
	return "parley-card:" + string(thread) + ":" + requestID
}

// threadURL opens the thread at its open card (at its end without one).
func threadURL(thread chat.ThreadID, requestID string) string {
	u := "/#/t/" + url.PathEscape(string(thread))
	if requestID != "" {
		u += "?card=" + url.QueryEscape(requestID)
	}
	return u
}

// openPayload says who asks and what, in a line (Card.Asks): never the
// tool's input (a command, a file's content), which may hold secrets.
func (s *Service) openPayload(th chat.Thread, c Card) []byte {
	b, _ := json.Marshal(Message{Kind: store.PushOpen, Title: s.title(th), Body: clip(c.Asks, maxBody), Tag: Tag(th.ID, c.RequestID),
		URL: threadURL(th.ID, c.RequestID), Thread: string(th.ID), RequestID: c.RequestID})
	return b
}

// title names who a push is from: the agent and the machine.
func (s *Service) title(th chat.Thread) string {
	agent := th.Agent
	if s.opt.AgentName != nil && th.Node == "" { // another machine's is named by it (RemoteThread)
		if n := s.opt.AgentName(th.Agent); n != "" {
			agent = n
		}
	}
	if m := cmp.Or(th.Node, s.opt.Machine); m != "" {
		agent += " on " + m
	}
	return agent
}

func closePayload(thread chat.ThreadID, requestID string) []byte {
	b, _ := json.Marshal(Message{Kind: store.PushClose, Body: "answered", Tag: Tag(thread, requestID),
		URL: "/#/t/" + url.PathEscape(string(thread)), Thread: string(thread), RequestID: requestID})
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// topic collapses a card's pushes at the push service (RFC 8030 section 5.4):
// a closing push replaces an undelivered open one. 32 URL-safe characters.
func topic(thread chat.ThreadID, requestID string) string {
	h := sha256.Sum256([]byte(Tag(thread, requestID)))
	return base64.RawURLEncoding.EncodeToString(h[:24])
}

// sendDue sends a batch of what is due, one at a time, marking each; run's
// timer comes back at once for the rest (a mark that fails cannot spin).
func (s *Service) sendDue(ctx context.Context) {
	due, err := s.opt.Store.PushDue(ctx, s.opt.Clock.Now(), 32)
	if err != nil {
		s.log.Error("push: outbox", "err", err)
		return
	}
	for _, it := range due {
		if ctx.Err() != nil {
			return
		}
		s.send(ctx, it)
	}
}

func (s *Service) send(ctx context.Context, it store.PushItem) {
	if s.opt.Live != nil && !s.opt.Live(it.Sub.Device) {
		// Signed out, expired or revoked since it was queued: it and the
		// device's other pending pushes are dropped, never sent.
		s.log.Info("push: device signed out; its pending pushes dropped", "device", it.Sub.Device)
		s.DeviceGone(it.Sub.Device)
		return
	}
	if _, err := checkEndpoint(it.Endpoint); err != nil {
		// Subscribed before endpoints were held to https.
		s.forget(ctx, it, "push endpoint refused: subscription removed", err)
		return
	}
	urgency := webpush.UrgencyHigh
	if it.Kind != store.PushOpen {
		urgency = webpush.UrgencyNormal
	}
	resp, err := webpush.SendNotificationWithContext(ctx, it.Payload,
		&webpush.Subscription{Endpoint: it.Endpoint, Keys: webpush.Keys{P256dh: it.Sub.P256dh, Auth: it.Sub.Auth}},
		&webpush.Options{HTTPClient: s.http, Subscriber: s.opt.Subscriber, Topic: topic(it.Thread, it.RequestID),
			TTL: ttl, Urgency: urgency, VAPIDPublicKey: s.keys.Public, VAPIDPrivateKey: s.keys.Private})
	status := 0
	if resp != nil {
		status = resp.StatusCode
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
	log := s.log.With("endpoint_host", hostOf(it.Endpoint), "thread", it.Thread, "kind", it.Kind, "status", status)
	switch {
	case err == nil && status >= 200 && status < 300:
		if err := s.opt.Store.PushMark(ctx, it.ID, store.PushSent, it.Attempts+1, s.opt.Clock.Now()); err != nil {
			log.Error("push: sent but not marked (it may go twice after a restart)", "err", err)
		}
		log.Debug("push sent")
	case status == http.StatusNotFound || status == http.StatusGone:
		// The subscription is gone for good (RFC 8030 section 7.3).
		s.forget(ctx, it, "push endpoint gone: subscription removed", nil)
	default:
		// A refused address at the dial (the host now resolves to one parley
		// does not push to) fails this attempt only, like any failure: the
		// answer may be a moment's (a captive portal, a VPN's DNS, a
		// blocklist's 0.0.0.0), and nothing was sent. Only the service's own
		// 404/410 ends a subscription.
		if ctx.Err() != nil {
			return // stopping: it stays pending
		}
		n := it.Attempts + 1
		state, next := store.PushPending, s.opt.Clock.Now().Add(sendRetry.Delay(n-1))
		if n >= maxAttempts {
			state = store.PushFailed
		}
		log.Warn("push failed; retrying later", "attempt", n, "err", redact(err), "next", next)
		if err := s.opt.Store.PushMark(ctx, it.ID, state, n, next); err != nil {
			log.Error("push: outbox", "err", err)
		}
	}
}

// forget drops an item's subscription, and with it the subscription's pushes.
func (s *Service) forget(ctx context.Context, it store.PushItem, why string, err error) {
	log := s.log.With("endpoint_host", hostOf(it.Endpoint), "thread", it.Thread, "kind", it.Kind)
	if err != nil {
		log.Warn(why, "err", redact(err))
	} else {
		log.Info(why)
	}
	if err := s.opt.Store.PushForget(ctx, it.Sub.Device, it.Endpoint); err != nil {
		log.Error("push: forget", "err", err)
	}
	s.recount()
}

// sendRetry is the wait before a push's next attempt, by attempts so far:
// 1 s doubling, at most 10 minutes.
var sendRetry = backoff.Policy{Min: time.Second, Max: 10 * time.Minute}

// redact keeps a push endpoint's path (the subscription's secret: whoever
// has it can push to the phone) out of a logged error: net/http's errors
// quote the whole URL. Its host stays.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, hostOf(ue.URL), ue.Err)
	}
	return err
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return ""
}
