package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// pruneBatch bounds one delete, so a long-unpruned log never holds the writer
// (and every lane's commit) for long.
const pruneBatch = 2000

// PruneEvents deletes old events of threads that are not working (store.Store).
// What to delete is read on the reader pool; only the deletes take the writer.
// A thread that starts working meanwhile loses nothing it needs: only events
// older than before, a prefix of its log, are deleted.
func (s *Store) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT t.id,
		(SELECT MAX(e.seq) FROM events e WHERE e.thread = t.id AND e.ts < ?),
		(SELECT MIN(e.seq) FROM events e WHERE e.thread = t.id)
		FROM threads t
		WHERE t.turn_message_id = '' AND t.state <> ?
		AND NOT EXISTS (SELECT 1 FROM inputs i WHERE i.thread = t.id AND i.state IN (?, ?))
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.thread = t.id AND c.state = ?)`,
		nanos(before), chat.ThreadWorking, chat.DeliveryQueued, chat.DeliveryDelivering, chat.CardOpen)
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune: %w", err)
	}
	type span struct {
		id             string
		first, through int64
	}
	var todo []span
	for rows.Next() {
		var id string
		var through, first sql.NullInt64
		if err := rows.Scan(&id, &through, &first); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlite: prune: %w", err)
		}
		if through.Valid && first.Valid {
			todo = append(todo, span{id, first.Int64, through.Int64})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: prune: %w", err)
	}
	var total int64
	for _, sp := range todo {
		for from := sp.first; from <= sp.through; from += pruneBatch {
			to := min(from+pruneBatch-1, sp.through)
			res, err := s.w.ExecContext(ctx, `DELETE FROM events WHERE thread = ? AND seq BETWEEN ? AND ?`, sp.id, from, to)
			if err != nil {
				return total, fmt.Errorf("sqlite: prune %s: %w", sp.id, err)
			}
			n, _ := res.RowsAffected()
			total += n
		}
		// A pruned message is no longer found by search (its thread is not
		// working: no answer is being written).
		if err := s.pruneSearch(ctx, chat.ThreadID(sp.id), sp.through); err != nil {
			return total, fmt.Errorf("sqlite: prune %s: %w", sp.id, err)
		}
	}
	return total, nil
}

func (s *Store) pruneSearch(ctx context.Context, thread chat.ThreadID, through int64) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := deleteSearchRows(ctx, tx, thread, ` AND seq BETWEEN 1 AND ?`, through); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_open WHERE thread = ?`, string(thread)); err != nil {
		return err
	}
	return tx.Commit()
}
