package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

var _ store.PushStore = (*Store)(nil)

// PushSubscribe keeps a subscription; an endpoint seen before moves to the
// device that sent it now.
func (s *Store) PushSubscribe(ctx context.Context, sub store.PushSubscription) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO push_subscriptions (endpoint, device, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (endpoint) DO UPDATE SET device = excluded.device, p256dh = excluded.p256dh, auth = excluded.auth`,
		sub.Endpoint, sub.Device, sub.P256dh, sub.Auth, s.now().UnixNano())
	if err != nil {
		return fmt.Errorf("sqlite: push subscribe: %w", err)
	}
	return nil
}

// PushSubscriptions lists every subscription.
func (s *Store) PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT endpoint, device, p256dh, auth, created_at FROM push_subscriptions ORDER BY created_at, endpoint`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: push subscriptions: %w", err)
	}
	defer rows.Close()
	var out []store.PushSubscription
	for rows.Next() {
		var p store.PushSubscription
		var created int64
		if err := rows.Scan(&p.Endpoint, &p.Device, &p.P256dh, &p.Auth, &created); err != nil {
			return nil, fmt.Errorf("sqlite: push subscriptions: %w", err)
		}
		p.Created = time.Unix(0, created)
		out = append(out, p)
	}
	return out, rows.Err()
}

// PushForget drops a device's subscriptions, or one endpoint's.
func (s *Store) PushForget(ctx context.Context, device, endpoint string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: push forget: %w", err)
	}
	defer tx.Rollback()
	var eps []string
	if endpoint != "" {
		eps = []string{endpoint}
	} else {
		rows, err := tx.QueryContext(ctx, `SELECT endpoint FROM push_subscriptions WHERE device = ?`, device)
		if err != nil {
			return fmt.Errorf("sqlite: push forget: %w", err)
		}
		for rows.Next() {
			var e string
			if err := rows.Scan(&e); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: push forget: %w", err)
			}
			eps = append(eps, e)
		}
		rows.Close()
		if _, err := tx.ExecContext(ctx, `DELETE FROM push_prefs WHERE device = ?`, device); err != nil {
			return fmt.Errorf("sqlite: push forget: %w", err)
		}
	}
	for _, e := range eps {
		if _, err := tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE endpoint = ?`, e); err != nil {
			return fmt.Errorf("sqlite: push forget: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE push_outbox SET state = ? WHERE endpoint = ? AND state = ?`, store.PushDropped, e, store.PushPending); err != nil {
			return fmt.Errorf("sqlite: push forget: %w", err)
		}
	}
	return tx.Commit()
}

// PushEnqueue inserts the items whose (endpoint, thread, request id, kind) is new.
func (s *Store) PushEnqueue(ctx context.Context, items []store.PushItem) (int, error) {
	if len(items) == 0 {
		return 0, nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: push enqueue: %w", err)
	}
	defer tx.Rollback()
	n := 0
	now := s.now().UnixNano()
	for _, it := range items {
		// A pending push for an endpoint without a subscription (its device
		// went after the open push) can never leave: it is queued as dropped.
		res, err := tx.ExecContext(ctx, `INSERT INTO push_outbox (endpoint, thread, request_id, kind, payload, state, attempts, next_at, created_at)
			VALUES (?, ?, ?, ?, ?, CASE WHEN ? = ? AND NOT EXISTS (SELECT 1 FROM push_subscriptions WHERE endpoint = ?) THEN ? ELSE ? END, 0, ?, ?)
			ON CONFLICT DO NOTHING`,
			it.Endpoint, string(it.Thread), it.RequestID, it.Kind, it.Payload,
			it.State, store.PushPending, it.Endpoint, store.PushDropped, it.State, it.NextAt.UnixNano(), now)
		if err != nil {
			return 0, fmt.Errorf("sqlite: push enqueue: %w", err)
		}
		if k, _ := res.RowsAffected(); k > 0 {
			n++
		}
	}
	return n, tx.Commit()
}

const pushCols = `o.id, o.endpoint, o.thread, o.request_id, o.kind, o.payload, o.state, o.attempts, o.next_at`

func scanPush(sc interface{ Scan(...any) error }, more ...any) (store.PushItem, error) {
	var it store.PushItem
	var th string
	var next int64
	err := sc.Scan(append([]any{&it.ID, &it.Endpoint, &th, &it.RequestID, &it.Kind, &it.Payload, &it.State, &it.Attempts, &next}, more...)...)
	it.Thread, it.NextAt = chat.ThreadID(th), time.Unix(0, next)
	return it, err
}

// PushOpened lists a thread's open pushes without a closing push.
func (s *Store) PushOpened(ctx context.Context, thread chat.ThreadID) ([]store.PushItem, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+pushCols+` FROM push_outbox o WHERE o.thread = ? AND o.kind = ?
		AND NOT EXISTS (SELECT 1 FROM push_outbox c WHERE c.endpoint = o.endpoint AND c.thread = o.thread AND c.request_id = o.request_id AND c.kind = ?)
		ORDER BY o.id`, string(thread), store.PushOpen, store.PushClose)
	if err != nil {
		return nil, fmt.Errorf("sqlite: push opened: %w", err)
	}
	defer rows.Close()
	var out []store.PushItem
	for rows.Next() {
		it, err := scanPush(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: push opened: %w", err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// PushUnclosedThreads lists the threads with open pushes and no closing one.
func (s *Store) PushUnclosedThreads(ctx context.Context) ([]chat.ThreadID, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT o.thread FROM push_outbox o WHERE o.kind = ?
		AND NOT EXISTS (SELECT 1 FROM push_outbox c WHERE c.endpoint = o.endpoint AND c.thread = o.thread AND c.request_id = o.request_id AND c.kind = ?)`,
		store.PushOpen, store.PushClose)
	if err != nil {
		return nil, fmt.Errorf("sqlite: push threads: %w", err)
	}
	defer rows.Close()
	var out []chat.ThreadID
	for rows.Next() {
		var th string
		if err := rows.Scan(&th); err != nil {
			return nil, fmt.Errorf("sqlite: push threads: %w", err)
		}
		out = append(out, chat.ThreadID(th))
	}
	return out, rows.Err()
}

// PushDue lists pending pushes due at now, with their subscriptions.
func (s *Store) PushDue(ctx context.Context, now time.Time, limit int) ([]store.PushItem, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+pushCols+`, s.device, s.p256dh, s.auth FROM push_outbox o
		JOIN push_subscriptions s ON s.endpoint = o.endpoint
		WHERE o.state = ? AND o.next_at <= ? ORDER BY o.next_at, o.id LIMIT ?`, store.PushPending, now.UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: push due: %w", err)
	}
	defer rows.Close()
	var out []store.PushItem
	for rows.Next() {
		var dev, p256, auth string
		it, err := scanPush(rows, &dev, &p256, &auth)
		if err != nil {
			return nil, fmt.Errorf("sqlite: push due: %w", err)
		}
		it.Sub = store.PushSubscription{Endpoint: it.Endpoint, Device: dev, P256dh: p256, Auth: auth}
		out = append(out, it)
	}
	return out, rows.Err()
}

// PushNextDue is when the next pending push is due (zero when none is).
func (s *Store) PushNextDue(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	// Joined like PushDue: a push it would never return must not wake the sender.
	err := s.r.QueryRowContext(ctx, `SELECT MIN(o.next_at) FROM push_outbox o
		JOIN push_subscriptions s ON s.endpoint = o.endpoint WHERE o.state = ?`, store.PushPending).Scan(&next)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("sqlite: push next: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return time.Unix(0, next.Int64), nil
}

// PushMark sets a push's state, attempts and next try.
func (s *Store) PushMark(ctx context.Context, id int64, state string, attempts int, next time.Time) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE push_outbox SET state = ?, attempts = ?, next_at = ? WHERE id = ?`,
		state, attempts, next.UnixNano(), id); err != nil {
		return fmt.Errorf("sqlite: push mark: %w", err)
	}
	return nil
}

// PushPrefs lists the devices' optional pushes.
func (s *Store) PushPrefs(ctx context.Context) ([]store.PushPrefs, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT device, turns_since, errors_since, notices_since FROM push_prefs ORDER BY device`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: push prefs: %w", err)
	}
	defer rows.Close()
	var out []store.PushPrefs
	for rows.Next() {
		var p store.PushPrefs
		var turns, errs, notices int64
		if err := rows.Scan(&p.Device, &turns, &errs, &notices); err != nil {
			return nil, fmt.Errorf("sqlite: push prefs: %w", err)
		}
		p.Turns, p.Errors, p.Notices = since(turns), since(errs), since(notices)
		out = append(out, p)
	}
	return out, rows.Err()
}

// PushSetPrefs turns a device's optional pushes on or off in one statement:
// each column it is not given keeps its value, so two screens changing one
// each at once both count; one turned on keeps its time if it was on.
func (s *Store) PushSetPrefs(ctx context.Context, c store.PushPrefsChange) error {
	at := c.At.UnixNano()
	if _, err := s.w.ExecContext(ctx, `INSERT INTO push_prefs (device, turns_since, errors_since, notices_since)
		VALUES (?1, CASE WHEN ?2 = 1 THEN ?4 ELSE 0 END, CASE WHEN ?3 = 1 THEN ?4 ELSE 0 END, CASE WHEN ?5 = 1 THEN ?4 ELSE 0 END)
		ON CONFLICT (device) DO UPDATE SET
			turns_since = CASE WHEN ?2 IS NULL THEN turns_since WHEN ?2 = 0 THEN 0 WHEN turns_since = 0 THEN ?4 ELSE turns_since END,
			errors_since = CASE WHEN ?3 IS NULL THEN errors_since WHEN ?3 = 0 THEN 0 WHEN errors_since = 0 THEN ?4 ELSE errors_since END,
			notices_since = CASE WHEN ?5 IS NULL THEN notices_since WHEN ?5 = 0 THEN 0 WHEN notices_since = 0 THEN ?4 ELSE notices_since END`,
		c.Device, optBool(c.Turns), optBool(c.Errors), at, optBool(c.Notices)); err != nil {
		return fmt.Errorf("sqlite: push prefs: %w", err)
	}
	return nil
}

// optBool is a nullable boolean parameter: NULL, 0 or 1.
func optBool(b *bool) any {
	switch {
	case b == nil:
		return nil
	case *b:
		return 1
	}
	return 0
}

// since maps a preference's column to its time: 0 is the zero time (off).
func since(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
