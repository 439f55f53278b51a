package cli

import (
	"io/fs"
	"log/slog"

	"github.com/parleyhq/parley/internal/driver"
)

// realDrivers are the transports a user's config can name. Test-only drivers are
// never listed here.
func realDrivers(log *slog.Logger) map[string]driver.Driver {
	return map[string]driver.Driver{}
}

// dashboard returns the embedded bundle and its hash.
func dashboard() (fs.FS, string) { return nil, "" }
