-- parley schema 1: threads, routes, event logs, cards, inputs.
-- Portable SQL only (a PostgreSQL store shares the interface). Times are BIGINT
-- Unix nanoseconds in UTC, NULL for the zero time. JSON payloads are BLOBs.

CREATE TABLE threads (
    id              TEXT    NOT NULL PRIMARY KEY,
    agent           TEXT    NOT NULL,
    cwd             TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    title           TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    mode            TEXT    NOT NULL,
    created_at      BIGINT,
    updated_at      BIGINT,
    last_seq        BIGINT  NOT NULL,
    turn_message_id TEXT    NOT NULL
);

CREATE INDEX threads_by_activity ON threads (updated_at);

CREATE TABLE routes (
    channel    TEXT   NOT NULL,
    chat       TEXT   NOT NULL,
    thread     TEXT   NOT NULL REFERENCES threads (id),
    updated_at BIGINT,
    PRIMARY KEY (channel, chat)
);

-- The primary key is what makes a reused seq fail the whole Commit.
CREATE TABLE events (
    thread  TEXT   NOT NULL REFERENCES threads (id),
    seq     BIGINT NOT NULL,
    type    TEXT   NOT NULL,
    ts      BIGINT,
    payload BLOB,
    PRIMARY KEY (thread, seq)
);

CREATE TABLE cards (
    thread          TEXT NOT NULL REFERENCES threads (id),
    request_id      TEXT NOT NULL,
    kind            TEXT NOT NULL,
    state           TEXT NOT NULL,
    request         BLOB,
    resolution      BLOB,
    turn_message_id TEXT NOT NULL,
    created_at      BIGINT,
    resolved_at     BIGINT,
    PRIMARY KEY (thread, request_id)
);

CREATE INDEX cards_by_state ON cards (thread, state);

-- ord is the acceptance order: assigned once on insert, never changed by an update.
CREATE TABLE inputs (
    message_id  TEXT   NOT NULL PRIMARY KEY,
    ord         BIGINT NOT NULL UNIQUE,
    thread      TEXT   NOT NULL REFERENCES threads (id),
    channel     TEXT   NOT NULL,
    chat        TEXT   NOT NULL,
    text        TEXT   NOT NULL,
    state       TEXT   NOT NULL,
    detail      TEXT   NOT NULL,
    accepted_at BIGINT
);

CREATE INDEX inputs_by_state ON inputs (state, ord);
