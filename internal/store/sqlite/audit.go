package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

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
// entry's byte slices, which belong to the row read.
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

// scanAudit reads every row, in seq order, through the driver's own rows, on one
// connection: verifying a long trail is mostly reading rows, and
// database/sql's per-column conversions and locks are a cost this one loop
// need not pay. The entry's byte slices are the driver's values for the row
// (fn keeps none of them); its strings are its own.
func scanAudit(ctx context.Context, db *sql.DB, fn func(*audit.Entry) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		qc, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("sqlite: audit: the driver cannot query")
		}
		rows, err := qc.QueryContext(ctx, `SELECT `+auditCols+` FROM audit ORDER BY seq`, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 9)
		var e audit.Entry
		for {
			if err := rows.Next(dest); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := auditRow(dest, &e); err != nil {
				return err
			}
			if err := fn(&e); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return fmt.Errorf("sqlite: audit: %w", err)
	}
	return nil
}

// auditRow reads a row's driver values (auditCols' order) into e.
func auditRow(v []driver.Value, e *audit.Entry) error {
	seq, ok1 := v[0].(int64)
	ts, ok2 := v[1].(int64)
	if !ok1 || !ok2 {
		return fmt.Errorf("audit row: seq %T, ts %T, want integers", v[0], v[1])
	}
	e.Seq, e.TS = seq, time.Unix(0, ts).UTC()
	e.Kind, e.Actor, e.Thread, e.Subject = text(v[2]), text(v[3]), text(v[4]), text(v[5])
	e.Detail, e.PrevHash, e.Hash = bytesOf(v[6]), bytesOf(v[7]), bytesOf(v[8])
	return nil
}

// text is a TEXT (or BLOB) value as a string of its own; NULL is "".
func text(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x // immutable: the driver cannot reuse it
	case []byte:
		return string(x)
	}
	return ""
}

// bytesOf is a BLOB (or TEXT) value's bytes, without a copy; NULL is nil.
func bytesOf(v driver.Value) []byte {
	switch x := v.(type) {
	case []byte:
		return x
	case string:
		return unsafe.Slice(unsafe.StringData(x), len(x))
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
