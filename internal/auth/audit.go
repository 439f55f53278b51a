package auth

import (
	"encoding/json"

	"github.com/parleyhq/parley/internal/audit"
)

// SetAudit has sign-ins, pairings, sign-outs and revocations recorded in the
// audit trail: Devices is where each of them happens, whatever asked.
func (s *Devices) SetAudit(l audit.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audit = l
}

// recordLocked records what happened to d; by is who did it ("" for the
// device itself).
func (s *Devices) recordLocked(kind string, d *Device, by, subject string) {
	if s.audit == nil {
		return
	}
	if by == "" {
		by = audit.ActorDevice + d.ID
	}
	detail, _ := json.Marshal(map[string]string{"device": d.ID, "name": d.Name, "kind": d.Kind})
	s.audit.Record(audit.Entry{TS: s.now(), Kind: kind, Actor: by, Subject: subject, Detail: detail})
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
