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

const scheduleCols = `id, name, agent, cwd, thread, new_each, kind, expr, tz, missed, text, paused,
	next_run, last_run, last_thread, last_error, created_at`

// Schedules lists every schedule, oldest first.
func (s *Store) Schedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: schedules: %w", err)
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var sc store.Schedule
		var thread, lastThread string
		var newEach, paused int64
		var next, last, created sql.NullInt64
		if err := rows.Scan(&sc.ID, &sc.Name, &sc.Agent, &sc.Cwd, &thread, &newEach, &sc.Kind, &sc.Expr, &sc.TZ,
			&sc.Missed, &sc.Text, &paused, &next, &last, &lastThread, &sc.LastError, &created); err != nil {
			return nil, fmt.Errorf("sqlite: schedules: %w", err)
		}
		sc.Thread, sc.LastThread = chat.ThreadID(thread), chat.ThreadID(lastThread)
		sc.NewEach, sc.Paused = newEach != 0, paused != 0
		sc.NextRun, sc.LastRun, sc.Created = fromNanos(next), fromNanos(last), fromNanos(created)
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: schedules: %w", err)
	}
	return out, nil
}

// PutSchedule keeps a schedule, new or changed.
func (s *Store) PutSchedule(ctx context.Context, sc store.Schedule) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO schedules (`+scheduleCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, agent = excluded.agent, cwd = excluded.cwd,
			thread = excluded.thread, new_each = excluded.new_each, kind = excluded.kind, expr = excluded.expr,
			tz = excluded.tz, missed = excluded.missed, text = excluded.text, paused = excluded.paused,
			next_run = excluded.next_run, last_run = excluded.last_run, last_thread = excluded.last_thread,
			last_error = excluded.last_error, created_at = excluded.created_at`,
		sc.ID, sc.Name, sc.Agent, sc.Cwd, string(sc.Thread), boolInt(sc.NewEach), sc.Kind, sc.Expr, sc.TZ,
		sc.Missed, sc.Text, boolInt(sc.Paused), nanos(sc.NextRun), nanos(sc.LastRun), string(sc.LastThread),
		sc.LastError, nanos(sc.Created))
	if err != nil {
		return fmt.Errorf("sqlite: keep schedule %s: %w", sc.ID, err)
	}
	return nil
}

// DeleteSchedule deletes a schedule; one not kept is chat.ErrNotFound.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	return deleteByID(ctx, s.w, "schedules", "schedule", id)
}

const triggerCols = `id, name, agent, cwd, thread, new_each, template, secret, last_run, last_thread, last_error, created_at`

func scanTrigger(sc interface{ Scan(...any) error }) (store.Trigger, error) {
	var t store.Trigger
	var thread, lastThread string
	var newEach int64
	var last, created sql.NullInt64
	err := sc.Scan(&t.ID, &t.Name, &t.Agent, &t.Cwd, &thread, &newEach, &t.Template, &t.Secret, &last, &lastThread, &t.LastError, &created)
	t.Thread, t.LastThread, t.NewEach = chat.ThreadID(thread), chat.ThreadID(lastThread), newEach != 0
	t.LastRun, t.Created = fromNanos(last), fromNanos(created)
	return t, err
}

// Triggers lists every trigger, oldest first.
func (s *Store) Triggers(ctx context.Context) ([]store.Trigger, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+triggerCols+` FROM triggers ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: triggers: %w", err)
	}
	defer rows.Close()
	var out []store.Trigger
	for rows.Next() {
		t, err := scanTrigger(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: triggers: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: triggers: %w", err)
	}
	return out, nil
}

// Trigger reads one trigger; one not kept is chat.ErrNotFound.
func (s *Store) Trigger(ctx context.Context, id string) (store.Trigger, error) {
	t, err := scanTrigger(s.r.QueryRowContext(ctx, `SELECT `+triggerCols+` FROM triggers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Trigger{}, fmt.Errorf("trigger %s: %w", id, chat.ErrNotFound)
	}
	if err != nil {
		return store.Trigger{}, fmt.Errorf("sqlite: trigger %s: %w", id, err)
	}
	return t, nil
}

// PutTrigger keeps a trigger, new or changed.
func (s *Store) PutTrigger(ctx context.Context, t store.Trigger) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO triggers (`+triggerCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, agent = excluded.agent, cwd = excluded.cwd,
			thread = excluded.thread, new_each = excluded.new_each, template = excluded.template,
			secret = excluded.secret, last_run = excluded.last_run, last_thread = excluded.last_thread,
			last_error = excluded.last_error, created_at = excluded.created_at`,
		t.ID, t.Name, t.Agent, t.Cwd, string(t.Thread), boolInt(t.NewEach), t.Template, t.Secret,
		nanos(t.LastRun), string(t.LastThread), t.LastError, nanos(t.Created))
	if err != nil {
		return fmt.Errorf("sqlite: keep trigger %s: %w", t.ID, err)
	}
	return nil
}

// DeleteTrigger deletes a trigger; one not kept is chat.ErrNotFound.
func (s *Store) DeleteTrigger(ctx context.Context, id string) error {
	return deleteByID(ctx, s.w, "triggers", "trigger", id)
}

// deleteByID deletes one row of a table keyed by id (a constant of this file).
func deleteByID(ctx context.Context, w *sql.DB, table, what, id string) error {
	res, err := w.ExecContext(ctx, `DELETE FROM `+table+` WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("sqlite: delete %s %s: %w", what, id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s %s: %w", what, id, chat.ErrNotFound)
	}
	return nil
}

// TriggerRan records a trigger's last run; a trigger deleted meanwhile stays
// deleted.
func (s *Store) TriggerRan(ctx context.Context, id string, at time.Time, thread chat.ThreadID, lastErr string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE triggers SET last_run = ?, last_thread = CASE WHEN ? = '' THEN last_thread ELSE ? END,
		last_error = ? WHERE id = ?`, nanos(at), string(thread), string(thread), lastErr, id); err != nil {
		return fmt.Errorf("sqlite: trigger %s ran: %w", id, err)
	}
	return nil
}
