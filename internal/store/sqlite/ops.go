package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// unavailable marks err with store.ErrUnavailable when SQLite may succeed
// when tried again: the disk full or failing (FULL, IOERR: a file that may
// not grow fails with EFBIG, reported as an I/O error), a lock held past
// the busy timeout (BUSY, LOCKED), memory short (NOMEM), a deadline. A
// refused row (CONSTRAINT) or a bad batch fails the same way every time.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM:
			return fmt.Errorf("%w (%w)", err, store.ErrUnavailable)
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", err, store.ErrUnavailable)
	}
	return err
}

// Commit writes the batch in one transaction on the writer connection: the thread
// first (so a new thread's rows satisfy their foreign keys), then events, cards and
// inputs. A seq already used, or a row naming a thread that does not exist, fails
// the whole batch and writes nothing.
func (s *Store) Commit(ctx context.Context, b store.Batch) error {
	return unavailable(s.commit(ctx, b))
}

func (s *Store) commit(ctx context.Context, b store.Batch) error {
	if b.Empty() {
		return nil
	}
	if err := validate(b); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: commit: begin: %w", err)
	}
	defer tx.Rollback()
	// ctx bounds BEGIN (the lock) and the commit; the statements between run
	// without its deadline (insertEvents says why).
	ctx = context.WithoutCancel(ctx)

	if t := b.Thread; t != nil {
		if _, err := tx.StmtContext(ctx, s.upThread).ExecContext(ctx,
			string(t.ID), t.Agent, t.Cwd, t.SessionID, t.Title, t.State, t.Mode,
			nanos(t.CreatedAt), nanos(t.UpdatedAt), t.LastSeq, t.TurnMessageID, boolInt(t.Archived), t.GitBase, t.Worktree, t.Model); err != nil {
			return fmt.Errorf("sqlite: commit: thread %s: %w", t.ID, err)
		}
	}
	if b.Ask != "" {
		if _, err := tx.ExecContext(ctx, `INSERT INTO thread_asks (ask_id, thread) VALUES (?, ?)`, b.Ask, string(b.Thread.ID)); err != nil {
			return fmt.Errorf("sqlite: commit: thread %s asked as %s: %w", b.Thread.ID, b.Ask, err)
		}
	}
	if err := s.insertEvents(ctx, tx, b.Events); err != nil {
		return err
	}
	if err := putAttach(ctx, tx, b.Attach); err != nil {
		return err
	}
	if len(b.Cards) > 0 {
		st := tx.StmtContext(ctx, s.upCard)
		for _, c := range b.Cards {
			if _, err := st.ExecContext(ctx, string(c.ThreadID), c.RequestID, c.Kind, c.State,
				blob(c.Request), blob(c.Resolution), c.TurnMessageID,
				nanos(c.CreatedAt), nanos(c.ResolvedAt)); err != nil {
				return fmt.Errorf("sqlite: commit: card %s/%s: %w", c.ThreadID, c.RequestID, err)
			}
		}
	}
	if len(b.Inputs) > 0 {
		// The writer is one connection, so MAX(ord)+1 inside its transaction is race-free.
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(ord), 0) FROM inputs`).Scan(&last); err != nil {
			return fmt.Errorf("sqlite: commit: input order: %w", err)
		}
		st := tx.StmtContext(ctx, s.upInput)
		for i, in := range b.Inputs {
			if _, err := st.ExecContext(ctx, in.MessageID, last+int64(i)+1, string(in.ThreadID),
				in.From.Channel, in.From.Chat, in.Text, in.State, in.Detail, nanos(in.AcceptedAt)); err != nil {
				return fmt.Errorf("sqlite: commit: input %s from %s: %w", in.MessageID, in.From, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	s.markIndex(b)
	s.markCheckpoint()
	return nil
}

// markCheckpoint tells the checkpointer the WAL grew.
func (s *Store) markCheckpoint() {
	if s.ckpt != nil {
		s.ckpt.committed()
	}
}

// markIndex tells the indexer which threads a commit wrote: their new events
// and titles are indexed after it (indexer.go).
func (s *Store) markIndex(b store.Batch) {
	if s.idx == nil || (b.Thread == nil && len(b.Events) == 0) {
		return
	}
	var ths []chat.ThreadID
	if b.Thread != nil {
		ths = append(ths, b.Thread.ID)
	}
	for _, e := range b.Events {
		if len(ths) == 0 || ths[len(ths)-1] != e.Thread {
			ths = append(ths, e.Thread)
		}
	}
	s.idx.mark(ths...)
}

// eventRows is how many events one INSERT writes (5 parameters each; SQLite
// allows 32,766). A burst of streamed chunks is written in a few statements
// instead of one per event: each statement costs database/sql's and the
// driver's bookkeeping, more than the row itself.
const eventRows = 64

// insertEvents writes events in statements of eventRows rows, the rest one by
// one. The statements run without ctx's deadline: the driver would start a
// goroutine per statement to watch it, and inside the transaction, which holds
// the write lock from BEGIN, a statement waits for nobody. ctx bounds BEGIN
// (the lock) and the commit.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, evs []chat.Event) error {
	if len(evs) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if len(evs) >= eventRows {
		st := tx.StmtContext(ctx, s.insEvents)
		args := make([]any, 0, 5*eventRows)
		for len(evs) >= eventRows {
			args = args[:0]
			for _, e := range evs[:eventRows] {
				args = append(args, string(e.Thread), e.Seq, e.Type, nanos(e.TS), blob(e.Payload))
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				return fmt.Errorf("sqlite: commit: events %s seq %d–%d: %w", evs[0].Thread, evs[0].Seq, evs[eventRows-1].Seq, err)
			}
			evs = evs[eventRows:]
		}
	}
	if len(evs) > 0 {
		st := tx.StmtContext(ctx, s.insEvent)
		for _, e := range evs {
			if _, err := st.ExecContext(ctx, string(e.Thread), e.Seq, e.Type, nanos(e.TS), blob(e.Payload)); err != nil {
				return fmt.Errorf("sqlite: commit: event %s seq %d: %w", e.Thread, e.Seq, err)
			}
		}
	}
	return nil
}

// validate refuses rows without their keys before a transaction is opened.
func validate(b store.Batch) error {
	if b.Thread != nil && b.Thread.ID == "" {
		return fmt.Errorf("sqlite: commit: thread without id: %w", chat.ErrBadInput)
	}
	if a := b.Attach; a != nil && (a.Thread == "" || a.Kind != "" && a.PID <= 0) {
		return fmt.Errorf("sqlite: commit: an attachment needs a thread and, when set, a pid: %w", chat.ErrBadInput)
	}
	if b.Ask != "" && b.Thread == nil {
		return fmt.Errorf("sqlite: commit: an ask without its thread: %w", chat.ErrBadInput)
	}
	for _, e := range b.Events {
		if e.Thread == "" || e.Seq <= 0 || e.Type == "" {
			return fmt.Errorf("sqlite: commit: event needs a thread, a seq > 0 and a type (got %q, %d, %q): %w",
				e.Thread, e.Seq, e.Type, chat.ErrBadInput)
		}
	}
	for _, c := range b.Cards {
		if c.ThreadID == "" || c.RequestID == "" {
			return fmt.Errorf("sqlite: commit: card needs a thread and a request id: %w", chat.ErrBadInput)
		}
	}
	for _, in := range b.Inputs {
		if in.MessageID == "" || in.ThreadID == "" {
			return fmt.Errorf("sqlite: commit: input needs a message id and a thread: %w", chat.ErrBadInput)
		}
	}
	return nil
}

const threadCols = `id, agent, cwd, session_id, title, state, mode, created_at, updated_at, last_seq, turn_message_id, archived, git_base, worktree, model`

func scanThread(sc interface{ Scan(...any) error }) (chat.Thread, error) {
	var t chat.Thread
	var id string
	var created, updated sql.NullInt64
	var archived int64
	err := sc.Scan(&id, &t.Agent, &t.Cwd, &t.SessionID, &t.Title, &t.State, &t.Mode,
		&created, &updated, &t.LastSeq, &t.TurnMessageID, &archived, &t.GitBase, &t.Worktree, &t.Model)
	t.ID, t.Archived = chat.ThreadID(id), archived != 0
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	return t, err
}

// Thread returns one thread, or an error wrapping chat.ErrNotFound.
func (s *Store) Thread(ctx context.Context, id chat.ThreadID) (chat.Thread, error) {
	t, err := scanThread(s.r.QueryRowContext(ctx, `SELECT `+threadCols+` FROM threads WHERE id = ?`, string(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return chat.Thread{}, fmt.Errorf("sqlite: thread %s: %w", id, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Thread{}, fmt.Errorf("sqlite: thread %s: %w", id, err)
	}
	return t, nil
}

// Threads returns every thread, newest activity (UpdatedAt) first, ties by id.
func (s *Store) Threads(ctx context.Context) ([]chat.Thread, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+threadCols+` FROM threads
		ORDER BY COALESCE(updated_at, 0) DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: threads: %w", err)
	}
	defer rows.Close()
	var ts []chat.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: threads: %w", err)
		}
		ts = append(ts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: threads: %w", err)
	}
	return ts, nil
}

// Route returns a route's attachment, or an error wrapping chat.ErrNotFound.
func (s *Store) Route(ctx context.Context, key chat.RouteKey) (chat.Route, error) {
	var thread string
	var updated sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT thread, updated_at FROM routes WHERE channel = ? AND chat = ?
		UNION ALL SELECT thread, updated_at FROM remote_routes WHERE channel = ? AND chat = ?`,
		key.Channel, key.Chat, key.Channel, key.Chat).Scan(&thread, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return chat.Route{}, fmt.Errorf("sqlite: route %s: %w", key, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Route{}, fmt.Errorf("sqlite: route %s: %w", key, err)
	}
	return chat.Route{Key: key, ThreadID: chat.ThreadID(thread), UpdatedAt: fromNanos(updated)}, nil
}

// AttachRoute attaches a route to a thread, creating the route when new. The thread
// must exist: attaching to an unknown one returns an error wrapping chat.ErrNotFound.
func (s *Store) AttachRoute(ctx context.Context, key chat.RouteKey, thread chat.ThreadID) error {
	return s.attachRoute(ctx, key, thread, "routes", "remote_routes", true)
}

// AttachRemoteRoute attaches a route to a thread another machine owns.
func (s *Store) AttachRemoteRoute(ctx context.Context, key chat.RouteKey, thread chat.ThreadID) error {
	return s.attachRoute(ctx, key, thread, "remote_routes", "routes", false)
}

// DetachRemoteRoutes removes every route attached to a thread another
// machine owns.
func (s *Store) DetachRemoteRoutes(ctx context.Context, thread chat.ThreadID) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM remote_routes WHERE thread = ?`, string(thread)); err != nil {
		return fmt.Errorf("sqlite: detach the routes of %s: %w", thread, err)
	}
	return nil
}

// attachRoute writes key's route into table and takes it out of other (a
// route is in one of the two), in one transaction; local checks the thread.
func (s *Store) attachRoute(ctx context.Context, key chat.RouteKey, thread chat.ThreadID, table, other string, local bool) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: attach route %s: begin: %w", key, err)
	}
	defer tx.Rollback()
	if local {
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, string(thread)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: attach route %s: thread %s: %w", key, thread, chat.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("sqlite: attach route %s: %w", key, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+other+` WHERE channel = ? AND chat = ?`, key.Channel, key.Chat); err != nil {
		return fmt.Errorf("sqlite: attach route %s: %w", key, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (channel, chat, thread, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (channel, chat) DO UPDATE SET thread = excluded.thread, updated_at = excluded.updated_at`,
		key.Channel, key.Chat, string(thread), nanos(s.now())); err != nil {
		return fmt.Errorf("sqlite: attach route %s: %w", key, err)
	}
	// The route shows a thread now: an ask for a new one elsewhere is done.
	if _, err := tx.ExecContext(ctx, `DELETE FROM route_asks WHERE channel = ? AND chat = ?`, key.Channel, key.Chat); err != nil {
		return fmt.Errorf("sqlite: attach route %s: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: attach route %s: %w", key, err)
	}
	return nil
}

// SetRouteAsk keeps a route's ask for a new thread on another machine.
func (s *Store) SetRouteAsk(ctx context.Context, a store.RouteAsk) error {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO route_asks (channel, chat, agent, cwd, node, ask_id) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (channel, chat) DO UPDATE SET agent = excluded.agent, cwd = excluded.cwd, node = excluded.node, ask_id = excluded.ask_id`,
		a.Key.Channel, a.Key.Chat, a.Agent, a.Cwd, a.Node, a.AskID); err != nil {
		return fmt.Errorf("sqlite: keep the ask of route %s: %w", a.Key, err)
	}
	return nil
}

// DropRouteAsk drops a route's ask, if it has one.
func (s *Store) DropRouteAsk(ctx context.Context, key chat.RouteKey) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM route_asks WHERE channel = ? AND chat = ?`, key.Channel, key.Chat); err != nil {
		return fmt.Errorf("sqlite: drop the ask of route %s: %w", key, err)
	}
	return nil
}

// RouteAsks returns every route's ask, ordered by channel and chat.
func (s *Store) RouteAsks(ctx context.Context) ([]store.RouteAsk, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT channel, chat, agent, cwd, node, ask_id FROM route_asks ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: route asks: %w", err)
	}
	defer rows.Close()
	var as []store.RouteAsk
	for rows.Next() {
		var a store.RouteAsk
		if err := rows.Scan(&a.Key.Channel, &a.Key.Chat, &a.Agent, &a.Cwd, &a.Node, &a.AskID); err != nil {
			return nil, fmt.Errorf("sqlite: route asks: %w", err)
		}
		as = append(as, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: route asks: %w", err)
	}
	return as, nil
}

// AskThread returns the thread made for an ask id, if it is still there.
func (s *Store) AskThread(ctx context.Context, askID string) (chat.ThreadID, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT a.thread FROM thread_asks a JOIN threads t ON t.id = a.thread WHERE a.ask_id = ?`, askID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("sqlite: the thread of ask %s: %w", askID, chat.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("sqlite: the thread of ask %s: %w", askID, err)
	}
	return chat.ThreadID(id), nil
}

// Routes returns every route, local and remote, ordered by channel and chat.
func (s *Store) Routes(ctx context.Context) ([]chat.Route, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT channel, chat, thread, updated_at FROM routes
		UNION ALL SELECT channel, chat, thread, updated_at FROM remote_routes ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: routes: %w", err)
	}
	defer rows.Close()
	var rs []chat.Route
	for rows.Next() {
		var r chat.Route
		var thread string
		var updated sql.NullInt64
		if err := rows.Scan(&r.Key.Channel, &r.Key.Chat, &thread, &updated); err != nil {
			return nil, fmt.Errorf("sqlite: routes: %w", err)
		}
		r.ThreadID, r.UpdatedAt = chat.ThreadID(thread), fromNanos(updated)
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: routes: %w", err)
	}
	return rs, nil
}

// Events returns up to limit events of a thread with seq > since, in seq order;
// limit <= 0 means all of them. An unknown thread has no events (no error).
func (s *Store) Events(ctx context.Context, thread chat.ThreadID, since int64, limit int) ([]chat.Event, error) {
	q := `SELECT seq, type, ts, payload FROM events WHERE thread = ? AND seq > ? ORDER BY seq`
	args := []any{string(thread), since}
	hint := 64
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
		hint = min(limit, 1024)
	}
	evs, err := s.queryEvents(ctx, thread, hint, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: events %s since %d: %w", thread, since, err)
	}
	return evs, nil
}

// Usage sums a thread's usage events (a thread's own rows, in seq order: the
// newest context fill wins).
func (s *Store) Usage(ctx context.Context, thread chat.ThreadID) (chat.UsageTotals, error) {
	var t chat.UsageTotals
	rows, err := s.r.QueryContext(ctx, `SELECT payload FROM events WHERE thread = ? AND type = ? ORDER BY seq`, string(thread), chat.TypeUsage)
	if err != nil {
		return t, fmt.Errorf("sqlite: usage %s: %w", thread, err)
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return t, fmt.Errorf("sqlite: usage %s: %w", thread, err)
		}
		var u chat.Usage
		if json.Unmarshal(b, &u) != nil {
			continue
		}
		if u.InputTokens != 0 || u.OutputTokens != 0 || u.CostUSD != 0 {
			t.Turns++
		}
		t.InputTokens += u.InputTokens
		t.OutputTokens += u.OutputTokens
		t.CostUSD += u.CostUSD
		if u.ContextWindow > 0 || u.ContextTokens > 0 {
			t.ContextTokens, t.ContextWindow = u.ContextTokens, u.ContextWindow
		}
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("sqlite: usage %s: %w", thread, err)
	}
	t.CostUSD = math.Round(t.CostUSD*1e9) / 1e9
	return t, nil
}

// Tail returns the last n events of a thread in seq order; n <= 0 returns none.
func (s *Store) Tail(ctx context.Context, thread chat.ThreadID, n int) ([]chat.Event, error) {
	if n <= 0 {
		return nil, nil
	}
	evs, err := s.queryEvents(ctx, thread, min(n, 1024),
		`SELECT seq, type, ts, payload FROM events WHERE thread = ? ORDER BY seq DESC LIMIT ?`, string(thread), n)
	if err != nil {
		return nil, fmt.Errorf("sqlite: tail %s: %w", thread, err)
	}
	slices.Reverse(evs)
	return evs, nil
}

func (s *Store) queryEvents(ctx context.Context, thread chat.ThreadID, hint int, q string, args ...any) ([]chat.Event, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []chat.Event
	var typ sql.RawBytes
	for rows.Next() {
		if evs == nil {
			evs = make([]chat.Event, 0, hint)
		}
		e := chat.Event{Thread: thread}
		var ts sql.NullInt64
		var payload []byte // *[]byte takes NULL and copies out of the driver's memory
		if err := rows.Scan(&e.Seq, &typ, &ts, &payload); err != nil {
			return nil, err
		}
		e.Type, e.TS, e.Payload = eventType(typ), fromNanos(ts), payload
		evs = append(evs, e)
	}
	return evs, rows.Err()
}

// knownTypes lets a read share one string per event type instead of allocating one a row.
var knownTypes = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{
		chat.TypeUserMessage, chat.TypeDelivery, chat.TypeAgentChunk, chat.TypeThoughtChunk,
		chat.TypeToolCall, chat.TypeToolCallUpdate, chat.TypePlan, chat.TypePermissionRequest,
		chat.TypePermissionResolved, chat.TypeQuestion, chat.TypeQuestionResolved, chat.TypeMode,
		chat.TypeCommands, chat.TypeUsage, chat.TypeTurnStatus, chat.TypePromptDone, chat.TypeError,
		chat.TypeSessionInfo, chat.TypeThreadInfo,
	} {
		m[t] = t
	}
	return m
}()

func eventType(b []byte) string {
	if t, ok := knownTypes[string(b)]; ok { // no allocation: the compiler keys the lookup on the bytes
		return t
	}
	return string(b)
}

// Cards returns a thread's cards in the given state ("" for every state), oldest
// first (by CreatedAt, ties by request id).
func (s *Store) Cards(ctx context.Context, thread chat.ThreadID, state string) ([]chat.Card, error) {
	q := `SELECT request_id, kind, state, request, resolution, turn_message_id, created_at, resolved_at
		FROM cards WHERE thread = ?`
	args := []any{string(thread)}
	if state != "" {
		q += ` AND state = ?`
		args = append(args, state)
	}
	q += ` ORDER BY COALESCE(created_at, 0), request_id`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: cards %s: %w", thread, err)
	}
	defer rows.Close()
	var cs []chat.Card
	for rows.Next() {
		c := chat.Card{ThreadID: thread}
		var created, resolved sql.NullInt64
		var request, resolution []byte
		if err := rows.Scan(&c.RequestID, &c.Kind, &c.State, &request, &resolution,
			&c.TurnMessageID, &created, &resolved); err != nil {
			return nil, fmt.Errorf("sqlite: cards %s: %w", thread, err)
		}
		c.Request, c.Resolution = request, resolution
		c.CreatedAt, c.ResolvedAt = fromNanos(created), fromNanos(resolved)
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: cards %s: %w", thread, err)
	}
	return cs, nil
}

const inputCols = `message_id, thread, channel, chat, text, state, detail, accepted_at`

func scanInput(sc interface{ Scan(...any) error }) (chat.Input, error) {
	var in chat.Input
	var thread string
	var accepted sql.NullInt64
	err := sc.Scan(&in.MessageID, &thread, &in.From.Channel, &in.From.Chat, &in.Text, &in.State, &in.Detail, &accepted)
	in.ThreadID, in.AcceptedAt = chat.ThreadID(thread), fromNanos(accepted)
	return in, err
}

// Input returns the input a route sent with a message id, or an error wrapping
// chat.ErrNotFound.
func (s *Store) Input(ctx context.Context, from chat.RouteKey, messageID string) (chat.Input, error) {
	in, err := scanInput(s.r.QueryRowContext(ctx, `SELECT `+inputCols+` FROM inputs WHERE channel = ? AND chat = ? AND message_id = ?`,
		from.Channel, from.Chat, messageID))
	if errors.Is(err, sql.ErrNoRows) {
		return chat.Input{}, fmt.Errorf("sqlite: input %s from %s: %w", messageID, from, chat.ErrNotFound)
	}
	if err != nil {
		return chat.Input{}, fmt.Errorf("sqlite: input %s from %s: %w", messageID, from, err)
	}
	return in, nil
}

// PendingInputs returns every queued or delivering input, in acceptance order.
func (s *Store) PendingInputs(ctx context.Context) ([]chat.Input, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+inputCols+` FROM inputs WHERE state IN (?, ?) ORDER BY ord`,
		chat.DeliveryQueued, chat.DeliveryDelivering)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending inputs: %w", err)
	}
	defer rows.Close()
	var ins []chat.Input
	for rows.Next() {
		in, err := scanInput(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: pending inputs: %w", err)
		}
		ins = append(ins, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: pending inputs: %w", err)
	}
	return ins, nil
}
