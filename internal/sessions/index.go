package sessions

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// schemaVersion is the index file's user_version. Bump it when a parser
// changes what it reads: an index of another version is emptied and rebuilt
// (it is only a cache of the transcripts).
const schemaVersion = 1

// Index lists the sessions of its sources. It is safe for concurrent use:
// its mutex makes one listing read the files at a time, and it alone writes
// its SQLite file.
type Index struct {
	roots   []string
	sources []Source
	log     *slog.Logger

	mu   sync.Mutex
	db   *sql.DB
	rows map[string]row // path → what was read of it (the SQLite table, in memory)
	held Held
	node string
}

// row is one transcript file as last read.
type row struct {
	size  int64
	mtime time.Time
	s     Session
}

// Open opens (creating it when missing) the index file sessions.db in
// dataDir. Only sessions whose cwd is inside one of roots (resolved, as the
// config gives them) are ever listed.
func Open(dataDir string, roots []string, sources ...Source) (*Index, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dataDir, "sessions.db"))
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: url.Values{
		"_pragma": {"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(NORMAL)"},
	}.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("sessions: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	x := &Index{roots: slices.Clone(roots), sources: sources, log: slog.New(slog.DiscardHandler), db: db, rows: map[string]row{}}
	if err := x.load(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("sessions: open %s: %w", path, err)
	}
	return x, nil
}

// SetLogger, SetHeld and SetNode are called once, before the index serves.
func (x *Index) SetLogger(l *slog.Logger) { x.mu.Lock(); x.log = l; x.mu.Unlock() }

// SetHeld gives the index the session ids parley's threads hold.
func (x *Index) SetHeld(h Held) { x.mu.Lock(); x.held = h; x.mu.Unlock() }

// SetNode names this machine as a cluster knows it: Filter.Machine naming
// another machine lists nothing here. (Its sessions' Node stays "": this
// machine's; a hub names a node's.)
func (x *Index) SetNode(name string) { x.mu.Lock(); x.node = name; x.mu.Unlock() }

// Close closes the index file and the sources that hold something open
// (an ACP source's asking in flight).
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var errs []error
	for _, s := range x.sources {
		if c, ok := s.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(append(errs, x.db.Close())...)
}

func (x *Index) load(ctx context.Context) error {
	var v int
	if err := x.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v != schemaVersion {
		if _, err := x.db.ExecContext(ctx, `DROP TABLE IF EXISTS transcripts`); err != nil {
			return err
		}
	}
	if _, err := x.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS transcripts (
		path TEXT PRIMARY KEY, agent TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
		id TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL, updated_at INTEGER NOT NULL, turns INTEGER NOT NULL)`); err != nil {
		return err
	}
	if _, err := x.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
		return err
	}
	rs, err := x.db.QueryContext(ctx, `SELECT path, agent, size, mtime, id, cwd, title, updated_at, turns FROM transcripts`)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var r row
		var mtime, updated int64
		if err := rs.Scan(&r.s.Path, &r.s.Agent, &r.size, &mtime, &r.s.ID, &r.s.Cwd, &r.s.Title, &updated, &r.s.Turns); err != nil {
			return err
		}
		r.mtime, r.s.UpdatedAt = time.Unix(0, mtime), time.Unix(0, updated)
		x.rows[r.s.Path] = r
	}
	return rs.Err()
}

// List lists the sessions inside the roots, newest first. A source that
// fails is logged and left out: it never fails the whole list.
func (x *Index) List(ctx context.Context, f Filter) ([]Session, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if f.Machine != "" && f.Machine != x.node {
		return []Session{}, nil
	}
	var held map[string]bool
	if !f.All && x.held != nil {
		h, err := x.held(ctx)
		if err != nil {
			return nil, fmt.Errorf("sessions: parley's own threads: %w", err)
		}
		held = h
	}
	out := []Session{}
	for _, src := range x.sources {
		if f.Agent != "" && src.Agent() != f.Agent {
			continue
		}
		list, err := x.scan(ctx, src)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sessions: %w", ctx.Err())
			}
			x.log.Warn("sessions: a source could not be listed", "agent", src.Agent(), "err", err)
			continue
		}
		for _, s := range list {
			if !held[s.ID] {
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Session) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Lookup finds one session of agent by its id, read afresh, running or not
// and whether or not a thread holds it; ok is false when there is none
// inside the roots.
func (x *Index) Lookup(ctx context.Context, agent, id string) (Session, bool, error) {
	if agent == "" || id == "" {
		return Session{}, false, errors.New("sessions: lookup needs an agent and a session id")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, src := range x.sources {
		if src.Agent() != agent {
			continue
		}
		list, err := x.scan(ctx, src)
		if err != nil {
			return Session{}, false, fmt.Errorf("sessions: %s: %w", agent, err)
		}
		for _, s := range list {
			if s.ID == id {
				return s, true, nil
			}
		}
	}
	return Session{}, false, nil
}

// scan lists one source's sessions inside the roots, with what runs now.
func (x *Index) scan(ctx context.Context, src Source) ([]Session, error) {
	var list []Session
	switch src := src.(type) {
	case FileSource:
		l, err := x.refresh(ctx, src)
		if err != nil {
			return nil, err
		}
		list = l
	case Lister:
		l, err := src.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range l {
			s.Agent = src.Agent()
			list = append(list, s)
		}
	default:
		return nil, fmt.Errorf("source %T neither reads files nor lists", src)
	}
	if r, ok := src.(Runner); ok {
		live, err := r.Running(ctx)
		if err != nil {
			x.log.Warn("sessions: which sessions run could not be told", "agent", src.Agent(), "err", err)
		}
		for i := range list {
			if l, ok := live[list[i].ID]; ok {
				list[i].Running, list[i].Where, list[i].PID = true, l.Where, l.PID
			}
		}
	}
	roots := rootCheck{roots: x.roots}
	list = slices.DeleteFunc(list, func(s Session) bool { return !roots.inside(s.Cwd) })
	return list, nil
}

// refresh brings the index of src's files up to date, re-reading only files
// whose size or mtime changed, and returns one session per id.
func (x *Index) refresh(ctx context.Context, src FileSource) ([]Session, error) {
	agent := src.Agent()
	type file struct {
		path  string
		size  int64
		mtime time.Time
	}
	var files []file
	err := src.Files(ctx, func(path string, size int64, mtime time.Time) {
		files = append(files, file{path, size, mtime})
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(files))
	var changed []row
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		seen[f.path] = true
		if r, ok := x.rows[f.path]; ok && r.size == f.size && r.mtime.Equal(f.mtime) {
			continue
		}
		s, err := src.Read(f.path)
		if err != nil {
			x.log.Debug("sessions: a transcript could not be read", "path", f.path, "err", err)
			continue
		}
		s.Agent, s.Path, s.Running, s.Where, s.PID, s.Node = agent, f.path, false, "", 0, ""
		if s.UpdatedAt.IsZero() {
			s.UpdatedAt = f.mtime
		}
		r := row{size: f.size, mtime: f.mtime, s: s}
		x.rows[f.path] = r
		changed = append(changed, r)
	}
	var gone []string
	for p, r := range x.rows {
		if r.s.Agent == agent && !seen[p] {
			gone = append(gone, p)
			delete(x.rows, p)
		}
	}
	if err := x.store(ctx, changed, gone); err != nil {
		// The rows in memory are right; the file catches up at the next change.
		x.log.Warn("sessions: the index file could not be written", "err", err)
	}

	// A transcript that did not say its cwd (a foreign file, a torn first
	// line) was made in the same folder as its neighbours that do.
	dirCwd := map[string]string{}
	for _, f := range files {
		if r := x.rows[f.path]; r.s.Cwd != "" {
			dirCwd[filepath.Dir(f.path)] = r.s.Cwd
		}
	}
	// One session per id: Gemini leaves a stub beside a resumed session's
	// file; the one with the most turns, then the newest, is the session.
	byID := map[string]Session{}
	for _, f := range files {
		s, ok := x.rows[f.path]
		if !ok || s.s.ID == "" {
			continue
		}
		if s.s.Cwd == "" {
			s.s.Cwd = dirCwd[filepath.Dir(f.path)]
		}
		if o, ok := byID[s.s.ID]; ok && (o.Turns > s.s.Turns || o.Turns == s.s.Turns && !s.s.UpdatedAt.After(o.UpdatedAt)) {
			continue
		}
		byID[s.s.ID] = s.s
	}
	out := make([]Session, 0, len(byID))
	for _, s := range byID {
		out = append(out, s)
	}
	return out, nil
}

// store writes changed rows and forgets gone paths, in one transaction.
func (x *Index) store(ctx context.Context, changed []row, gone []string) error {
	if len(changed) == 0 && len(gone) == 0 {
		return nil
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	up, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO transcripts (path, agent, size, mtime, id, cwd, title, updated_at, turns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	for _, r := range changed {
		if _, err := up.ExecContext(ctx, r.s.Path, r.s.Agent, r.size, r.mtime.UnixNano(), r.s.ID, r.s.Cwd, r.s.Title, r.s.UpdatedAt.UnixNano(), r.s.Turns); err != nil {
			return err
		}
	}
	for _, p := range gone {
		if _, err := tx.ExecContext(ctx, `DELETE FROM transcripts WHERE path = ?`, p); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// rootCheck tells whether a directory lies inside the roots, as written or
// with its symlinks resolved (the roots are resolved; a transcript keeps the
// path as the agent was given it).
type rootCheck struct {
	roots    []string
	resolved map[string]string
}

func (c *rootCheck) inside(dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	if within(filepath.Clean(dir), c.roots) {
		return true
	}
	if c.resolved == nil {
		c.resolved = map[string]string{}
	}
	real, ok := c.resolved[dir]
	if !ok {
		real, _ = filepath.EvalSymlinks(dir)
		c.resolved[dir] = real
	}
	return real != "" && within(real, c.roots)
}

func within(dir string, roots []string) bool {
	for _, r := range roots {
		rel, err := filepath.Rel(r, dir)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Listing is List as GET /api/sessions answers it on a machine alone.
func (x *Index) Listing(ctx context.Context, f Filter) (Listing, error) {
	l, err := x.List(ctx, f)
	return Listing{Sessions: l}, err
}
