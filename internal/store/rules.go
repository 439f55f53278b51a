package store

import "time"

// StoredRule is an approval rule a person made (internal/ruleset owns its
// meaning; Rule is internal/rules.Rule as JSON, kept as it came).
type StoredRule struct {
	ID        string
	Rule      []byte
	Created   time.Time
	CreatedBy string
	Since     time.Time // its `for` counts from here
}
