package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultPluginHeartbeat is how often the host pings a plugin; a plugin that
// misses a ping for that long again is restarted.
const DefaultPluginHeartbeat = 15 * time.Second

// Plugin is one IM channel process that parley starts and supervises. It speaks
// ACP as the client on its stdin/stdout, parley being the agent
// (docs/plugin-protocol.md).
type Plugin struct {
	// ID names the plugin and is the channel kind of its routes.
	ID string `toml:"id"`
	// Command is the program; "" runs this parley binary (with Args such as
	// ["plugin", "irc"] for a built-in plugin).
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	// AllowedUsers are the platform user ids that may drive agents. Anyone else
	// is refused; an empty list refuses everyone.
	AllowedUsers []string `toml:"allowed_users"`
	// Agent is the agent of new threads ("" = default_agent).
	Agent string `toml:"agent"`
	// Config is the plugin's own section, handed to it in initialize's _meta.
	Config    map[string]any `toml:"config"`
	Heartbeat Duration       `toml:"heartbeat"`
	Disabled  bool           `toml:"disabled"`
}

// reservedChannels are channel kinds of in-process channels.
var reservedChannels = map[string]bool{"web": true, "tui": true, "acp": true}

// validatePlugins checks the [[plugin]] entries and fills their defaults.
func (c *Config) validatePlugins() error {
	var errs []error
	seen := map[string]bool{}
	for i := range c.Plugins {
		p := &c.Plugins[i]
		if !idPattern.MatchString(p.ID) {
			errs = append(errs, fmt.Errorf("plugin %q: id must be lowercase letters, digits, '.', '_' or '-'", p.ID))
			continue
		}
		if reservedChannels[p.ID] {
			errs = append(errs, fmt.Errorf("plugin %q: the id is a built-in channel's", p.ID))
		}
		if seen[p.ID] {
			errs = append(errs, fmt.Errorf("plugin %q: defined twice", p.ID))
		}
		seen[p.ID] = true
		if p.Command == "" && len(p.Args) == 0 {
			errs = append(errs, fmt.Errorf("plugin %q: needs a command (or args for this binary, e.g. [\"plugin\", \"irc\"])", p.ID))
		}
		for k := range p.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				errs = append(errs, fmt.Errorf("plugin %q: bad environment variable name %q", p.ID, k))
			}
		}
		if p.Heartbeat.Duration == 0 {
			p.Heartbeat = Duration{DefaultPluginHeartbeat}
		} else if err := HeartbeatRange.check(fmt.Sprintf("plugin %q: heartbeat", p.ID), p.Heartbeat.Duration); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
