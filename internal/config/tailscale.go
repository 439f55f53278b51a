package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
)

// Tailscale is the [tailscale] table: parley joins the person's tailnet as its
// own machine and serves the dashboard there over HTTPS (internal/tailnet).
type Tailscale struct {
	// Enabled joins the tailnet (`parley serve --tailscale`).
	Enabled bool `toml:"enabled"`
	// Hostname is the machine's name on the tailnet (its MagicDNS label).
	Hostname string `toml:"hostname"`
	// StateDir holds the node's keys and state (default <data>/tailscale).
	StateDir string `toml:"state_dir"`
	// AuthKeyFile holds an auth key for the first login; without it (and
	// without TS_AUTHKEY in the environment) parley prints a login URL.
	AuthKeyFile string `toml:"auth_key_file"`
	// ControlURL is the coordination server; "" is Tailscale's own. Set it for
	// Headscale. Plain http is refused except to a loopback host.
	ControlURL string `toml:"control_url"`
}

// DefaultTailscaleHostname is [tailscale] hostname's default.
const DefaultTailscaleHostname = "parley"

// hostLabel is one DNS label, which MagicDNS names the machine by.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// check validates [tailscale] and fills its defaults from the data directory.
func (t *Tailscale) check(dataDir string) []error {
	var errs []error
	if t.Hostname == "" {
		t.Hostname = DefaultTailscaleHostname
	} else if !hostLabel.MatchString(t.Hostname) {
		errs = append(errs, fmt.Errorf("tailscale.hostname %q: want 1 to 63 lowercase letters, digits or '-', not starting or ending with '-'", t.Hostname))
	}
	if t.StateDir == "" && dataDir != "" {
		t.StateDir = filepath.Join(dataDir, "tailscale")
	}
	if t.StateDir != "" {
		abs, err := filepath.Abs(t.StateDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("tailscale.state_dir: %w", err))
		}
		t.StateDir = abs
	}
	if t.ControlURL != "" {
		if err := checkControlURL(t.ControlURL); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkControlURL wants https, or http to a loopback host only: the node
// learns the server's key from it, so plain http across a network would let
// anyone on the path stand in for the coordination server.
func checkControlURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("tailscale.control_url %q: want an https:// URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
			return nil
		}
	}
	return fmt.Errorf("tailscale.control_url %q: want https:// (plain http only to a loopback host)", s)
}
