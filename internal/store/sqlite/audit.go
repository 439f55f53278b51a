package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/audit"
)

// The audit trail's rows (internal/audit owns the chain; the store keeps rows).

const auditCols = `seq, ts, kind, actor, thread, subject, detail, prev_hash, hash`

var _ audit.Store = (*Store)(nil)

// AuditHead is the last entry's seq and hash (zero when the trail is empty).
func (s *Store) AuditHead(ctx context.Context) (audit.Head, error) {
	var h audit.Head
	var hash []byte
	err := s.w.QueryRowContext(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&h.Seq, &hash)
	h.Hash = hash
	if errors.Is(err, sql.ErrNoRows) {
		return audit.Head{}, nil
	}
	if err != nil {
		return audit.Head{}, fmt.Errorf("sqlite: audit head: %w", err)
	}
	return h, nil
}

// AppendAudit adds sealed entries in one transaction, first deleting every
// entry up to pruneThrough when it is not 0 (the entries then hold its
// checkpoint).
func (s *Store) AppendAudit(ctx context.Context, es []audit.Entry, pruneThrough int64) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	defer tx.Rollback()
	if pruneThrough > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE seq <= ?`, pruneThrough); err != nil {
			return fmt.Errorf("sqlite: audit prune: %w", err)
		}
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO audit (`+auditCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	defer st.Close()
	for _, e := range es {
		if _, err := st.ExecContext(ctx, e.Seq, e.TS.UnixNano(), e.Kind, e.Actor, e.Thread, e.Subject, string(e.Detail), blob(e.PrevHash), e.Hash); err != nil {
			return fmt.Errorf("sqlite: audit entry %d: %w", e.Seq, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	return nil
}

// AuditLastBefore is the newest entry older than t.
func (s *Store) AuditLastBefore(ctx context.Context, t time.Time) (audit.Entry, bool, error) {
	es, err := queryAudit(ctx, s.w, `SELECT `+auditCols+` FROM audit WHERE ts < ? ORDER BY seq DESC LIMIT 1`, t.UnixNano())
	if err != nil || len(es) == 0 {
		return audit.Entry{}, false, err
	}
	return es[0], true, nil
}

// Audit lists entries matching f, oldest first.
func (s *Store) Audit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	return listAudit(ctx, s.r, f)
}

// ScanAudit calls fn with every entry in seq order; fn must not keep the
// entry's byte slices, which the next row reuses.
func (s *Store) ScanAudit(ctx context.Context, fn func(*audit.Entry) error) error {
	return scanAudit(ctx, s.r, fn)
}

func listAudit(ctx context.Context, db *sql.DB, f audit.Filter) ([]audit.Entry, error) {
	var where []string
	var args []any
	if !f.Since.IsZero() {
		where, args = append(where, "ts >= ?"), append(args, f.Since.UnixNano())
	}
	if f.Thread != "" {
		where, args = append(where, "thread = ?"), append(args, f.Thread)
	}
	if f.Device != "" {
		where, args = append(where, "actor = ?"), append(args, audit.ActorDevice+f.Device)
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	if f.Before > 0 {
		where, args = append(where, "seq < ?"), append(args, f.Before)
	}
	if f.After > 0 {
		where, args = append(where, "seq > ?"), append(args, f.After)
	}
	q := `SELECT ` + auditCols + ` FROM audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	// The newest limit entries, shown oldest first.
	q = `SELECT * FROM (` + q + ` ORDER BY seq DESC LIMIT ?) ORDER BY seq`
	args = append(args, limit)
	return queryAudit(ctx, db, q, args...)
}

type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func queryAudit(ctx context.Context, db queryer, q string, args ...any) ([]audit.Entry, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: audit: %w", err)
	}
	defer rows.Close()
	var out []audit.Entry
	for rows.Next() {
		var e audit.Entry
		if err := scanAuditRow(rows, &e); err != nil {
			return nil, err
		}
		e.Detail = append([]byte(nil), e.Detail...)
		e.PrevHash = append([]byte(nil), e.PrevHash...)
		e.Hash = append([]byte(nil), e.Hash...)
		if len(e.PrevHash) == 0 {
			e.PrevHash = nil
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: audit: %w", err)
	}
	return out, nil
}

func scanAuditRow(rows *sql.Rows, e *audit.Entry) error {
	var ts int64
	var detail sql.RawBytes
	var prev, hash sql.RawBytes
	if err := rows.Scan(&e.Seq, &ts, &e.Kind, &e.Actor, &e.Thread, &e.Subject, &detail, &prev, &hash); err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	e.TS = time.Unix(0, ts).UTC()
	e.Detail, e.PrevHash, e.Hash = []byte(detail), audit.Hash(prev), audit.Hash(hash)
	return nil
}

func scanAudit(ctx context.Context, db *sql.DB, fn func(*audit.Entry) error) error {
	rows, err := db.QueryContext(ctx, `SELECT `+auditCols+` FROM audit ORDER BY seq`)
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	defer rows.Close()
	var e audit.Entry
	for rows.Next() {
		if err := scanAuditRow(rows, &e); err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	return nil
}

// AuditReader reads a database's audit trail without writing to it (`parley
// audit`, while the daemon may be running).
type AuditReader struct{ db *sql.DB }

// OpenAuditReader opens the database at path read-only.
func OpenAuditReader(ctx context.Context, path string) (*AuditReader, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(abs, url.Values{"mode": {"ro"}, "_busy_timeout": {strconvMillis(busyTimeout)}, "_query_only": {"1"}}))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit'`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", abs, err)
	}
	if n == 0 {
		db.Close()
		return nil, fmt.Errorf("sqlite: %s has no audit trail (a parley older than the audit wrote it, or it is not parley's database)", abs)
	}
	return &AuditReader{db: db}, nil
}

// Audit lists entries matching f, oldest first.
func (a *AuditReader) Audit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	return listAudit(ctx, a.db, f)
}

// ScanAudit calls fn with every entry in seq order (see Store.ScanAudit).
func (a *AuditReader) ScanAudit(ctx context.Context, fn func(*audit.Entry) error) error {
	return scanAudit(ctx, a.db, fn)
}

func (a *AuditReader) Close() error { return a.db.Close() }
