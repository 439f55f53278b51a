-- parley schema 16: the audit trail (internal/audit), append-only, each
-- entry's hash covering the hash of the entry before it. Pruning deletes the
-- oldest rows and appends a checkpoint entry naming the last one removed.
CREATE TABLE audit (
    seq       INTEGER PRIMARY KEY,
    ts        BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    actor     TEXT NOT NULL,
    thread    TEXT NOT NULL DEFAULT '',
    subject   TEXT NOT NULL DEFAULT '',
    detail    TEXT NOT NULL DEFAULT '',
    prev_hash BLOB,
    hash      BLOB NOT NULL
);
CREATE INDEX audit_thread ON audit (thread, seq) WHERE thread != '';
CREATE INDEX audit_actor ON audit (actor, seq);
CREATE INDEX audit_ts ON audit (ts);
