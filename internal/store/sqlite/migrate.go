package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/chat"
)

// ErrSchemaTooNew is returned by Open for a database whose schema a newer parley
// wrote: this one would not know what its tables mean.
var ErrSchemaTooNew = errors.New("database schema is newer than this parley knows")

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrationSteps are the Go steps a migration needs after its SQL, in the
// same transaction: work the store's own code does (building search rows
// with the code Commit keeps them with).
var migrationSteps = map[int]func(context.Context, *sql.Tx) error{
	5: backfillSearch,
	9: nameAsks,
}

// nameAsks gives each ask an older parley kept (schema 8) its id.
func nameAsks(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT channel, chat FROM route_asks WHERE ask_id = ''`)
	if err != nil {
		return err
	}
	var keys [][2]string
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `UPDATE route_asks SET ask_id = ? WHERE channel = ? AND chat = ?`,
			chat.NewID("ask"), k[0], k[1]); err != nil {
			return err
		}
	}
	return nil
}

// migrations returns the embedded migrations in version order. A file is named
// NNNN_what.sql; versions start at 1 and have no gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("sqlite: migration %s: name is not NNNN_what.sql", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the migrations the database lacks, each in its own transaction
// together with its schema_migrations row. The version is read inside each
// transaction, so two processes opening one file at once apply each step once.
func migrate(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := len(ms)
	for {
		done, err := migrateStep(ctx, db, ms, logger)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	logger.Debug("sqlite: schema up to date", "version", latest)
	return nil
}

// migrateStep applies the next missing migration, or reports that none is missing.
func migrateStep(ctx context.Context, db *sql.DB, ms []migration, logger *slog.Logger) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: begin: %w", err)
	}
	defer tx.Rollback()

	// Created inside the transaction, which holds the write lock from BEGIN:
	// as a statement of its own it read the schema first and then wanted to
	// write, and in WAL mode a writer that came between makes SQLite answer
	// SQLITE_BUSY at once, without waiting (two processes opening one new
	// database failed so).
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at BIGINT  NOT NULL
	)`); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	var cur int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
		return false, fmt.Errorf("sqlite: migrate: read version: %w", err)
	}
	switch {
	case cur > len(ms):
		return false, fmt.Errorf("sqlite: migrate: database is at schema %d, this parley knows up to %d: %w", cur, len(ms), ErrSchemaTooNew)
	case cur == len(ms):
		return true, nil
	}
	m := ms[cur]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %s: %w", m.name, err)
	}
	if step := migrationSteps[m.version]; step != nil {
		if err := step(ctx, tx); err != nil {
			return false, fmt.Errorf("sqlite: migrate: %s: %w", m.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return false, fmt.Errorf("sqlite: migrate: record %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite: migrate: commit %s: %w", m.name, err)
	}
	// At debug: a first start applies them all, and they would stand above
	// the sign-in link, the one line a person needs.
	logger.Debug("sqlite: applied migration", "version", m.version, "name", m.name)
	return false, nil
}
