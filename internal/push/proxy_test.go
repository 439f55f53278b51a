package push_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/push"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/testkit"
	"github.com/parleyhq/parley/internal/testkit/webpushsvc"
)

// connectProxy is an HTTP CONNECT proxy on loopback, as a person's network
// may have (HTTPS_PROXY): it tunnels to the address asked and records it.
type connectProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	to  []string // the host:port of each CONNECT
}

func startProxy(t *testing.T) *connectProxy {
	p := &connectProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		p.mu.Lock()
		p.to = append(p.to, r.Host)
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
		rw.Flush()
		go func() { io.Copy(up, rw); up.Close() }()
		io.Copy(conn, up)
		conn.Close()
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *connectProxy) url() *url.URL { u, _ := url.Parse(p.srv.URL); return u }

func (p *connectProxy) tunnels() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.to...)
}

// A machine whose only way out is a proxy (HTTPS_PROXY) still pushes: the
// push goes through the proxy, which parley reaches wherever the person put
// it (here loopback, where parley's own rule would never dial a push service).
// The endpoint's host is still held to public addresses: one that resolves
// to loopback by the time of the request is refused before the proxy is
// asked, and the push is tried again later with its subscription kept.
func TestPushesGoThroughTheEnvironmentsProxy(t *testing.T) {
	t.Parallel()
	public := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	}
	t.Run("delivered through the proxy", func(t *testing.T) {
		proxy := startProxy(t)
		// parley's own rule (public addresses only) with the endpoint's
		// name public when looked up: the proxy on loopback is dialled all
		// the same, and it reaches the stand-in.
		n := push.Net{RootCAs: webpushsvc.Net().RootCAs, Proxy: http.ProxyURL(proxy.url())}
		r := startPush(t, push.WithLookup(push.Options{Net: n}, public))
		sub, js, endpoint := r.subscription(t, "localhost")
		if err := r.s.Subscribe("dev", js); err != nil {
			t.Fatal(err)
		}
		enqueueClose(t, r, endpoint)
		r.svc.WaitFor(t, 10*time.Second, "the push through the proxy", func(ps []webpushsvc.Push) bool { return len(ps) == 1 })
		u, _ := url.Parse(endpoint)
		if got := proxy.tunnels(); len(got) != 1 || got[0] != u.Host {
			t.Fatalf("the proxy tunnelled to %v, want once to %s", got, u.Host)
		}
		if n := r.svc.Attempts(sub); n != 1 {
			t.Fatalf("%d requests reached the service, want 1", n)
		}
	})
	t.Run("a host now on loopback is refused before the proxy", func(t *testing.T) {
		proxy := startProxy(t)
		var looked atomic.Int32
		// Public when subscribed, loopback after (DNS rebinding).
		lookup := func(context.Context, string) ([]netip.Addr, error) {
			if looked.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		n := push.Net{RootCAs: webpushsvc.Net().RootCAs, Proxy: http.ProxyURL(proxy.url())} // parley's rule
		r := startPush(t, push.WithLookup(push.Options{Net: n}, lookup))
		sub, js, endpoint := r.subscription(t, "rebound.example")
		if err := r.s.Subscribe("dev", js); err != nil {
			t.Fatalf("subscribe (public when looked up): %v", err)
		}
		enqueueClose(t, r, endpoint)
		testkit.Eventually(t, 10*time.Second, func() bool {
			due, err := r.st.PushDue(context.Background(), time.Now().Add(time.Hour), 10)
			return err == nil && len(due) == 1 && due[0].Attempts >= 1
		}, "the push refused before the proxy and kept for a later attempt")
		if !r.s.Subscribed("dev") {
			t.Fatal("the subscription was dropped")
		}
		if got := proxy.tunnels(); len(got) != 0 {
			t.Fatalf("the proxy was asked to tunnel to %v", got)
		}
		if n := r.svc.Attempts(sub); n != 0 {
			t.Fatalf("%d requests reached the service", n)
		}
	})
}

// enqueueClose queues a closing push for endpoint and wakes the sender (a
// closing push needs no open card in the store).
func enqueueClose(t *testing.T, r *pushRig, endpoint string) {
	t.Helper()
	if _, err := r.st.PushEnqueue(context.Background(), []store.PushItem{{Endpoint: endpoint, Thread: "t1", RequestID: "r1",
		Kind: store.PushClose, Payload: []byte(`{"kind":"close"}`), State: store.PushPending, NextAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	r.s.Wake()
}
