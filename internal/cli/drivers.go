package cli

import (
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/driver"
	"github.com/parleyhq/parley/internal/driver/acp"
	"github.com/parleyhq/parley/internal/driver/stream"
	"github.com/parleyhq/parley/internal/driver/tmux"
	"github.com/parleyhq/parley/internal/driver/watch"
	"github.com/parleyhq/parley/internal/router"
	"github.com/parleyhq/parley/ui"
)

// realDrivers are the transports a user's config can name. Test-only drivers are
// never listed here.
func realDrivers(log *slog.Logger, cfg config.Config) map[string]driver.Driver {
	return map[string]driver.Driver{
		config.TransportStream: stream.New(log.With("transport", "stream")),
		config.TransportACP:    acp.New(log.With("transport", "acp")),
		config.TransportTmux:   tmux.New(log.With("transport", "tmux"), filepath.Join(cfg.DataDir, "tmux")),
		// Not a config's: a session running in a plain terminal, watched.
		router.TransportWatch: &watch.Driver{},
	}
}

// dashboard returns the embedded bundle and its hash.
func dashboard() (fs.FS, string) { return ui.FS(), ui.Hash() }
