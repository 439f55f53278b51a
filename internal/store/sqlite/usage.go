package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

var _ store.UsageLister = (*Store)(nil)

// UsageSince lists the usage events stamped at or after since, oldest first
// (store.UsageLister). The partial index events_usage (0014_usage.sql) keeps
// this from reading every event.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]store.UsageRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT e.thread, t.agent, e.ts, e.payload FROM events e JOIN threads t ON t.id = e.thread
		WHERE e.type = ? AND e.ts >= ? ORDER BY e.ts`, chat.TypeUsage, since.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	defer rows.Close()
	var out []store.UsageRow
	for rows.Next() {
		var (
			r  store.UsageRow
			ts sql.NullInt64
			b  []byte
		)
		if err := rows.Scan(&r.Thread, &r.Agent, &ts, &b); err != nil {
			return nil, fmt.Errorf("sqlite: usage: %w", err)
		}
		if json.Unmarshal(b, &r.Usage) != nil {
			continue
		}
		r.At = fromNanos(ts)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: usage: %w", err)
	}
	return out, nil
}
