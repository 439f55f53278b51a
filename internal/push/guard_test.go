package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/fanout"
	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store/sqlite"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// Every class of address that is not a public push service's is refused, by
// what it is; one that carries an IPv4 address (mapped, NAT64, 6to4) is
// judged by that address.
func TestPublicAddrRefusesEveryNonPublicClass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ addr, what string }{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "unspecified"}, // in ::/96 too; either word refuses it
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"fc00::1", "private"},
		{"169.254.169.254", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.1.2.3", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "CGNAT"},
		{"100.100.100.200", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"0.1.2.3", "reserved"},
		{"192.0.2.1", "reserved"},
		{"198.18.0.1", "reserved"},
		{"2001:db8::1", "reserved"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "metadata"},
		{"2002:7f00:1::1", "loopback"},
		{"2002:c0a8:101::1", "private"},
	} {
		err := push.PublicAddr(netip.MustParseAddr(c.addr))
		if !errors.Is(err, push.ErrRefusedAddress) || !strings.Contains(err.Error(), c.what) {
			if c.addr == "::1" && err != nil && strings.Contains(err.Error(), "loopback") {
				continue
			}
			t.Errorf("%s: %v, want it refused as %s", c.addr, err, c.what)
		}
	}
	for _, a := range []string{"8.8.8.8", "142.250.74.110", "100.63.255.255", "100.128.0.1", "172.32.0.1", "2a00:1450:4001::200e",
		"64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"} {
		if err := push.PublicAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s: %v, want it public", a, err)
		}
	}
}

// pushRig is a push service on a real store, with the stand-in.
type pushRig struct {
	st  *sqlite.Store
	svc *webpushsvc.Service
	s   *push.Service
	log *testWriter // what the service logged
}

func startPush(t *testing.T, opt push.Options) *pushRig {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := fanout.New(nil)
	w := h.Watch()
	t.Cleanup(func() { h.Unwatch(w) })
	opt.DataDir, opt.Store, opt.Watch = dir, st, w
	logs := &testWriter{t: t}
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := push.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	svc := webpushsvc.Start(t)
	svc.ExpectKey(t, s.PublicKey())
	return &pushRig{st: st, svc: svc, s: s, log: logs}
}

// subscription is sub's PushSubscription JSON with its endpoint on host.
func (r *pushRig) subscription(t *testing.T, host string) (*webpushsvc.Sub, json.RawMessage, string) {
	sub, js := r.svc.Subscribe(t)
	var m map[string]any
	json.Unmarshal(js, &m)
	m["endpoint"] = r.svc.Endpoint(sub, host)
	b, _ := json.Marshal(m)
	return sub, b, m["endpoint"].(string)
}

// A subscription whose endpoint is not https, or whose host is or resolves to
// an address parley does not push to, is refused with a reason (the web
// channel answers it with 400); nothing is kept.
func TestSubscribeRefusesEndpointsOffThePublicInternet(t *testing.T) {
	t.Parallel()
	r := startPush(t, push.Options{})
	_, good, _ := r.subscription(t, "127.0.0.1")
	keys := func(endpoint string) json.RawMessage {
		var m map[string]any
		json.Unmarshal(good, &m)
		m["endpoint"] = endpoint
		b, _ := json.Marshal(m)
		return b
	}
	for _, c := range []struct{ endpoint, want string }{
		{"http://push.example.com/x", "https"},
		{"ftp://push.example.com/x", "https"},
		{"https://user:pw@push.example.com/x", "user name"},
		{"https:///x", "https"},
		{"https://127.0.0.1/x", "loopback"},
		{"https://127.0.0.1:8443/x", "loopback"},
		{"https://[::1]/x", "loopback"},
		{"https://[::ffff:127.0.0.1]/x", "loopback"},
		{"https://localhost/x", "loopback"},
		{"https://10.0.0.5/x", "private"},
		{"https://192.168.1.20:631/x", "private"},
		{"https://[fd12::1]/x", "private"},
		{"https://169.254.169.254/latest/meta-data/", "metadata"},
		{"https://[fe80::1]/x", "link-local"},
		{"https://0.0.0.0/x", "unspecified"},
		{"https://224.0.0.251/x", "multicast"},
		{"https://100.64.1.1/x", "CGNAT"},
		{"https://" + strings.Repeat("a", 2100) + ".example/x", "at most"},
	} {
		err := r.s.Subscribe("dev", keys(c.endpoint))
		if !errors.Is(err, push.ErrBadSubscription) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: %v, want refused (%s)", c.endpoint, err, c.want)
		}
	}
	if subs, _ := r.st.PushSubscriptions(context.Background()); len(subs) != 0 || r.s.Subscribed("dev") {
		t.Fatalf("refused subscriptions were kept: %+v", subs)
	}
}

// DNS rebinding: a name that resolved to a public address when it was
// subscribed and resolves to loopback when parley dials it is refused at the
// dial (no request reaches the service behind it) and its subscription is
// dropped. The same subscription, sent by a Net that may dial loopback (the
// tests' own), is delivered over TLS: the address is what refuses it.
func TestDialRefusesANameThatNowResolvesToLoopback(t *testing.T) {
	t.Parallel()
	public := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	}
	for _, c := range []struct {
		name    string
		opt     push.Options
		deliver bool
	}{
		{"parley's Net", push.WithLookup(push.Options{Net: push.Net{RootCAs: webpushsvc.Net().RootCAs}}, public), false},
		{"the tests' Net", push.Options{Net: webpushsvc.Net()}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startPush(t, c.opt)
			sub, js, endpoint := r.subscription(t, "localhost")
			if err := r.s.Subscribe("dev", js); err != nil {
				t.Fatalf("subscribe %s (public when looked up): %v", endpoint, err)
			}
			// A closing push: the sender's own look at the outbox at start
			// (which may come after this) leaves it as it is; an open push
			// without its card in the store it would skip.
			enqueueClose(t, r, endpoint)
			if c.deliver {
				r.svc.WaitFor(t, 10*time.Second, "the push", func(ps []webpushsvc.Push) bool { return len(ps) == 1 })
				return
			}
			// Refused at the dial, the attempt fails like any other and is
			// tried again later: the subscription stays (a moment's DNS
			// answer, a captive portal's, must not unsubscribe a phone).
			testkit.Eventually(t, 10*time.Second, func() bool {
				due, err := r.st.PushDue(context.Background(), time.Now().Add(time.Hour), 10)
				return err == nil && len(due) == 1 && due[0].Attempts >= 1
			}, "the push refused at the dial and kept for a later attempt")
			if !r.s.Subscribed("dev") {
				t.Fatal("the subscription was dropped at the dial")
			}
			if u, _ := url.Parse(endpoint); strings.Contains(r.log.String(), u.Path) {
				t.Fatalf("the log holds the endpoint's path (its secret):\n%s", r.log.String())
			}
			if n := r.svc.Attempts(sub); n != 0 {
				t.Fatalf("%d requests reached the service on loopback", n)
			}
			if rej := r.svc.Rejected(); len(rej) != 0 {
				t.Fatalf("requests reached the service: %v", rej)
			}
		})
	}
}

// testWriter logs to the test and keeps what was written.
type testWriter struct {
	t   *testing.T
	mu  sync.Mutex
	all strings.Builder
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.Write(b)
}

func (w *testWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}
