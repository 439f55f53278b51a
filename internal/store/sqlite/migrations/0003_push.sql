-- parley schema 3: Web Push. A subscription belongs to a device (auth's
-- sessions file); the outbox holds each push once, keyed by what it is about,
-- so a reconnect, replay or restart never makes it twice and a crash before
-- sending leaves it pending.
CREATE TABLE push_subscriptions (
    endpoint   TEXT   NOT NULL PRIMARY KEY,
    device     TEXT   NOT NULL,
    p256dh     TEXT   NOT NULL,
    auth       TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX push_subscriptions_by_device ON push_subscriptions (device);

-- kind is "open" (a card opened) or "close" (it was answered or went);
-- state is pending, sent, skipped (the thread was on that device's screen, or
-- the card closed before its push left), dropped (the endpoint is gone) or
-- failed (retries spent).
CREATE TABLE push_outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint   TEXT    NOT NULL,
    thread     TEXT    NOT NULL,
    request_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    payload    BLOB    NOT NULL,
    state      TEXT    NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    BIGINT  NOT NULL,
    created_at BIGINT  NOT NULL,
    UNIQUE (endpoint, thread, request_id, kind)
);

CREATE INDEX push_outbox_due ON push_outbox (state, next_at);
CREATE INDEX push_outbox_by_thread ON push_outbox (thread, kind);
