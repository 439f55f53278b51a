package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/store"
)

// Full-text search (schema 5): search_rows says what each row is, search_text
// holds its text under the same rowid. The indexer (indexer.go) is the one
// path that writes them, from committed rows, so search never shows what the
// store does not hold.

const (
	kindTitle = "title"
	kindUser  = "user"
	kindAgent = "agent"
)

// MaxSearchQuery caps a search's text, in bytes.
const MaxSearchQuery = 256

// maxSearchTerms caps the words of one search.
const maxSearchTerms = 16

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func insertSearchRow(ctx context.Context, tx execer, thread chat.ThreadID, seq int64, kind, text string) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO search_rows (thread, seq, kind) VALUES (?, ?, ?)`, string(thread), seq, kind)
	if err != nil {
		return 0, err
	}
	row, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO search_text (rowid, text) VALUES (?, ?)`, row, text)
	return row, err
}

// deleteSearchRows deletes the rows of a thread the where clause (on
// search_rows, after "thread = ?") picks.
func deleteSearchRows(ctx context.Context, tx execer, thread chat.ThreadID, where string, args ...any) error {
	a := append([]any{string(thread)}, args...)
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_text WHERE rowid IN (SELECT row FROM search_rows WHERE thread = ?`+where+`)`, a...); err != nil {
		return fmt.Errorf("search rows: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_rows WHERE thread = ?`+where, a...); err != nil {
		return fmt.Errorf("search rows: %w", err)
	}
	return nil
}

// indexTitle replaces a thread's title row.
func indexTitle(ctx context.Context, tx execer, thread chat.ThreadID, title string) error {
	if err := deleteSearchRows(ctx, tx, thread, ` AND seq = 0 AND kind = ?`, kindTitle); err != nil {
		return err
	}
	if strings.TrimSpace(title) == "" {
		return nil
	}
	_, err := insertSearchRow(ctx, tx, thread, 0, kindTitle, title)
	return err
}

// endsAnswer says whether an event ends the answer being written: what the
// agent says after it is another answer.
func endsAnswer(typ string) bool {
	switch typ {
	case chat.TypeUserMessage, chat.TypeToolCall, chat.TypePromptDone, chat.TypePermissionRequest, chat.TypeQuestion:
		return true
	}
	return false
}

// maxCarry bounds the word held back between commits: a longer run of
// letters (base64, a hash) is indexed as it was cut.
const maxCarry = 64

// maxIndexed is how much of one message or answer is searchable: its first
// MiB (a message's whole text at the default limits.max_message_bytes). An
// answer's commits append rows, so indexing costs what the new text costs;
// the bound keeps a streamed log dump of megabytes from paying for all of it.
const maxIndexed = 1 << 20

// An answer's row begins with the last overlapWords words of the row before
// (at most maxOverlap bytes), already indexed there: a phrase of up to
// maxSearchTerms words split across two commits is whole in the second row.
const (
	overlapWords = maxSearchTerms - 1
	maxOverlap   = 4 << 10
)

// lastWords is the end of text from the start of its last n words, within
// max bytes ("" when text has none); text ends at a word boundary.
func lastWords(text string, n, max int) string {
	start, words, inWord := len(text), 0, false
	for i := len(text); i > 0; {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		if isWordRune(r) {
			inWord = true
		} else if inWord {
			inWord = false
			if words++; words == n {
				break
			}
		}
		if len(text)-(i-size) > max {
			break
		}
		i -= size
		start = i
	}
	// Begin at a word: a cut mid-word (the byte bound) drops the part.
	for start < len(text) {
		r, size := utf8.DecodeRuneInString(text[start:])
		if !isWordRune(r) {
			break
		}
		if start == 0 {
			break
		}
		if p, _ := utf8.DecodeLastRuneInString(text[:start]); !isWordRune(p) {
			break
		}
		start += size
	}
	return text[start:]
}

// leadOf is how much of a held-back pending text is the overlap (indexed
// already): all of it up to the last non-word rune; the rest is the word a
// commit ended inside, not yet indexed.
func leadOf(pending string) int {
	return strings.LastIndexFunc(pending, func(r rune) bool { return !isWordRune(r) }) + 1
}

// clipIndexed cuts text to what is left of the budget, at a rune boundary.
func clipIndexed(text string, used int64) string {
	left := maxIndexed - used
	if left <= 0 {
		return ""
	}
	if int64(len(text)) <= left {
		return text
	}
	cut := int(left)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// indexEvents adds a batch's messages to the search: a person's message is a
// row; an agent's chunks in this batch are one row of the answer they belong
// to (search_open carries the answer's seq across commits), so indexing costs
// what the new text costs, however long the answer grows. A word the batch
// ends inside is held back for the next one.
func indexEvents(ctx context.Context, tx execer, evs []chat.Event) error {
	type answer struct {
		seq     int64
		indexed int64 // bytes of it indexed by earlier commits
		lead    int   // bytes at the start of text indexed by the row before (the overlap)
		text    strings.Builder
		stored  bool // search_open holds it as loaded: an answer past its budget writes nothing
	}
	open := map[chat.ThreadID]*answer{}
	write := func(th chat.ThreadID, a *answer, goesOn bool) error {
		text, carry := a.text.String(), ""
		if goesOn {
			i := strings.LastIndexFunc(text, func(r rune) bool { return !isWordRune(r) }) + 1
			if len(text)-i <= maxCarry && i >= a.lead {
				text, carry = text[:i], text[i:]
			}
		}
		lead := min(a.lead, len(text))
		fresh := clipIndexed(text[lead:], a.indexed)
		text = text[:lead] + fresh
		if a.indexed+int64(len(fresh)) >= maxIndexed {
			carry = ""
		}
		if strings.TrimSpace(fresh) != "" {
			if _, err := insertSearchRow(ctx, tx, th, a.seq, kindAgent, text); err != nil {
				return err
			}
		}
		if goesOn && a.stored && fresh == "" && carry == "" && a.indexed >= maxIndexed {
			return nil // past its budget: nothing to index, nothing to remember anew
		}
		a.indexed += int64(len(fresh))
		var err error
		if goesOn {
			overlap := ""
			if a.indexed < maxIndexed {
				overlap = lastWords(text, overlapWords, maxOverlap)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO search_open (thread, seq, pending, indexed) VALUES (?, ?, ?, ?)
				ON CONFLICT (thread) DO UPDATE SET seq = excluded.seq, pending = excluded.pending, indexed = excluded.indexed`, string(th), a.seq, overlap+carry, a.indexed)
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM search_open WHERE thread = ?`, string(th))
		}
		return err
	}
	for _, e := range evs {
		switch {
		case e.Type == chat.TypeAgentChunk:
			a := open[e.Thread]
			if a == nil {
				a = &answer{seq: e.Seq}
				var seq, indexed int64
				var pending string
				err := tx.QueryRowContext(ctx, `SELECT seq, pending, indexed FROM search_open WHERE thread = ?`, string(e.Thread)).Scan(&seq, &pending, &indexed)
				switch {
				case err == nil:
					a.seq, a.indexed, a.stored, a.lead = seq, indexed, pending == "", leadOf(pending)
					a.text.WriteString(pending)
				case !errors.Is(err, sql.ErrNoRows):
					return fmt.Errorf("search: %w", err)
				}
				open[e.Thread] = a
			}
			if a.indexed+int64(a.text.Len()-a.lead) >= maxIndexed {
				continue // beyond the budget: not even decoded
			}
			var c chat.AgentChunk
			if json.Unmarshal(e.Payload, &c) != nil {
				continue
			}
			a.text.WriteString(c.Text)
		case endsAnswer(e.Type):
			a := open[e.Thread]
			if a == nil {
				// An answer an earlier commit began: its held-back word ends here.
				var seq, indexed int64
				var pending string
				err := tx.QueryRowContext(ctx, `SELECT seq, pending, indexed FROM search_open WHERE thread = ?`, string(e.Thread)).Scan(&seq, &pending, &indexed)
				switch {
				case err == nil:
					a = &answer{seq: seq, indexed: indexed, lead: leadOf(pending)}
					a.text.WriteString(pending)
				case !errors.Is(err, sql.ErrNoRows):
					return fmt.Errorf("search: %w", err)
				}
			}
			if a != nil {
				delete(open, e.Thread)
				if err := write(e.Thread, a, false); err != nil {
					return fmt.Errorf("search: %w", err)
				}
			}
			if e.Type != chat.TypeUserMessage {
				continue
			}
			var m chat.UserMessage
			if json.Unmarshal(e.Payload, &m) != nil || strings.TrimSpace(m.Text) == "" {
				continue
			}
			if _, err := insertSearchRow(ctx, tx, e.Thread, e.Seq, kindUser, clipIndexed(m.Text, 0)); err != nil {
				return fmt.Errorf("search: %w", err)
			}
		}
	}
	for th, a := range open {
		if err := write(th, a, true); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	return nil
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// backfillSearch builds the search rows of a store written before schema 5,
// with the code Commit uses: every title, then each thread's messages in seq
// order, a page at a time.
func backfillSearch(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO search_rows (thread, seq, kind) SELECT id, 0, ? FROM threads WHERE TRIM(title) <> ''`, kindTitle); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO search_text (rowid, text)
		SELECT r.row, t.title FROM search_rows r JOIN threads t ON t.id = r.thread WHERE r.kind = ?`, kindTitle); err != nil {
		return err
	}
	var ids []string
	rows, err := tx.QueryContext(ctx, `SELECT id FROM threads ORDER BY id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	const page = 1000
	for _, id := range ids {
		var since int64
		for {
			evs, err := func() ([]chat.Event, error) {
				rows, err := tx.QueryContext(ctx, `SELECT seq, type, payload FROM events
					WHERE thread = ? AND seq > ? AND type IN (?, ?, ?, ?, ?, ?) ORDER BY seq LIMIT ?`,
					id, since, chat.TypeAgentChunk, chat.TypeUserMessage, chat.TypeToolCall, chat.TypePromptDone,
					chat.TypePermissionRequest, chat.TypeQuestion, page)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				var evs []chat.Event
				for rows.Next() {
					e := chat.Event{Thread: chat.ThreadID(id)}
					if err := rows.Scan(&e.Seq, &e.Type, &e.Payload); err != nil {
						return nil, err
					}
					evs = append(evs, e)
				}
				return evs, rows.Err()
			}()
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				break
			}
			if err := indexEvents(ctx, tx, evs); err != nil {
				return err
			}
			since = evs[len(evs)-1].Seq
		}
	}
	return nil
}

// ftsQuery turns what a person typed into an FTS5 query that cannot be bad
// syntax: every word is a quoted string matched as a prefix ("deplo" finds
// "deploy"), words in double quotes are a phrase, and all of them must match.
// Nothing else of FTS5's grammar (NEAR, OR, columns, ^) reaches it. A search
// with no word in it is refused with chat.ErrBadInput.
func ftsQuery(q string) (string, error) {
	if len(q) > MaxSearchQuery {
		return "", fmt.Errorf("%w: a search is at most %d bytes", chat.ErrBadInput, MaxSearchQuery)
	}
	if !utf8.ValidString(q) {
		return "", fmt.Errorf("%w: a search must be UTF-8 text", chat.ErrBadInput)
	}
	// Control characters separate words: SQLite's parser ends a string at NUL.
	q = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, q)
	var terms []string
	add := func(t string, phrase bool) {
		if !strings.ContainsFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			return // no word in it: FTS5's tokenizer would find nothing to match
		}
		s := `"` + t + `"`
		if !phrase {
			s += "*"
		}
		terms = append(terms, s)
	}
	for i, part := range strings.Split(q, `"`) {
		if i%2 == 1 { // inside quotes (an unclosed quote runs to the end)
			add(strings.Join(strings.Fields(part), " "), true)
			continue
		}
		for _, w := range strings.Fields(part) {
			add(w, false)
		}
	}
	if len(terms) == 0 {
		return "", fmt.Errorf("%w: type a word to search for", chat.ErrBadInput)
	}
	if len(terms) > maxSearchTerms {
		return "", fmt.Errorf("%w: a search is at most %d words", chat.ErrBadInput, maxSearchTerms)
	}
	return strings.Join(terms, " "), nil
}

// Search finds threads by title and message text (store.Store), best match
// first.
func (s *Store) Search(ctx context.Context, q string, limit int) ([]chat.SearchHit, error) {
	fq, err := ftsQuery(q)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > store.MaxSearchResults {
		limit = store.MaxSearchResults
	}
	// What was committed before the search is found by it.
	if s.idx != nil {
		if err := s.idx.caughtUp(ctx); err != nil {
			return nil, err
		}
	}
	// An answer is several rows (one per commit): its best row stands for it.
	// A row of no thread here is a failed message for another machine's
	// thread (PutFailedRemote): its title is that machine's.
	rows, err := s.r.QueryContext(ctx, `SELECT r.thread, r.seq, r.kind, snippet(search_text, 0, '', '', '…', 16),
		COALESCE(t.title, ''), COALESCE(t.archived, 0)
		FROM search_text JOIN search_rows r ON r.row = search_text.rowid LEFT JOIN threads t ON t.id = r.thread
		WHERE search_text MATCH ? ORDER BY rank LIMIT ?`, fq, limit*4)
	if err != nil {
		return nil, searchErr(err)
	}
	defer rows.Close()
	hits := []chat.SearchHit{}
	type place struct {
		thread string
		seq    int64
		kind   string
	}
	seen := map[place]bool{}
	for rows.Next() && len(hits) < limit {
		var h chat.SearchHit
		var thread string
		var archived int64
		if err := rows.Scan(&thread, &h.Seq, &h.Kind, &h.Snippet, &h.Title, &archived); err != nil {
			return nil, searchErr(err)
		}
		h.Thread, h.Archived = chat.ThreadID(thread), archived != 0
		if p := (place{thread, h.Seq, h.Kind}); !seen[p] {
			seen[p] = true
			hits = append(hits, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, searchErr(err)
	}
	return hits, nil
}

// searchErr says a query FTS5 refused is the person's to fix, not a fault.
func searchErr(err error) error {
	if strings.Contains(err.Error(), "fts5:") {
		return fmt.Errorf("%w: the search could not be read: %v", chat.ErrBadInput, err)
	}
	return fmt.Errorf("sqlite: search: %w", err)
}

// DeleteThread deletes a thread and everything of it the store holds but the
// pushes a closing push still needs (store.Store), in one transaction.
func (s *Store) DeleteThread(ctx context.Context, id chat.ThreadID) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %s: begin: %w", id, err)
	}
	defer tx.Rollback()
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, string(id)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: delete thread %s: %w", id, chat.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
	}
	if err := deleteSearchRows(ctx, tx, id, ""); err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
	}
	for _, q := range []string{
		`DELETE FROM search_open WHERE thread = ?`,
		`DELETE FROM search_done WHERE thread = ?`,
		// A card's push that went out still needs its closing push (the
		// push service derives it from these rows after the delete, with the
		// cards gone): those rows, and closing pushes not yet sent, stay.
		`DELETE FROM push_outbox WHERE thread = ?1 AND NOT (
			(kind = 'close' AND state = 'pending') OR
			(kind = 'open' AND NOT EXISTS (SELECT 1 FROM push_outbox c WHERE c.endpoint = push_outbox.endpoint
				AND c.thread = push_outbox.thread AND c.request_id = push_outbox.request_id AND c.kind = 'close')))`,
		`DELETE FROM routes WHERE thread = ?`,
		`DELETE FROM thread_asks WHERE thread = ?`,
		`DELETE FROM thread_attach WHERE thread = ?`,
		`DELETE FROM inputs WHERE thread = ?`,
		`DELETE FROM cards WHERE thread = ?`,
		`DELETE FROM events WHERE thread = ?`,
		`DELETE FROM threads WHERE id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, string(id)); err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
	}
	return nil
}
