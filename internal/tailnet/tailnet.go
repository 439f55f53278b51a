// Package tailnet says what putting parley on the person's tailnet takes and
// gives: Options in, a Node out. The node itself is tsnode
// (tailscale.com/tsnet, in process), which only the parley binary links
// (cmd/parley hands tsnode.Join to the daemon through cli.Parts): tsnet brings
// some 270 packages, and every test binary that starts a daemon would
// otherwise compile and link them.
package tailnet

import (
	"log/slog"
	"net/http"
)

// Options say how to join and what to serve.
type Options struct {
	// Hostname is the machine's name on the tailnet.
	Hostname string
	// StateDir holds the node's keys; made 0700 if missing.
	StateDir string
	// AuthKeyFile, if set, holds the auth key for the first login. Without
	// it tsnet takes TS_AUTHKEY from the environment, else the person logs in
	// at the URL reported through Say. The key is never logged.
	AuthKeyFile string
	// ControlURL is the coordination server; "" is Tailscale's.
	ControlURL string
	// Server serves the tailnet's HTTPS listener too: the daemon passes its
	// own, so the same handler, authentication, timeouts and connection caps
	// apply there, and its Shutdown closes that listener as well.
	Server *http.Server
	// Say tells the person at the terminal what to do or where to go (a
	// login URL, the dashboard's address, why HTTPS is not served). It may
	// be called from another goroutine; nil says nothing.
	Say func(line string)
	// Serving is told the dashboard's https:// address once it is served
	// there; nil Says the address.
	Serving func(url string)
	Logger  *slog.Logger
}

// Node is parley's machine on the tailnet.
type Node interface {
	// URL is the dashboard's address on the tailnet, or "" until it is served.
	URL() string
	// Close stops serving and leaves the tailnet (the node's keys stay in
	// StateDir for the next start). Shutting Options.Server down is the caller's.
	Close() error
}

// Join brings a node up in the background: it returns once the node's state
// is loaded, without waiting for a login.
type Join func(Options) (Node, error)
