package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// listenError says why the listener could not be had. A port already taken
// is the common case (a second `parley serve`, or another program): it says
// which, by asking what answers there, and how to pick another address.
func listenError(addr string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	how := "give this one another address with --addr host:port (or addr in the config, PARLEY_ADDR)"
	if who := holder(addr); who != "" {
		return fmt.Errorf("listen %s: another parley is already serving there (%s): use that one, or stop it, or %s", addr, who, how)
	}
	return fmt.Errorf("listen %s: the port is taken by another program (not a parley): stop it, or %s", addr, how)
}

// holder is the address of the parley answering on addr, or "" when what
// answers (if anything) is not one. A parley's sign-in page names it; only
// that page is read, over plain HTTP and then TLS (not verified: this is
// only a question of who is there, nothing is sent).
func holder(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	hp := net.JoinHostPort(host, port)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // who answers, not whether to trust it
		Proxy:           nil,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	for _, scheme := range []string{"http", "https"} {
		u := scheme + "://" + hp + "/"
		resp, err := c.Get(u)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if strings.Contains(string(b), "<title>parley") {
			return u
		}
	}
	return ""
}
