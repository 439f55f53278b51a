-- parley schema 5: threads you can manage. A thread can be archived (hidden
-- from the default list, still readable); titles and message text are
-- searchable with FTS5.
ALTER TABLE threads ADD COLUMN archived BIGINT NOT NULL DEFAULT 0;

-- One row per searchable text: a thread's title (kind 'title', seq 0), a
-- person's message (kind 'user', its seq) and an answer (kind 'agent': a run
-- of agent chunks, at the seq of its first chunk; an answer streamed over
-- several commits is several rows with that seq, one per commit, so no
-- commit rewrites text already indexed). search_text holds the text
-- under the same rowid, so a thread's rows are found by the index here
-- (a delete, a prune, a new title), never by scanning the full-text table.
-- The store's Commit keeps both in step (search.go); a store written before
-- this schema gets its rows from the migration's Go step, with the same code.
CREATE TABLE search_rows (
    row    INTEGER PRIMARY KEY,
    thread TEXT   NOT NULL,
    seq    BIGINT NOT NULL,
    kind   TEXT   NOT NULL
);

CREATE INDEX search_rows_by_thread ON search_rows (thread, seq);

CREATE VIRTUAL TABLE search_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');

-- The answer a thread is in the middle of: the seq its rows carry, the word
-- its last commit ended inside (held back, so no word is cut in two) and how
-- many bytes of it are indexed (an answer's first 64 KiB are).
CREATE TABLE search_open (
    thread  TEXT   NOT NULL PRIMARY KEY,
    seq     BIGINT NOT NULL,
    pending TEXT   NOT NULL,
    indexed BIGINT NOT NULL
);
