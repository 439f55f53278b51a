package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// putAttach writes a batch's attachment inside its transaction: set, or
// dropped (Kind empty).
func putAttach(ctx context.Context, tx *sql.Tx, a *store.Attachment) error {
	if a == nil {
		return nil
	}
	var err error
	if a.Kind == "" {
		_, err = tx.ExecContext(ctx, `DELETE FROM thread_attach WHERE thread = ?`, string(a.Thread))
	} else {
		_, err = tx.ExecContext(ctx, `INSERT INTO thread_attach (thread, kind, pid, proc_start, server, pane, transcript_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread) DO UPDATE SET kind = excluded.kind, pid = excluded.pid,
				proc_start = excluded.proc_start, server = excluded.server, pane = excluded.pane,
				transcript_at = excluded.transcript_at`,
			string(a.Thread), a.Kind, a.PID, a.ProcStart, a.Server, a.Pane, a.TranscriptAt)
	}
	if err != nil {
		return fmt.Errorf("sqlite: commit: thread %s's attachment: %w", a.Thread, err)
	}
	return nil
}

// Attachments returns every thread's attachment.
func (s *Store) Attachments(ctx context.Context) ([]store.Attachment, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread, kind, pid, proc_start, server, pane, transcript_at FROM thread_attach ORDER BY thread`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: attachments: %w", err)
	}
	defer rows.Close()
	var out []store.Attachment
	for rows.Next() {
		var a store.Attachment
		var id string
		if err := rows.Scan(&id, &a.Kind, &a.PID, &a.ProcStart, &a.Server, &a.Pane, &a.TranscriptAt); err != nil {
			return nil, fmt.Errorf("sqlite: attachments: %w", err)
		}
		a.Thread = chat.ThreadID(id)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: attachments: %w", err)
	}
	return out, nil
}
