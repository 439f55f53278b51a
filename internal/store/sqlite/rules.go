package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// StoredRules lists the rules a person made, in the order they answer
// (oldest first).
func (s *Store) StoredRules(ctx context.Context) ([]store.StoredRule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, rule, created_at, created_by, since FROM rules ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: rules: %w", err)
	}
	defer rows.Close()
	var out []store.StoredRule
	for rows.Next() {
		var r store.StoredRule
		var rule string
		var created, since int64
		if err := rows.Scan(&r.ID, &rule, &created, &r.CreatedBy, &since); err != nil {
			return nil, fmt.Errorf("sqlite: rules: %w", err)
		}
		r.Rule = []byte(rule)
		r.Created, r.Since = time.Unix(0, created).UTC(), time.Unix(0, since).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: rules: %w", err)
	}
	return out, nil
}

// PutRule keeps a rule, new or changed (its place in the order, created_at,
// stays what it was made with).
func (s *Store) PutRule(ctx context.Context, r store.StoredRule) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO rules (id, rule, created_at, created_by, since) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET rule = excluded.rule, since = excluded.since`,
		r.ID, string(r.Rule), r.Created.UnixNano(), r.CreatedBy, r.Since.UnixNano())
	if err != nil {
		return fmt.Errorf("sqlite: keep rule %s: %w", r.ID, err)
	}
	return nil
}

// DeleteRule deletes a rule; one not kept is chat.ErrNotFound.
func (s *Store) DeleteRule(ctx context.Context, id string) error {
	return deleteByID(ctx, s.w, "rules", "rule", id)
}
