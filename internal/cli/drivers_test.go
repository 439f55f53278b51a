package cli

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/driver/tmux"
)

// TestConfigKnowsEveryDriverOption: config refuses option keys it does not
// know, so every option a driver reads must be one it knows.
func TestConfigKnowsEveryDriverOption(t *testing.T) {
	t.Parallel()
	read := map[string][]string{
		config.TransportStream: {stream.OptionAllowBypass},
		config.TransportACP:    {acp.OptAuthMethod, acp.OptMCPServers},
		config.TransportTmux:   {tmux.OptAdopt, tmux.OptSession, tmux.OptHooks, tmux.OptSocket},
	}
	for transport, opts := range read {
		for _, o := range opts {
			if !slices.Contains(config.TransportOptions[transport], o) {
				t.Errorf("the %s driver reads option %q, which config refuses", transport, o)
			}
		}
	}
}
