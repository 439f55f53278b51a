package push

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// A push endpoint comes from a device: a browser's push service in honest
// hands, any URL in others'. parley POSTs to it, so an endpoint is held to
// public https push services twice: when it is subscribed (its host, resolved)
// and when each connection is dialled (the address actually dialled, so a name
// that resolves elsewhere later, DNS rebinding, gains nothing). Redirects are
// not followed and an answer's body is read to a bound.

// ErrRefusedAddress is an endpoint whose address parley does not push to.
var ErrRefusedAddress = errors.New("not a public address")

// Net is how the sender reaches push services. The zero Net is the one parley
// runs with: https only, public addresses only, the system's CAs, the proxy
// the environment names (HTTPS_PROXY, NO_PROXY, as net/http reads them).
type Net struct {
	// Allow, when set, replaces the public-address rule: it answers nil for an
	// address the sender may dial. Only Go test code sets it (daemon.Options),
	// to reach a push service stand-in on loopback; no config key, flag or
	// environment variable does.
	Allow func(netip.Addr) error
	// RootCAs, when set, replaces the system's CAs (a stand-in's own CA).
	RootCAs *x509.CertPool
	// Proxy, when set, replaces the environment's proxy
	// (http.ProxyFromEnvironment). Only Go test code sets it.
	Proxy func(*http.Request) (*url.URL, error)
	// Lookup, when set, replaces DNS where an endpoint's host is checked (at
	// subscription, and before a request goes through Proxy). Only Go test
	// code sets it: a browser's real endpoint names its vendor's host, which
	// the test's stand-in plays on loopback.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

func (n Net) allow(a netip.Addr) error {
	if n.Allow != nil {
		return n.Allow(a)
	}
	return PublicAddr(a)
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598, shared address space (100.100.100.200 is a cloud's metadata)
	reserved4 = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	}
	reserved6 = []netip.Prefix{
		netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated), :: and ::1 among them
		netip.MustParsePrefix("100::/64"),       // discard
		netip.MustParsePrefix("2001::/32"),      // Teredo: reaches an IPv4 address in disguise
		netip.MustParsePrefix("2001:db8::/32"),  // documentation
		netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
		netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	}
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the IPv4 address is the last 32 bits
	sixTo4 = netip.MustParsePrefix("2002::/16")    // RFC 3056: the IPv4 address is bits 16–48
)

// PublicAddr answers nil for an address on the public internet, where push
// services are, and says what else an address is: loopback, private (RFC 1918,
// fc00::/7), link-local (169.254.169.254, the cloud metadata address, among
// them), unspecified, multicast, shared (CGNAT, 100.64.0.0/10) or reserved. An
// IPv6 address that carries an IPv4 one (mapped, NAT64, 6to4) is judged by it.
func PublicAddr(a netip.Addr) error {
	a = a.Unmap()
	if a.Is6() && (nat64.Contains(a) || sixTo4.Contains(a)) {
		b := a.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:16]))
		if sixTo4.Contains(a) {
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if err := PublicAddr(v4); err != nil {
			return fmt.Errorf("%w (%s carries %v)", err, a, v4)
		}
		return nil
	}
	what := ""
	switch {
	case !a.IsValid():
		what = "no address"
	case a.IsUnspecified():
		what = "the unspecified address"
	case a.IsLoopback():
		what = "a loopback address"
	case a.IsPrivate():
		what = "a private address"
	case a == netip.AddrFrom4([4]byte{169, 254, 169, 254}):
		what = "the cloud metadata address"
	case a.IsLinkLocalUnicast():
		what = "a link-local address"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		what = "a multicast address"
	case cgnat.Contains(a):
		what = "a shared (CGNAT) address"
	case !a.IsGlobalUnicast() || inAny(a, reserved4) || inAny(a, reserved6):
		what = "a reserved address"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is %s", ErrRefusedAddress, a, what)
}

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxEndpoint bounds an endpoint URL's length.
const maxEndpoint = 2048

// checkEndpoint is the shape an endpoint must have: an https URL with a host
// and no user name or password.
func checkEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(endpoint)
	switch {
	case err != nil || len(endpoint) > maxEndpoint:
		return nil, fmt.Errorf("%w: the endpoint must be an https URL of at most %d bytes", ErrBadSubscription, maxEndpoint)
	case u.Scheme != "https" || u.Hostname() == "" || u.Opaque != "":
		return nil, fmt.Errorf("%w: the endpoint must be an https URL (a browser's push service), not %q", ErrBadSubscription, u.Scheme+"://"+u.Host)
	case u.User != nil:
		return nil, fmt.Errorf("%w: the endpoint must not carry a user name or password", ErrBadSubscription)
	}
	return u, nil
}

// lookupTimeout bounds resolving an endpoint's host when it is subscribed.
const lookupTimeout = 5 * time.Second

// checkHost refuses an endpoint whose host is, or resolves to, an address
// the sender would not dial.
func (s *Service) checkHost(ctx context.Context, host string) error {
	if err := s.opt.Net.checkHost(ctx, s.lookup(), host); err != nil {
		return fmt.Errorf("%w: %w: parley pushes only to public push services", ErrBadSubscription, err)
	}
	return nil
}

// lookup is how the sender resolves an endpoint's host.
func (s *Service) lookup() lookupFunc {
	if s.opt.lookup != nil {
		return s.opt.lookup
	}
	if s.opt.Net.Lookup != nil {
		return s.opt.Net.Lookup
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
}

type lookupFunc = func(ctx context.Context, host string) ([]netip.Addr, error)

// checkHost refuses a host that is, or resolves to, an address n would not
// dial. Every address the name has must pass: the dialler may pick any of
// them.
func (n Net) checkHost(ctx context.Context, lookup lookupFunc, host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := n.allow(a); err != nil {
			return fmt.Errorf("the endpoint's host is %w", err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("the endpoint's host %s could not be resolved: %v", host, err)
	}
	for _, a := range addrs {
		if err := n.allow(a); err != nil {
			return fmt.Errorf("the endpoint's host %s is %w", host, err)
		}
	}
	return nil
}

// maxAnswerHeader bounds a push service's answer's headers; its body is read
// to at most 4 KiB (send).
const maxAnswerHeader = 16 << 10

// client is the sender's HTTP client: TLS with n's CAs, no redirect followed.
// A request goes direct or through the proxy the environment names
// (HTTPS_PROXY: a person's network may have no other way out), decided per
// request (pushTransport). Direct, every connection's address is checked as
// it is dialled (after DNS, so a name that changed its answer is caught).
// Through a proxy the dial reaches the proxy, which the person named and may
// be on their LAN or loopback; the endpoint's own host is then checked as it
// resolves just before the request, and the proxy resolves it again (a name
// that changes its answer in between is the one gap left).
func (n Net) client(lookup lookupFunc) *http.Client {
	proxyOf := n.Proxy
	if proxyOf == nil {
		proxyOf = http.ProxyFromEnvironment
	}
	dialer := func(guard bool) *net.Dialer {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		if guard {
			d.Control = func(network, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
				}
				return n.allow(ap.Addr())
			}
		}
		return d
	}
	transport := func(proxy func(*http.Request) (*url.URL, error), d *net.Dialer) *http.Transport {
		return &http.Transport{
			Proxy:                  proxy,
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{RootCAs: n.RootCAs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:      true,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  sendTimeout,
			MaxResponseHeaderBytes: maxAnswerHeader,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
		}
	}
	rt := &pushTransport{proxyOf: proxyOf,
		// Only the proxied transport dials without the guard, and it dials
		// nothing but proxies: a request reaches it only when proxyOf named
		// one for it.
		direct:  transport(nil, dialer(true)),
		proxied: transport(chosenProxy, dialer(false)),
		check:   func(ctx context.Context, host string) error { return n.checkHost(ctx, lookup, host) }}
	return &http.Client{Transport: rt, Timeout: sendTimeout,
		// An endpoint is where a browser's push service takes pushes: one
		// that redirects could send parley's requests anywhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// pushTransport sends each request direct (the dial guarded) or, when the
// environment names a proxy for it, through that proxy once the endpoint's
// host has passed the check.
type pushTransport struct {
	proxyOf         func(*http.Request) (*url.URL, error)
	direct, proxied *http.Transport
	check           func(ctx context.Context, host string) error
}

func (t *pushTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, err := t.proxyOf(req)
	if err == nil && p == nil {
		return t.direct.RoundTrip(req)
	}
	if err == nil {
		err = t.check(req.Context(), req.URL.Hostname())
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, errors included
		}
		return nil, err
	}
	return t.proxied.RoundTrip(req.WithContext(context.WithValue(req.Context(), proxyKey{}, p)))
}

// proxyKey carries the proxy RoundTrip chose to the proxied transport, so that
// transport asks no one again (an answer that changed to "no proxy" would dial
// the endpoint unguarded).
type proxyKey struct{}

// chosenProxy is the proxied transport's Proxy: the one RoundTrip chose, and
// never a direct connection.
func chosenProxy(req *http.Request) (*url.URL, error) {
	if p, ok := req.Context().Value(proxyKey{}).(*url.URL); ok && p != nil {
		return p, nil
	}
	return nil, errors.New("push: a proxied request without its proxy")
}
