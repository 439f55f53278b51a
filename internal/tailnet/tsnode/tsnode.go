//go:build !notailnet

// Package tsnode puts parley on the person's tailnet as a machine of its own
// (tailscale.com/tsnet, in process: no tailscaled, no port opened to the
// internet) and serves an HTTP handler there over HTTPS with the tailnet's
// certificate for <hostname>.<tailnet>.ts.net. Only the parley binary imports
// it (package tailnet says why); the daemon sees a tailnet.Node. With -tags
// notailnet (the fast tier, `make unit`) the package has no files, so `go test
// -short -tags notailnet ./...` compiles none of tsnet's ~270 packages;
// `make test` and `make lint` build and vet it.
//
// One goroutine (run) owns the node's progress: it watches the node's state,
// reports a login URL when the node needs one, and once the node runs opens
// the listeners and reports the dashboard's URL.
package tsnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"

	"tailscale.com/ipn"
	"tailscale.com/tsnet"

	"github.com/parleyhq/parley/internal/tailnet"
)

// Node is parley's machine on the tailnet.
type Node struct {
	opt    tailnet.Options
	srv    *tsnet.Server
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	url      string // https://<host>.<tailnet>, once serving
	redirect *http.Server
}

// Join is Start as a tailnet.Join, what cmd/parley hands the daemon.
func Join(opt tailnet.Options) (tailnet.Node, error) {
	n, err := Start(opt)
	if err != nil {
		return nil, err // not a nil *Node in a non-nil interface
	}
	return n, nil
}

// Start brings the node up in the background: it returns once the node's
// state is loaded, without waiting for a login.
func Start(opt tailnet.Options) (*Node, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Say == nil {
		opt.Say = func(string) {}
	}
	if err := os.MkdirAll(opt.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("tailscale: state directory: %w", err)
	}
	key, err := readAuthKey(opt.AuthKeyFile)
	if err != nil {
		return nil, err
	}
	log := opt.Logger.With("component", "tailscale")
	srv := &tsnet.Server{
		Dir:        opt.StateDir,
		Hostname:   opt.Hostname,
		AuthKey:    key,
		ControlURL: opt.ControlURL,
		// tsnet's own lines repeat the login URL every few seconds; run
		// reports it once through Say instead.
		UserLogf: debugf(log),
		Logf:     debugf(log.With("backend", true)),
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("tailscale: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Node{opt: opt, srv: srv, cancel: cancel, done: make(chan struct{})}
	go n.run(ctx, log)
	return n, nil
}

// readAuthKey reads the key file's first line; "" when no file is named.
func readAuthKey(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("tailscale: auth_key_file: %w", err)
	}
	key, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if key = strings.TrimSpace(key); key == "" {
		return "", fmt.Errorf("tailscale: auth_key_file %s is empty", path)
	}
	return key, nil
}

func debugf(log *slog.Logger) func(string, ...any) {
	return func(format string, args ...any) {
		if log.Enabled(context.Background(), slog.LevelDebug) {
			log.Debug(fmt.Sprintf(format, args...))
		}
	}
}

// URL is the dashboard's address on the tailnet, or "" until it is served.
func (n *Node) URL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.url
}

// TSNet is the embedded Tailscale node, for tests and diagnostics.
func (n *Node) TSNet() *tsnet.Server { return n.srv }

// run reports logins and serves once the node runs, until ctx ends.
func (n *Node) run(ctx context.Context, log *slog.Logger) {
	defer close(n.done)
	lc, err := n.srv.LocalClient()
	if err != nil {
		n.opt.Say("tailscale: " + err.Error())
		return
	}
	w, err := lc.WatchIPNBus(ctx, ipn.NotifyInitialState)
	if err != nil {
		if ctx.Err() == nil {
			n.opt.Say("tailscale: " + err.Error())
		}
		return
	}
	defer w.Close()
	var lastLogin string
	serving := false
	for {
		note, err := w.Next()
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("tailscale: state watch ended", "err", err)
			}
			return
		}
		if note.ErrMessage != nil {
			n.opt.Say("tailscale: " + *note.ErrMessage)
		}
		if u := note.BrowseToURL; u != nil && *u != "" && *u != lastLogin {
			lastLogin = *u
			n.opt.Say(fmt.Sprintf("Tailscale: to put this parley on your tailnet as %q, open %s", n.opt.Hostname, *u))
		}
		if note.State == nil {
			continue
		}
		switch *note.State {
		case ipn.NeedsMachineAuth:
			n.opt.Say("Tailscale: approve the machine " + n.opt.Hostname + " in your tailnet's admin console")
		case ipn.Running:
			if !serving {
				serving = true
				if err := n.serve(ctx, lc); err != nil {
					n.opt.Say("tailscale: the dashboard is not served on the tailnet: " + err.Error())
				}
			}
		}
	}
}

// localClient is the part of tsnet's LocalClient serve uses.
type localClient interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	CertPair(ctx context.Context, domain string) (certPEM, keyPEM []byte, err error)
}

// serve opens :443 with the tailnet's certificate (what tsnet's ListenTLS
// does, without its wait for the node, which cannot be cancelled) and :80,
// which only redirects to it: a browser given the bare name tries http first.
func (n *Node) serve(ctx context.Context, lc localClient) error {
	st, err := n.srv.Up(ctx)
	if err != nil {
		return err
	}
	if !st.CurrentTailnet.MagicDNSEnabled {
		return errors.New("MagicDNS is off: turn it on in the DNS page of the tailnet's admin console (https://tailscale.com/s/https), then restart parley")
	}
	if len(st.CertDomains) == 0 {
		return errors.New("the tailnet has no HTTPS certificates: turn on HTTPS in the admin console (https://tailscale.com/s/https), then restart parley")
	}
	domain := st.CertDomains[0]
	ln, err := n.srv.Listen("tcp", ":443")
	if err != nil {
		return err
	}
	plain, err := n.srv.Listen("tcp", ":80")
	if err != nil {
		ln.Close()
		return err
	}
	url := "https://" + domain
	redirect := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, url+r.URL.RequestURI(), http.StatusMovedPermanently)
	}), ReadHeaderTimeout: n.opt.Server.ReadHeaderTimeout, IdleTimeout: n.opt.Server.IdleTimeout}
	n.mu.Lock()
	n.url = url
	n.redirect = redirect
	n.mu.Unlock()
	tlsLn := tls.NewListener(ln, &tls.Config{GetCertificate: lc.GetCertificate})
	go n.opt.Server.Serve(tlsLn)
	go redirect.Serve(plain)
	if n.opt.Serving != nil {
		n.opt.Serving(url)
	} else {
		n.opt.Say("On your tailnet: " + url)
	}
	// The first certificate comes from Let's Encrypt through the tailnet:
	// fetch it now, so the person's first visit does not wait for it.
	if _, _, err := lc.CertPair(ctx, domain); err != nil && ctx.Err() == nil {
		n.opt.Logger.Warn("tailscale: could not fetch the HTTPS certificate yet (the first visit will try again)", "domain", domain, "err", err)
	}
	return nil
}

// Close stops serving and leaves the tailnet (the node's keys stay in
// StateDir for the next start). Shutting Options.Server down is the caller's.
func (n *Node) Close() error {
	n.cancel()
	<-n.done
	n.mu.Lock()
	r := n.redirect
	n.mu.Unlock()
	if r != nil {
		r.Close()
	}
	return n.srv.Close()
}
