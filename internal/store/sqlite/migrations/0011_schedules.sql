-- parley schema 11: work that starts on its own (internal/schedule,
-- internal/trigger). A schedule sends its text to its agent at times of its
-- own; a trigger does when a signed webhook arrives. Each run is a message
-- of the route ('schedule' or 'trigger', id) with an id of its own, so the
-- inputs table is what makes a run happen once.
CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,
    name        TEXT    NOT NULL DEFAULT '',
    agent       TEXT    NOT NULL,
    cwd         TEXT    NOT NULL,
    thread      TEXT    NOT NULL DEFAULT '', -- every run to this thread
    new_each    INTEGER NOT NULL DEFAULT 0,  -- every run in a new thread
    kind        TEXT    NOT NULL,            -- cron, every, at
    expr        TEXT    NOT NULL,
    tz          TEXT    NOT NULL,
    missed      TEXT    NOT NULL,            -- run-once, skip
    text        TEXT    NOT NULL,
    paused      INTEGER NOT NULL DEFAULT 0,
    next_run    BIGINT,                      -- NULL: no run to come
    last_run    BIGINT,
    last_thread TEXT    NOT NULL DEFAULT '',
    last_error  TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT
);

-- The secret signs the trigger's webhooks (HMAC-SHA256): kept as it is,
-- since checking a signature needs it; the database file is 0600.
CREATE TABLE triggers (
    id          TEXT PRIMARY KEY,
    name        TEXT    NOT NULL DEFAULT '',
    agent       TEXT    NOT NULL,
    cwd         TEXT    NOT NULL,
    thread      TEXT    NOT NULL DEFAULT '',
    new_each    INTEGER NOT NULL DEFAULT 0,
    template    TEXT    NOT NULL,
    secret      TEXT    NOT NULL,
    last_run    BIGINT,
    last_thread TEXT    NOT NULL DEFAULT '',
    last_error  TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT
);
