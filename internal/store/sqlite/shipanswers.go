package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// shipAnswerAge is how long a ship request's answer is kept: longer than
// any retry of it (a person asking again after a timeout, the hub after a
// restart).
const shipAnswerAge = 7 * 24 * time.Hour

// ShipAnswer is the answer kept for the ship request key (chat.ErrNotFound:
// none, or older than a week).
func (s *Store) ShipAnswer(ctx context.Context, key string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT answer FROM ship_answers WHERE key = ? AND at > ?`,
		key, time.Now().Add(-shipAnswerAge).UnixNano()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: ship answer: %w", chat.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: ship answer: %w", err)
	}
	return b, nil
}

// KeepShipAnswer keeps answer for the ship request key (the first answer
// stays), and forgets those older than a week.
func (s *Store) KeepShipAnswer(ctx context.Context, key string, answer []byte) error {
	now := time.Now()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: keep a ship answer: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM ship_answers WHERE at <= ?`, now.Add(-shipAnswerAge).UnixNano()); err != nil {
		return fmt.Errorf("sqlite: keep a ship answer: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ship_answers (key, answer, at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		key, answer, now.UnixNano()); err != nil {
		return fmt.Errorf("sqlite: keep a ship answer: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: keep a ship answer: %w", err)
	}
	return nil
}
