package daemon

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/config"
)

// warnings are the risky settings a person should hear about at start: each is
// logged and printed under the dashboard link. listen is the bound address.
func warnings(cfg config.Config, listen net.Addr, tls bool) []string {
	var out []string
	if reachable(listen) && !tls {
		// Started only with insecure_http (refuseClearText): say it still.
		out = append(out, fmt.Sprintf("parley listens on %s, reachable from other machines, without TLS (--insecure-http): the token and conversations cross the network in clear text", listen))
	}
	roots := map[string]bool{}
	for _, r := range cfg.Roots {
		roots[r] = true
	}
	for _, a := range cfg.Agents {
		for _, r := range a.Roots {
			roots[r] = true
		}
	}
	for r := range roots {
		if filepath.Clean(r) == "/" {
			out = append(out, fmt.Sprintf("a root is the whole file system (%q): agents may be started in any directory", r))
			break
		}
	}
	for _, o := range cfg.AllowedOrigins {
		switch t := strings.TrimSpace(o); {
		case strings.Contains(t, "*"):
			out = append(out, fmt.Sprintf("allowed_origins holds %q: parley compares origins exactly, so a wildcard matches nothing but the literal text; list each origin", o))
		case strings.EqualFold(t, "null"):
			out = append(out, "allowed_origins holds \"null\": any sandboxed page or local file sends that origin and may use a signed-in browser's session")
		}
	}
	return out
}

// reachable says whether other machines can reach a listener's address.
func reachable(listen net.Addr) bool {
	tcp, ok := listen.(*net.TCPAddr)
	return ok && !tcp.IP.IsLoopback()
}

// refuseClearText refuses to serve plain HTTP where other machines reach it,
// unless the person said so (insecure_http, --insecure-http): the token, the
// session cookies and every conversation would be readable on the path.
func refuseClearText(cfg config.Config, listen net.Addr, tls bool) error {
	if !reachable(listen) || tls || cfg.InsecureHTTP {
		return nil
	}
	return fmt.Errorf("parley would listen on %s, reachable from other machines, without TLS: the token and conversations would cross the network in clear text. Give tls_cert and tls_key (--tls-cert, --tls-key), or bind 127.0.0.1 (the default) and use Tailscale (--tailscale), an SSH tunnel or a TLS proxy; or, on a network you trust, say --insecure-http", listen)
}

// Warnings are the risky settings found at start (also logged).
func (d *Daemon) Warnings() []string { return d.warnings }
