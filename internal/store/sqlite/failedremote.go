package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// PutFailedRemote keeps a message for another machine's thread that failed
// before it reached it, with its search row, in one transaction.
func (s *Store) PutFailedRemote(ctx context.Context, f store.FailedRemote) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: keep a failed message: begin: %w", err)
	}
	defer tx.Rollback()
	if err := dropFailedRemote(ctx, tx, f.From, f.MessageID); err != nil {
		return err
	}
	var row sql.NullInt64
	if text := clipIndexed(f.Text, 0); text != "" {
		r, err := insertSearchRow(ctx, tx, f.Thread, 0, kindUser, text)
		if err != nil {
			return fmt.Errorf("sqlite: keep a failed message: %w", err)
		}
		row = sql.NullInt64{Int64: r, Valid: true}
	}
	at := f.At
	if at.IsZero() {
		at = s.now()
	}
	state := f.State
	if state == "" {
		state = chat.DeliveryFailed
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO remote_failed (channel, chat, message_id, thread, text, reason, failed_at, search_row, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, f.From.Channel, f.From.Chat, f.MessageID, string(f.Thread), f.Text, f.Reason, nanos(at), row, state); err != nil {
		return fmt.Errorf("sqlite: keep a failed message: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: keep a failed message: %w", err)
	}
	return nil
}

// dropFailedRemote deletes a route's failed message and its search row.
func dropFailedRemote(ctx context.Context, tx *sql.Tx, from chat.RouteKey, messageID string) error {
	var row sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT search_row FROM remote_failed WHERE channel = ? AND chat = ? AND message_id = ?`,
		from.Channel, from.Chat, messageID).Scan(&row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: drop a failed message: %w", err)
	}
	if row.Valid {
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_text WHERE rowid = ?`, row.Int64); err != nil {
			return fmt.Errorf("sqlite: drop a failed message: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_rows WHERE row = ?`, row.Int64); err != nil {
			return fmt.Errorf("sqlite: drop a failed message: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM remote_failed WHERE channel = ? AND chat = ? AND message_id = ?`,
		from.Channel, from.Chat, messageID); err != nil {
		return fmt.Errorf("sqlite: drop a failed message: %w", err)
	}
	return nil
}

// DropFailedRemote forgets the route's failed message; none is no error.
func (s *Store) DropFailedRemote(ctx context.Context, from chat.RouteKey, messageID string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: drop a failed message: begin: %w", err)
	}
	defer tx.Rollback()
	if err := dropFailedRemote(ctx, tx, from, messageID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: drop a failed message: %w", err)
	}
	return nil
}

// DropFailedRemotes forgets every failed message of thread, with their
// search rows; none is no error.
func (s *Store) DropFailedRemotes(ctx context.Context, thread chat.ThreadID) error {
	fs, err := s.FailedRemotes(ctx, thread)
	if err != nil || len(fs) == 0 {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: drop the failed messages of %s: begin: %w", thread, err)
	}
	defer tx.Rollback()
	for _, f := range fs {
		if err := dropFailedRemote(ctx, tx, f.From, f.MessageID); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: drop the failed messages of %s: %w", thread, err)
	}
	return nil
}

// FailedRemotes returns a thread's failed messages, oldest first.
func (s *Store) FailedRemotes(ctx context.Context, thread chat.ThreadID) ([]store.FailedRemote, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT channel, chat, message_id, text, reason, failed_at, state FROM remote_failed
		WHERE thread = ? ORDER BY failed_at, rowid`, string(thread))
	if err != nil {
		return nil, fmt.Errorf("sqlite: failed messages of %s: %w", thread, err)
	}
	defer rows.Close()
	var out []store.FailedRemote
	for rows.Next() {
		f := store.FailedRemote{Thread: thread}
		var at sql.NullInt64
		if err := rows.Scan(&f.From.Channel, &f.From.Chat, &f.MessageID, &f.Text, &f.Reason, &at, &f.State); err != nil {
			return nil, fmt.Errorf("sqlite: failed messages of %s: %w", thread, err)
		}
		f.At = fromNanos(at)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: failed messages of %s: %w", thread, err)
	}
	return out, nil
}
