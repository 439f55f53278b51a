-- parley schema 7: the search index is written after the commit, by the
-- store's indexer, instead of in the commit's transaction. search_done is its
-- high-water mark per thread: the events up to through are indexed, and title
-- is the title the index holds. On open the indexer indexes whatever a thread
-- has beyond its mark (a crash between a commit and its indexing loses
-- nothing from search). Until schema 7 every commit indexed its own events, so
-- each thread starts indexed through its last event.
CREATE TABLE search_done (
    thread  TEXT   NOT NULL PRIMARY KEY,
    through BIGINT NOT NULL,
    title   TEXT   NOT NULL
);

INSERT INTO search_done (thread, through, title)
    SELECT t.id, COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.thread = t.id), 0), t.title FROM threads t;
