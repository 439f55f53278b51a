-- parley schema 4: a device's optional pushes (a finished turn, an error).
-- Each column is when the device turned that push on (Unix nanoseconds), 0
-- when off: only what happens after it was turned on is pushed.
CREATE TABLE push_prefs (
    device       TEXT   NOT NULL PRIMARY KEY,
    turns_since  BIGINT NOT NULL DEFAULT 0,
    errors_since BIGINT NOT NULL DEFAULT 0
);
