package config

import "time"

// Audit is [audit]: the audit trail (internal/audit).
type Audit struct {
	// Keep is how long entries are kept; older ones are pruned, leaving a
	// checkpoint entry so the chain stays verifiable.
	Keep Duration `toml:"keep"`
}

// DefaultAuditKeep is how long the audit trail is kept unless [audit] keep says.
const DefaultAuditKeep = 90 * 24 * time.Hour

// AuditKeepRange is [audit] keep's range: a day to ten years.
var AuditKeepRange = DurationRange{Min: 24 * time.Hour, Max: 3650 * 24 * time.Hour}

func (a *Audit) check() []error {
	if err := AuditKeepRange.check("audit.keep", a.Keep.Duration); err != nil {
		return []error{err}
	}
	return nil
}
